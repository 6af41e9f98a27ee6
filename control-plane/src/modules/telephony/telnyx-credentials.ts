import type { KeyObject } from 'node:crypto';
import { telnyxPrivateKeyFromSeed, telnyxPublicKeyBase64 } from '@vap/shared';
import { readOrCreateTokenFile } from './local-token-file.js';

/** File under DATA_DIR holding the sandbox Ed25519 seed (hex, 32 bytes) that plays Telnyx's signing key. */
export const TELNYX_SANDBOX_KEY_FILE = 'telnyx-sandbox-ed25519-seed';

/** The public key Telnyx webhooks are verified with, and where it came from. */
export interface TelnyxWebhookKey {
  /** Base64 of the raw 32-byte Ed25519 public key; undefined refuses every Telnyx webhook (fail closed). */
  publicKey: string | undefined;
  /** True when TELNYX_PUBLIC_KEY is unset and the sandbox key pair in DATA_DIR is used. */
  sandbox: boolean;
  /** The sandbox seed's file (sandbox mode only). */
  file?: string;
}

/**
 * TELNYX_PUBLIC_KEY when configured. Otherwise, in development only, Telnyx sandbox mode:
 * an Ed25519 key pair whose seed is generated into `dataDir/telnyx-sandbox-ed25519-seed`
 * on first use (mode 0600), so the sandbox call command and tests can sign webhooks the
 * control plane accepts ({@link telnyxSandboxSigningKey}). Real Telnyx signs with its own
 * key and cannot reach a sandbox platform. In production without a key: none (every
 * Telnyx webhook is refused with 403).
 */
export function loadTelnyxWebhookKey(configured: string | undefined, dataDir: string, appEnv: 'development' | 'production'): TelnyxWebhookKey {
  if (configured) return { publicKey: configured, sandbox: false };
  if (appEnv !== 'development') return { publicKey: undefined, sandbox: false };
  const { key, file } = telnyxSandboxSigningKey(dataDir);
  return { publicKey: telnyxPublicKeyBase64(key), sandbox: true, file };
}

/** The sandbox's private signing key (created on first use), for local tools that play Telnyx. */
export function telnyxSandboxSigningKey(dataDir: string): { key: KeyObject; file: string } {
  const { token, file } = readOrCreateTokenFile(dataDir, TELNYX_SANDBOX_KEY_FILE, 32);
  return { key: telnyxPrivateKeyFromSeed(token), file };
}
