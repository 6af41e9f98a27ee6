import { readOrCreateTokenFile } from './local-token-file.js';

/** File under DATA_DIR holding the sandbox Auth Token. */
export const TWILIO_SANDBOX_TOKEN_FILE = 'twilio-sandbox-token';

/** The Auth Token webhook signatures are checked with, and where it came from. */
export interface TwilioAuth {
  token: string;
  /** True when TWILIO_AUTH_TOKEN is unset and a generated sandbox token is used. */
  sandbox: boolean;
  /** The sandbox token's file (sandbox mode only). */
  file?: string;
}

/**
 * TWILIO_AUTH_TOKEN when configured; otherwise Twilio sandbox mode: a token generated
 * into `dataDir/twilio-sandbox-token` on first use and read back afterwards, so the
 * control plane (voice webhook), the media gateway (WebSocket upgrade) and the sandbox
 * call command all sign and check with the same value. Real Twilio cannot reach a
 * sandbox platform; the token only lets local tools produce valid signatures.
 */
export function loadTwilioAuthToken(configured: string | undefined, dataDir: string): TwilioAuth {
  if (configured) return { token: configured, sandbox: false };
  const { token, file } = readOrCreateTokenFile(dataDir, TWILIO_SANDBOX_TOKEN_FILE);
  return { token, sandbox: true, file };
}
