/**
 * Where the sandbox call finds a running platform, from the same configuration the
 * launcher reads (`loadConfig`, `loadGatewayConfig`): the control plane at PUBLIC_URL,
 * the media gateway's sandbox endpoints, the carriers' signing secrets and the admin API. Tokens kept
 * in DATA_DIR are only read here, never created: a missing file means the platform was
 * started with another DATA_DIR, and a fresh token would only fail the signature check.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import path from 'node:path';
import { TELNYX_SANDBOX_KEY_FILE, TWILIO_SANDBOX_TOKEN_FILE, VONAGE_SANDBOX_SECRET_FILE, telnyxSandboxSigningKey } from '@vap/control-plane';
import type { ControlPlaneConfig } from '@vap/control-plane';
import type { GatewayConfig } from '@vap/media-gateway';
import type { ProviderEndpoints } from '@vap/voice-pipeline';
import { ADMIN_TOKEN_FILE } from '../../control-plane/src/admin/admin-token.js';

/** A failure the user can act on: printed as is, without a stack trace. */
export class SandboxCallError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SandboxCallError';
  }
}

/** How to start the platform, for error messages. */
export const START_HINT = 'Start it in another terminal with `npx --yes pnpm@10.34.9 start`, using the same environment (PORT, PUBLIC_URL, DATA_DIR, GATEWAY_PORT, …).';

/** A JSON answer, or `unreachable` when nothing answered (connection refused, timeout). */
export type HttpResult = { ok: true; status: number; body: unknown } | { ok: false; error: string };

/** GET/POST JSON with a timeout; never throws for network failures. */
export async function http(method: 'GET' | 'POST', url: string, opts: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<HttpResult> {
  try {
    const res = await fetch(url, {
      method,
      headers: { ...(opts.body === undefined ? {} : { 'content-type': 'application/json' }), ...opts.headers },
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      signal: AbortSignal.timeout(opts.timeoutMs ?? 5000),
    });
    const text = await res.text();
    let body: unknown = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: keep the text
    }
    return { ok: true, status: res.status, body };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    return { ok: false, error: cause?.code ?? (err as Error).name ?? String(err) };
  }
}

/** A listening address as a client on this machine reaches it (a wildcard bind is loopback here). */
function localHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

/** The Twilio Auth Token the webhook and stream upgrade are signed with, and where it came from. */
export interface TwilioSigning {
  token: string;
  source: string;
}

/** The platform's addresses and credentials as this machine sees them. */
export interface PlatformTargets {
  /** PUBLIC_URL: the voice webhook's signature covers this exact base. */
  controlPlaneUrl: string;
  /** Bases to try for the gateway's `/sandbox/*` endpoints: its listening address, then its public URL. */
  gatewayUrls: string[];
  /** Admin API base and token, or why it cannot be used. */
  admin: { url: string; token: string } | { unavailable: string };
}

export function platformTargets(config: ControlPlaneConfig, gatewayConfig: GatewayConfig): PlatformTargets {
  const publicGateway = gatewayConfig.publicUrl.replace(/^ws(s?):\/\//, 'http$1://');
  const gatewayUrls = [...new Set([`http://${localHost(gatewayConfig.host)}:${gatewayConfig.port}`, publicGateway])];
  let admin: PlatformTargets['admin'];
  const adminToken = config.admin.token ?? readTokenFile(path.resolve(config.dataDir, ADMIN_TOKEN_FILE));
  if (config.admin.port === 0) admin = { unavailable: 'ADMIN_PORT is 0 (a random port this command cannot know)' };
  else if (!adminToken) admin = { unavailable: `no ADMIN_TOKEN and no ${path.resolve(config.dataDir, ADMIN_TOKEN_FILE)}` };
  else admin = { url: `http://${localHost(config.admin.host)}:${config.admin.port}`, token: adminToken };
  return { controlPlaneUrl: config.publicUrl, gatewayUrls, admin };
}

/**
 * TWILIO_AUTH_TOKEN, or in sandbox mode the token the platform generated into
 * DATA_DIR/twilio-sandbox-token (see `loadTwilioAuthToken`).
 */
export function twilioSigning(config: ControlPlaneConfig): TwilioSigning {
  if (config.twilio.authToken) return { token: config.twilio.authToken, source: 'TWILIO_AUTH_TOKEN' };
  const file = path.resolve(config.dataDir, TWILIO_SANDBOX_TOKEN_FILE);
  const token = readTokenFile(file);
  if (!token) {
    throw new SandboxCallError(
      `No Twilio sandbox token in ${file}. The platform writes it there on start when TWILIO_AUTH_TOKEN is unset, so it was started ` +
        'with another DATA_DIR (or with TWILIO_AUTH_TOKEN). Run this command with the same DATA_DIR and TWILIO_AUTH_TOKEN as the platform.',
    );
  }
  return { token, source: `the sandbox token in ${file}` };
}

/** How a Telnyx or Vonage webhook is signed so the platform accepts it, and where the key came from. */
export type CarrierSigning = { carrier: 'telnyx'; key: KeyObject; source: string } | { carrier: 'vonage'; secret: string; source: string };

/** The platform wrote no sandbox secret there: it runs with another DATA_DIR, or with the variable set. */
function noSandboxFile(what: string, file: string, variable: string): SandboxCallError {
  return new SandboxCallError(
    `No ${what} in ${file}. The platform writes it there on start in development when ${variable} is unset, so it was started ` +
      `with another DATA_DIR (or with ${variable}, or APP_ENV=production). Run this command with the same DATA_DIR and ${variable} as the platform.`,
  );
}

/**
 * The Ed25519 key the platform's Telnyx sandbox verifies with (its seed in
 * DATA_DIR/telnyx-sandbox-ed25519-seed). With TELNYX_PUBLIC_KEY set the platform only
 * accepts Telnyx's own signatures, which nothing here can make.
 */
export function telnyxSigning(config: ControlPlaneConfig): CarrierSigning {
  if (config.telnyx.publicKey) {
    throw new SandboxCallError('The platform checks Telnyx webhooks with TELNYX_PUBLIC_KEY, whose private half only Telnyx holds. Unset it (in development) so the platform and this command use the sandbox key in DATA_DIR.');
  }
  const file = path.resolve(config.dataDir, TELNYX_SANDBOX_KEY_FILE);
  // Only read: telnyxSandboxSigningKey would create a fresh key the platform does not know.
  if (!existsSync(file)) throw noSandboxFile('Telnyx sandbox signing key', file, 'TELNYX_PUBLIC_KEY');
  return { carrier: 'telnyx', key: telnyxSandboxSigningKey(config.dataDir).key, source: `the sandbox key in ${file}` };
}

/** VONAGE_SIGNATURE_SECRET, or in sandbox mode the secret the platform generated into DATA_DIR/vonage-sandbox-signature-secret. */
export function vonageSigning(config: ControlPlaneConfig): CarrierSigning {
  if (config.vonage.signatureSecret) return { carrier: 'vonage', secret: config.vonage.signatureSecret, source: 'VONAGE_SIGNATURE_SECRET' };
  const file = path.resolve(config.dataDir, VONAGE_SANDBOX_SECRET_FILE);
  const secret = readTokenFile(file);
  if (!secret) throw noSandboxFile('Vonage sandbox signature secret', file, 'VONAGE_SIGNATURE_SECRET');
  return { carrier: 'vonage', secret, source: `the sandbox secret in ${file}` };
}

function readTokenFile(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new SandboxCallError(`Cannot read ${file}: ${(err as Error).message}`);
  }
}

/** Fails with a clear message unless the control plane answers its health check. */
export async function checkControlPlane(targets: PlatformTargets): Promise<void> {
  const res = await http('GET', `${targets.controlPlaneUrl}/healthz`);
  if (!res.ok) throw new SandboxCallError(`The platform is not running: nothing answers at ${targets.controlPlaneUrl} (PUBLIC_URL; ${res.error}). ${START_HINT}`);
  if (res.status !== 200) throw new SandboxCallError(`${targets.controlPlaneUrl}/healthz answered HTTP ${res.status}: is this the platform's PUBLIC_URL? ${START_HINT}`);
}

/** The gateway base that answered and the provider endpoints it uses (real API or simulator). */
export async function findGateway(targets: PlatformTargets): Promise<{ url: string; providers: ProviderEndpoints }> {
  const tried: string[] = [];
  for (const url of targets.gatewayUrls) {
    const res = await http('GET', `${url}/sandbox/providers`);
    if (res.ok && res.status === 200 && isEndpoints(res.body)) return { url, providers: res.body };
    tried.push(`${url} (${res.ok ? `HTTP ${res.status}` : res.error})`);
  }
  throw new SandboxCallError(`The media gateway does not answer: tried ${tried.join(', ')} (GATEWAY_HOST/GATEWAY_PORT, MEDIA_GATEWAY_PUBLIC_URL). ${START_HINT}`);
}

function isEndpoints(body: unknown): body is ProviderEndpoints {
  const b = body as Record<string, { baseUrl?: unknown; simulated?: unknown } | undefined> | null;
  return !!b && ['deepgram', 'openai', 'elevenlabs'].every((k) => typeof b[k]?.baseUrl === 'string' && typeof b[k]?.simulated === 'boolean');
}

/** `deepgram: simulated (http://127.0.0.1:41234)`, one per provider, keys left out. */
export function describeProviders(providers: ProviderEndpoints): string[] {
  return Object.entries(providers).map(([name, ep]) => `${name}: ${ep.simulated ? 'simulated' : 'live'} (${ep.baseUrl})`);
}
