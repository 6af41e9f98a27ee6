import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/**
 * Telnyx webhook signatures (reference/telephony-telnyx.md §5): Ed25519 over the UTF-8
 * bytes of `timestamp + "|" + raw body`, sent base64 in `telnyx-signature-ed25519` with the
 * Unix-seconds `telnyx-timestamp`. Telnyx signs with its private key; we verify with the
 * account's public key (base64 of the raw 32 bytes, as the portal shows it). The signing
 * half exists for the simulators and tests, which play Telnyx with a key pair of their own.
 */

/** The headers Telnyx signs webhooks with. */
export const TELNYX_SIGNATURE_HEADER = 'telnyx-signature-ed25519';
export const TELNYX_TIMESTAMP_HEADER = 'telnyx-timestamp';

/** How far `telnyx-timestamp` may be from now, seconds (the official SDK's tolerance). */
export const TELNYX_TIMESTAMP_TOLERANCE_SEC = 300;

// DER prefix of a PKCS#8 Ed25519 private key; the 32-byte seed follows (RFC 8410).
const PKCS8_ED25519_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The bytes that are signed: `timestamp|rawBody`, exactly as received. */
export function telnyxSignedMessage(timestamp: string, rawBody: string | Uint8Array): Buffer {
  const body = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  return Buffer.concat([Buffer.from(`${timestamp}|`, 'utf8'), body]);
}

/** An Ed25519 private key from its 32-byte seed (hex or bytes). */
export function telnyxPrivateKeyFromSeed(seed: string | Uint8Array): KeyObject {
  const bytes = typeof seed === 'string' ? Buffer.from(seed, 'hex') : Buffer.from(seed);
  if (bytes.length !== 32) throw new Error('an Ed25519 seed is 32 bytes');
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, bytes]), format: 'der', type: 'pkcs8' });
}

/** The public key as Telnyx's portal shows it: base64 of the raw 32 bytes. */
export function telnyxPublicKeyBase64(privateKey: KeyObject): string {
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' }) as { x: string };
  return Buffer.from(jwk.x, 'base64url').toString('base64');
}

/** Public key (base64 raw) → key object, or undefined when it is not 32 bytes of base64. */
export function telnyxPublicKey(base64: string): KeyObject | undefined {
  const raw = Buffer.from(base64, 'base64');
  if (raw.length !== 32 || raw.toString('base64') !== base64.trim()) return undefined;
  try {
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  } catch {
    return undefined;
  }
}

/** `telnyx-signature-ed25519` for a body (simulators and tests): base64 of the 64-byte signature. */
export function computeTelnyxSignature(privateKey: KeyObject, timestamp: string, rawBody: string | Uint8Array): string {
  return sign(null, telnyxSignedMessage(timestamp, rawBody), privateKey).toString('base64');
}

/** Both signature headers for a body signed now (or at `nowSec`). */
export function telnyxSignatureHeaders(privateKey: KeyObject, rawBody: string | Uint8Array, nowSec = Math.floor(Date.now() / 1000)): Record<string, string> {
  const timestamp = String(nowSec);
  return { [TELNYX_SIGNATURE_HEADER]: computeTelnyxSignature(privateKey, timestamp, rawBody), [TELNYX_TIMESTAMP_HEADER]: timestamp };
}

/** Why a webhook failed the check (logged; the carrier only sees 403). */
export type TelnyxSignatureFailure = 'no-public-key' | 'missing-signature' | 'missing-timestamp' | 'stale-timestamp' | 'bad-signature';

export interface TelnyxSignatureCheck {
  /** The account's public key: base64 of the raw 32 bytes, or a key object. */
  publicKey: string | KeyObject | undefined;
  /** `telnyx-timestamp` header (Unix seconds). */
  timestamp: string | undefined;
  /** `telnyx-signature-ed25519` header (base64). */
  signature: string | undefined;
  /** The body exactly as received, before any parsing. */
  rawBody: string | Uint8Array;
  /** Now, Unix seconds (tests move it). */
  nowSec?: number;
  toleranceSec?: number;
}

/**
 * Checks a Telnyx webhook: a decimal timestamp within {@link TELNYX_TIMESTAMP_TOLERANCE_SEC}
 * of now (either way) and a valid Ed25519 signature over `timestamp|rawBody`. Returns
 * `null` when it passes, else why not. Never throws.
 */
export function checkTelnyxSignature(check: TelnyxSignatureCheck): TelnyxSignatureFailure | null {
  const key = typeof check.publicKey === 'string' ? telnyxPublicKey(check.publicKey) : check.publicKey;
  if (!key) return 'no-public-key';
  if (!check.signature) return 'missing-signature';
  if (!check.timestamp) return 'missing-timestamp';
  if (!/^\d{1,12}$/.test(check.timestamp)) return 'stale-timestamp';
  const nowSec = check.nowSec ?? Math.floor(Date.now() / 1000);
  if (Math.abs(nowSec - Number(check.timestamp)) > (check.toleranceSec ?? TELNYX_TIMESTAMP_TOLERANCE_SEC)) return 'stale-timestamp';
  const signature = Buffer.from(check.signature, 'base64');
  if (signature.length !== 64) return 'bad-signature';
  try {
    return verify(null, telnyxSignedMessage(check.timestamp, check.rawBody), key, signature) ? null : 'bad-signature';
  } catch {
    return 'bad-signature';
  }
}
