import type { Logger } from 'pino';
import type pg from 'pg';

/** How long ended sessions (with their refresh tokens) and finished MFA challenges are kept, for support and audit (ms). */
export const ENDED_AUTH_RETENTION_MS = 30 * 86_400_000;

export interface AuthPurgeResult {
  sessions: number;
  mfaChallenges: number;
  loginThrottles: number;
}

/**
 * Deletes login state nobody needs any more: sessions that ended (revoked or past their
 * absolute limit) more than 30 days ago, with their refresh tokens; MFA challenges that
 * expired more than 30 days ago; throttle rows with no lock and no failure in the last
 * window. Live sessions keep their spent refresh tokens: reuse detection needs them.
 * Idempotent, so every replica may run it.
 */
export async function purgeAuthState(pool: pg.Pool, nowMs: number, throttleWindowMs: number): Promise<AuthPurgeResult> {
  const cutoff = new Date(nowMs - ENDED_AUTH_RETENTION_MS);
  // A session ended at its revocation or at its absolute limit, whichever came first.
  const sessions = await pool.query('delete from auth_sessions where least(revoked_at, expires_at) < $1', [cutoff]);
  const mfa = await pool.query('delete from mfa_challenges where expires_at < $1', [cutoff]);
  const windowStart = new Date(nowMs - throttleWindowMs);
  const throttles = await pool.query('delete from login_throttles where window_started_at < $1 and (locked_until is null or locked_until < $1)', [windowStart]);
  return { sessions: sessions.rowCount ?? 0, mfaChallenges: mfa.rowCount ?? 0, loginThrottles: throttles.rowCount ?? 0 };
}

/** Runs {@link purgeAuthState} every `intervalMs` until stopped. */
export function startAuthPurge(deps: { pool: pg.Pool; log: Logger; intervalMs: number; throttleWindowMs: number; now?: () => number }): { stop(): Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = purgeAuthState(deps.pool, (deps.now ?? Date.now)(), deps.throttleWindowMs).then(
      (r) => {
        if (r.sessions + r.mfaChallenges + r.loginThrottles > 0) deps.log.debug(r, 'auth state purged');
      },
      (err: unknown) => deps.log.warn({ err }, 'auth state purge failed; will retry'),
    );
  };
  const timer = setInterval(tick, deps.intervalMs);
  timer.unref();
  tick();
  return {
    stop: async () => {
      clearInterval(timer);
      await running;
    },
  };
}
