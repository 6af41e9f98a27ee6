import type pg from 'pg';

export interface RateLimitResult {
  limit: number;
  remaining: number;
  /** Epoch seconds at which the current window ends. */
  resetAtSec: number;
  exceeded: boolean;
  /** Seconds to wait before the next request can succeed (when exceeded). */
  retryAfterSec: number;
}

const WINDOW_MS = 60_000;

const HIT = {
  name: 'rate-limit-hit',
  text: `insert into rate_limit_windows (bucket, window_start, count) values ($1, $2, 1)
         on conflict (bucket, window_start) do update set count = rate_limit_windows.count + 1
         returning count`,
};

/**
 * Fixed one-minute windows counted in Postgres (an unlogged table), so every replica
 * shares one counter. Requests with a valid API key are counted by the authenticator's
 * lookup in the same statement; others by {@link hit}. The housekeeping job deletes past windows.
 */
export class RateLimiter {
  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
  ) {}

  /** Start (epoch ms) of the window that holds this moment. */
  windowStart(nowMs: number = this.now()): number {
    return nowMs - (nowMs % WINDOW_MS);
  }

  /** Counts one request in `bucket`'s current window. */
  async hit(bucket: string, limit: number): Promise<RateLimitResult> {
    const nowMs = this.now();
    const res = await this.pool.query<{ count: number }>({ ...HIT, values: [bucket, this.windowStart(nowMs)] });
    return this.verdict(res.rows[0]!.count, limit, nowMs);
  }

  /** The verdict for the `count`-th request of the window holding `nowMs` (counted elsewhere). */
  verdict(count: number, limit: number, nowMs: number = this.now()): RateLimitResult {
    const resetMs = this.windowStart(nowMs) + WINDOW_MS;
    return {
      limit,
      remaining: Math.max(0, limit - count),
      resetAtSec: Math.ceil(resetMs / 1000),
      exceeded: count > limit,
      retryAfterSec: Math.max(1, Math.ceil((resetMs - nowMs) / 1000)),
    };
  }

  /** Deletes windows that ended before `olderThanMs`; returns how many. */
  async purge(olderThanMs: number): Promise<number> {
    const res = await this.pool.query('delete from rate_limit_windows where window_start < $1', [olderThanMs - WINDOW_MS]);
    return res.rowCount ?? 0;
  }
}
