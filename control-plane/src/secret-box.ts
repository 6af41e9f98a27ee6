import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * Encrypts stored secrets (provider API keys of agents) with AES-256-GCM. Output is
 * `v1.<iv>.<tag>.<ciphertext>` in base64url, so the key can be rotated later by version.
 */
export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  /** A 32-byte key for another use, derived from this one (HMAC-SHA256 of `purpose`), so that use never holds the sealing key. */
  derive(purpose: string): Buffer {
    return createHmac('sha256', this.key).update(purpose).digest();
  }

  open(sealed: string): string {
    const [version, iv, tag, ct] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || ct === undefined) throw new Error('Unknown sealed-secret format');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/**
 * The configured key, or (one-machine mode) a key kept in `dataDir/secret.key`, created
 * on first start with mode 0600. Production requires SECRET_ENCRYPTION_KEY, because every
 * replica must share it.
 */
export function loadSecretKey(configured: Buffer | undefined, dataDir: string, appEnv: 'development' | 'production'): Buffer {
  if (configured) return configured;
  if (appEnv === 'production') throw new Error('SECRET_ENCRYPTION_KEY is required when APP_ENV=production');
  const file = path.resolve(dataDir, 'secret.key');
  if (existsSync(file)) return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  mkdirSync(path.dirname(file), { recursive: true });
  const key = randomBytes(32);
  writeFileSync(file, key.toString('base64'), { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}
