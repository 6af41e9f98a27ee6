import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';

/**
 * Vonage signed webhooks (reference/telephony-vonage.md §6): `Authorization: Bearer <JWT>`,
 * HS256 keyed with the account's signature secret, whose `payload_hash` claim is the hex
 * SHA-256 of the raw request body. Plain node:crypto rather than a JWT library, so the
 * simulators in other packages can sign without one and the algorithm is pinned by
 * construction (no `alg: none`, no RS/HS confusion).
 */

/** The claims Vonage puts in a signed-webhook JWT. */
export interface VonageWebhookClaims {
  /** Issued-at, Unix seconds. */
  iat: number;
  /** Unique id (replay dedupe). */
  jti: string;
  iss: string;
  /** Hex SHA-256 of the raw body. */
  payload_hash?: string;
  api_key?: string;
  application_id?: string;
  [claim: string]: unknown;
}

/** Why a token was refused. */
export type VonageSignatureFailure = 'missing-token' | 'malformed' | 'bad-algorithm' | 'bad-signature' | 'stale' | 'payload-hash-mismatch';

/** The outcome of {@link verifyVonageWebhook}. */
export type VonageSignatureCheck = { ok: true; claims: VonageWebhookClaims } | { ok: false; reason: VonageSignatureFailure };

/** Default tolerance on `iat`, seconds, each way (the reference suggests ~5 minutes). */
export const VONAGE_SIGNATURE_MAX_AGE_SEC = 300;

const HEADER_B64 = base64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));

function base64url(value: string | Buffer): string {
  return Buffer.from(value).toString('base64url');
}

/** Hex SHA-256 of a raw body: the `payload_hash` claim. */
export function vonagePayloadHash(rawBody: string | Uint8Array): string {
  return createHash('sha256').update(rawBody).digest('hex');
}

function hs256(secret: string, signingInput: string): Buffer {
  return createHmac('sha256', secret).update(signingInput, 'utf8').digest();
}

/**
 * A signed-webhook JWT as Vonage would send it, for simulators and tests. `rawBody`
 * (omit for a GET) sets `payload_hash`; `iat` defaults to now, `jti` to a random UUID.
 */
export function signVonageWebhook(opts: {
  secret: string;
  rawBody?: string | Uint8Array;
  iat?: number;
  jti?: string;
  apiKey?: string;
  applicationId?: string;
  /** Extra or overriding claims (tests forge bad tokens with these). */
  claims?: Record<string, unknown>;
}): string {
  const claims: Record<string, unknown> = {
    iat: opts.iat ?? Math.floor(Date.now() / 1000),
    jti: opts.jti ?? randomUUID(),
    iss: 'Vonage',
    ...(opts.rawBody !== undefined ? { payload_hash: vonagePayloadHash(opts.rawBody) } : {}),
    ...(opts.apiKey ? { api_key: opts.apiKey } : {}),
    ...(opts.applicationId ? { application_id: opts.applicationId } : {}),
    ...opts.claims,
  };
  const signingInput = `${HEADER_B64}.${base64url(JSON.stringify(claims))}`;
  return `${signingInput}.${hs256(opts.secret, signingInput).toString('base64url')}`;
}

function parseJson(b64: string): unknown {
  try {
    return JSON.parse(Buffer.from(b64, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/** `Bearer <token>` → token; anything else → undefined. */
export function vonageBearerToken(authorization: string | undefined): string | undefined {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
  return m ? m[1] : undefined;
}

/**
 * Checks a Vonage signed-webhook JWT: HS256 only, signature (constant-time), `iat` within
 * `maxAgeSec` of now either way, and `payload_hash` equal to the SHA-256 of `rawBody`.
 * A request without a body (GET answer webhook) passes `rawBody: ''`: whether Vonage
 * then sends the hash of the empty string or no claim is unconfirmed (§6), so with
 * `allowMissingPayloadHash` an absent claim is accepted; a present one must still match.
 *
 * @param opts.nowSec current Unix time in seconds (default: the clock); `maxAgeSec: Infinity` disables the age check (test vectors)
 */
export function verifyVonageWebhook(opts: {
  secret: string;
  token: string | undefined;
  rawBody: string | Uint8Array;
  nowSec?: number;
  maxAgeSec?: number;
  allowMissingPayloadHash?: boolean;
}): VonageSignatureCheck {
  const { token, secret } = opts;
  if (!token) return { ok: false, reason: 'missing-token' };
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'malformed' };
  const [headerB64, claimsB64, signatureB64] = parts as [string, string, string];
  const header = parseJson(headerB64) as { alg?: unknown } | undefined;
  const claims = parseJson(claimsB64) as VonageWebhookClaims | undefined;
  if (!header || typeof header !== 'object' || !claims || typeof claims !== 'object' || Array.isArray(claims)) return { ok: false, reason: 'malformed' };
  if (header.alg !== 'HS256') return { ok: false, reason: 'bad-algorithm' };
  const expected = hs256(secret, `${headerB64}.${claimsB64}`);
  const given = Buffer.from(signatureB64, 'base64url');
  // An HS256 MAC is always 32 bytes: the length check leaks nothing.
  if (!secret || given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad-signature' };
  const maxAgeSec = opts.maxAgeSec ?? VONAGE_SIGNATURE_MAX_AGE_SEC;
  const nowSec = opts.nowSec ?? Date.now() / 1000;
  if (typeof claims.iat !== 'number' || !Number.isFinite(claims.iat)) return { ok: false, reason: 'malformed' };
  if (Math.abs(nowSec - claims.iat) > maxAgeSec) return { ok: false, reason: 'stale' };
  const hash = claims.payload_hash;
  if (hash === undefined && opts.allowMissingPayloadHash) return { ok: true, claims };
  if (typeof hash !== 'string') return { ok: false, reason: 'payload-hash-mismatch' };
  const actual = Buffer.from(vonagePayloadHash(opts.rawBody), 'utf8');
  const claimed = Buffer.from(hash.toLowerCase(), 'utf8');
  if (actual.length !== claimed.length || !timingSafeEqual(actual, claimed)) return { ok: false, reason: 'payload-hash-mismatch' };
  return { ok: true, claims };
}
