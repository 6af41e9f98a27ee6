/**
 * The one wrapper around every number adapter (STYLE.md §4): a timeout per carrier call,
 * retries with backoff where they are safe, and `svc_telephony_api_errors_total` counted
 * for every carrier call that failed.
 *
 * Retry rule. Search, release, pricing and the owned-number lookup are idempotent: they are
 * retried on any retryable failure (network, timeout, 408, 429, 5xx). Buying is not: a
 * retried purchase whose first attempt went through would buy twice or fail confusingly. It
 * is retried only when the failure proves the carrier did nothing: the connection was
 * refused (the request never left), or the carrier answered 429 (rate limited) or 503
 * (unavailable), which carriers send before acting. A timeout, a reset connection, 500, 502
 * or 504 may have bought the number, so they are never retried.
 */
import { networkErrorCode } from './carrier-http.js';
import { TelephonyProviderError } from './types.js';
import type { TelephonyMethod, TelephonyProvider, TelephonyProviderName } from './types.js';

/** The counter failed calls go into: `svc_telephony_api_errors_total{provider,method}` (ControlPlaneMetrics.telephonyApiErrors). */
export interface TelephonyErrorCounter {
  inc(labels: { provider: TelephonyProviderName; method: TelephonyMethod }): void;
}

/** Timeout and retry settings. */
export interface TelephonyRetryOptions {
  /** Per attempt (ms); default {@link DEFAULT_TELEPHONY_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Attempts in all, first included; default 3. */
  maxAttempts?: number;
  /** First backoff (ms), doubled per retry with jitter; default 250. */
  baseDelayMs?: number;
  /** Every failed attempt is counted here. */
  errors: TelephonyErrorCounter;
}

/**
 * Per-attempt timeout (ms). Number searches take one to three seconds on the carriers'
 * own consoles; eight leaves room without keeping an API caller waiting much longer.
 */
export const DEFAULT_TELEPHONY_TIMEOUT_MS = 8_000;

/** Whether a failed attempt of `method` may be sent again (the rule above). */
export function mayRetry(method: TelephonyMethod, err: TelephonyProviderError): boolean {
  if (method !== 'provisionNumber') return err.retryable;
  if (err.status === 429 || err.status === 503) return true;
  return err.code === 'network' && networkErrorCode(err.cause) === 'ECONNREFUSED';
}

/** `provider` with timeouts, safe retries and error counting. */
export function withTelephonyRetry(provider: TelephonyProvider, opts: TelephonyRetryOptions): TelephonyProvider {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TELEPHONY_TIMEOUT_MS;
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
  const baseDelayMs = opts.baseDelayMs ?? 250;

  async function run<T>(method: TelephonyMethod, caller: AbortSignal | undefined, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
    for (let i = 1; ; i++) {
      const timer = new AbortController();
      const timeout = setTimeout(() => timer.abort(), timeoutMs);
      const signal = caller ? AbortSignal.any([caller, timer.signal]) : timer.signal;
      try {
        return await attempt(signal);
      } catch (raw) {
        // The caller gave up: not the carrier's failure, nothing to count or retry.
        if (caller?.aborted) throw raw;
        const err = timer.signal.aborted
          ? new TelephonyProviderError({ provider: provider.name, method, code: 'timeout', message: `${provider.name} ${method}: timed out after ${timeoutMs} ms`, cause: raw })
          : raw instanceof TelephonyProviderError
            ? raw
            : new TelephonyProviderError({ provider: provider.name, method, code: 'server', message: `${provider.name} ${method}: ${raw instanceof Error ? raw.message : 'failed'}`, cause: raw });
        opts.errors.inc({ provider: provider.name, method });
        if (i >= maxAttempts || !mayRetry(method, err)) throw err;
        const delay = baseDelayMs * 2 ** (i - 1);
        await sleep(delay / 2 + Math.random() * (delay / 2), caller);
      } finally {
        clearTimeout(timeout);
      }
    }
  }

  return {
    name: provider.name,
    searchNumbers: (query, signal) => run('searchNumbers', signal, (s) => provider.searchNumbers(query, s)),
    provisionNumber: (request, signal) => run('provisionNumber', signal, (s) => provider.provisionNumber(request, s)),
    releaseNumber: (number, signal) => run('releaseNumber', signal, (s) => provider.releaseNumber(number, s)),
    getPricing: (country, signal) => run('getPricing', signal, (s) => provider.getPricing(country, s)),
    findOwnedNumber: (phoneNumber, signal) => run('findOwnedNumber', signal, (s) => provider.findOwnedNumber(phoneNumber, s)),
  };
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason as Error);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
