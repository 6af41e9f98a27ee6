import { isIP } from 'node:net';
import { OutboundBlockedError, validationError } from '@vap/shared';
import type { OutboundGuard } from '@vap/shared';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

function isLoopbackHost(hostname: string): boolean {
  if (LOOPBACK_NAMES.has(hostname) || hostname.endsWith('.localhost')) return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/** How long create/update waits for DNS before accepting the URL unchecked (it is checked again at every delivery). */
export const URL_CHECK_DNS_TIMEOUT_MS = 3000;

/**
 * Checks a webhook URL as create and update accept it (docs/api.md "Webhooks"): absolute,
 * https (http only to a loopback host when the platform runs in Development), no
 * credentials or fragment, and not resolving to an address the outbound guard forbids.
 * A host that does not resolve (yet) is accepted: the guard runs again before every
 * delivery, because DNS can change. Throws a 422 naming `url`.
 */
export async function checkWebhookUrl(raw: string, opts: { appEnv: 'development' | 'production'; guard: OutboundGuard }): Promise<string> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw validationError('url', 'must be an absolute URL such as https://example.com/hooks');
  }
  const loopback = isLoopbackHost(url.hostname);
  if (url.protocol === 'http:') {
    if (opts.appEnv !== 'development' || !loopback) throw validationError('url', 'must use https (http is accepted only for a loopback host while APP_ENV=development)');
  } else if (url.protocol !== 'https:') {
    throw validationError('url', 'must use https');
  }
  if (url.username || url.password) throw validationError('url', 'must not contain credentials; authenticate deliveries with the signature instead');
  if (url.hash) throw validationError('url', 'must not contain a fragment (#…)');

  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), URL_CHECK_DNS_TIMEOUT_MS);
  });
  try {
    await Promise.race([opts.guard.check(url), timedOut]);
  } catch (err) {
    if (!(err instanceof OutboundBlockedError)) throw err;
    // An unresolvable name is not refused here: it may be created later; deliveries check again.
    if (err.reason !== 'dns') throw validationError('url', `is not allowed: ${err.message}. An operator can permit it with OUTBOUND_ALLOWLIST`);
  } finally {
    clearTimeout(timer);
  }
  return url.toString();
}
