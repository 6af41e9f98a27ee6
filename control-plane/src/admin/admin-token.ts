import { readOrCreateTokenFile } from '../modules/telephony/local-token-file.js';

/** File under DATA_DIR holding the generated admin token (development only). */
export const ADMIN_TOKEN_FILE = 'admin-token';

/** The admin bearer token and where it came from (for the start banner). */
export interface AdminToken {
  token: string;
  /** `ADMIN_TOKEN`, or the path of the generated file. */
  source: string;
}

/**
 * ADMIN_TOKEN when configured. Unset in development: a token generated into
 * `dataDir/admin-token` on first start and reused afterwards. Unset in production: null,
 * and the admin server does not start (an admin API must never run on a guessable or
 * per-replica credential).
 */
export function loadAdminToken(configured: string | undefined, dataDir: string, appEnv: 'development' | 'production'): AdminToken | null {
  if (configured) return { token: configured, source: 'ADMIN_TOKEN' };
  if (appEnv === 'production') return null;
  const { token, file } = readOrCreateTokenFile(dataDir, ADMIN_TOKEN_FILE, 24);
  return { token, source: file };
}
