import { hash, randomBytes } from 'node:crypto';

export type KeyEnvironment = 'live' | 'sandbox';

const ENV_TAG: Record<KeyEnvironment, string> = { live: 'live', sandbox: 'sb' };
const KEY_PATTERN = /^svc_(live|sb)_([A-Za-z0-9_-]{43,})$/;
/** Characters of the random part shown in `keyPrefix`: enough to tell keys apart, far too few to guess the rest. */
const PREFIX_RANDOM_CHARS = 8;

/** A new key: `svc_<env>_` and 32 random bytes in base64url (256 bits). */
export function generateKey(env: KeyEnvironment): string {
  return `svc_${ENV_TAG[env]}_${randomBytes(32).toString('base64url')}`;
}

export function parseKey(key: string): { environment: KeyEnvironment } | null {
  const m = KEY_PATTERN.exec(key);
  if (!m) return null;
  return { environment: m[1] === 'live' ? 'live' : 'sandbox' };
}

export function keyPrefix(key: string): string {
  const cut = key.indexOf('_', 4) + 1;
  return key.slice(0, cut + PREFIX_RANDOM_CHARS);
}

/**
 * SHA-256 hex. The key is 256 random bits, so no slow hash is needed to resist guessing.
 * One-shot `hash` (Node >= 20.12): every API request hashes its key, and it costs ~270 ns
 * against ~800 for a `createHash` object (#5).
 */
export function hashKey(key: string): string {
  return hash('sha256', key, 'hex');
}
