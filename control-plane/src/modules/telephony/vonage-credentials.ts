import { readOrCreateTokenFile } from './local-token-file.js';

/** File under DATA_DIR holding the sandbox Vonage signature secret. */
export const VONAGE_SANDBOX_SECRET_FILE = 'vonage-sandbox-signature-secret';

/** The secret Vonage webhook JWTs are checked with, and where it came from. */
export interface VonageSignature {
  /** Undefined in production without VONAGE_SIGNATURE_SECRET: every Vonage webhook is refused. */
  secret: string | undefined;
  /** True when VONAGE_SIGNATURE_SECRET is unset in development and a generated secret is used. */
  sandbox: boolean;
  /** The sandbox secret's file (sandbox mode only). */
  file?: string;
}

/**
 * VONAGE_SIGNATURE_SECRET when configured; in development without it, Vonage sandbox
 * mode: a secret generated into `dataDir/vonage-sandbox-signature-secret` on first use
 * and read back afterwards, so the control plane and the Vonage caller simulator sign and
 * check with the same value (real Vonage cannot reach a sandbox platform). In production
 * without it there is no secret: signed webhooks cannot be checked, so all are refused.
 */
export function loadVonageSignatureSecret(configured: string | undefined, dataDir: string, appEnv: 'development' | 'production'): VonageSignature {
  if (configured) return { secret: configured, sandbox: false };
  if (appEnv === 'production') return { secret: undefined, sandbox: false };
  const { token, file } = readOrCreateTokenFile(dataDir, VONAGE_SANDBOX_SECRET_FILE, 24);
  return { secret: token, sandbox: true, file };
}
