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

export interface RateLimiterOptions {
  /** How often counts made in memory are added to the shared rows (ms, default 200). */
  flushIntervalMs?: number;
  /**
   * A bucket's shared total older than this is re-read before the next request is counted
   * in memory (ms, default 1000): a replica that was idle does not trust an old total.
   */
  maxStalenessMs?: number;
}

const WINDOW_MS = 60_000;
const FLUSH_INTERVAL_MS = 200;
const MAX_STALENESS_MS = 1_000;
/** Buckets flushed per statement. */
const FLUSH_BATCH = 500;

const HIT = {
  name: 'rate-limit-hit',
  text: `insert into rate_limit_windows (bucket, window_start, count) values ($1, $2, $3)
         on conflict (bucket, window_start) do update set count = rate_limit_windows.count + excluded.count
         returning count`,
};

const FLUSH = {
  name: 'rate-limit-flush',
  text: `insert into rate_limit_windows (bucket, window_start, count)
         select * from unnest($1::text[], $2::bigint[], $3::int[])
         on conflict (bucket, window_start) do update set count = rate_limit_windows.count + excluded.count
         returning bucket, window_start, count`,
};

/** One bucket's window as this replica knows it. */
interface Window {
  bucket: string;
  windowStart: number;
  /** The shared total (all replicas) at the last read, or -1 before the first. */
  shared: number;
  /** When `shared` was read (ms, this limiter's clock). */
  readAtMs: number;
  /** Counted here and not yet added to the shared row. */
  local: number;
  /** Being added by the flush in flight. */
  flushing: number;
  /** A read of the shared total in flight (far from the limit, others wait for it). */
  reading: Promise<void> | null;
}

/**
 * Fixed one-minute windows whose counters live in Postgres (an unlogged table), so every
 * replica shares one count per bucket (`tenant:<id>` or `ip:<address>`).
 *
 * No request writes the shared row while its bucket is far from the limit: the request is
 * counted in memory against the last shared total read, and a flush every
 * {@link RateLimiterOptions.flushIntervalMs} adds each bucket's local delta in one statement
 * and reads the new totals back. A request is counted in Postgres itself (one upsert, exact
 * across replicas) when its bucket was never read in this window, when the total read is
 * older than {@link RateLimiterOptions.maxStalenessMs}, or when the estimate is within
 * `max(10, 10 %)` of the limit; that upsert also adds what this replica counted since its
 * last flush, so near the limit every replica's count is in the row. Once the shared total
 * is past the limit, refusals are answered from memory. What other replicas counted in
 * memory and have not flushed yet is unseen, so the worst-case overshoot is what they
 * accepted within one flush interval (plus a statement's latency) before they came within
 * the margin themselves (docs/api.md "Rate limits"). The housekeeping job deletes past windows.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private readonly flushIntervalMs: number;
  private readonly maxStalenessMs: number;
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> | null = null;

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
    opts: RateLimiterOptions = {},
  ) {
    this.flushIntervalMs = opts.flushIntervalMs ?? FLUSH_INTERVAL_MS;
    this.maxStalenessMs = opts.maxStalenessMs ?? MAX_STALENESS_MS;
  }

  /** Start (epoch ms) of the window that holds this moment. */
  windowStart(nowMs: number = this.now()): number {
    return nowMs - (nowMs % WINDOW_MS);
  }

  /** Counts one request in `bucket`'s current window. */
  async hit(bucket: string, limit: number): Promise<RateLimitResult> {
    const nowMs = this.now();
    const windowStart = this.windowStart(nowMs);
    const key = `${windowStart}|${bucket}`;
    let w = this.windows.get(key);
    if (!w) {
      w = { bucket, windowStart, shared: -1, readAtMs: 0, local: 0, flushing: 0, reading: null };
      this.windows.set(key, w);
    }
    for (;;) {
      if (w.shared > limit) {
        // Past the limit: counts only grow within a window, so refuse without asking.
        this.countLocally(w);
        return this.verdict(w.shared + w.flushing + w.local, limit, nowMs);
      }
      const estimate = w.shared + w.flushing + w.local + 1;
      const near = estimate + Math.max(10, Math.ceil(limit / 10)) > limit;
      const unread = w.shared < 0 || nowMs - w.readAtMs > this.maxStalenessMs;
      if (!near && !unread) {
        this.countLocally(w);
        return this.verdict(estimate, limit, nowMs);
      }
      // Far from the limit, concurrent requests of an unread bucket wait for one read.
      if (!near && w.reading) {
        await w.reading;
        continue;
      }
      const counted = this.countInPostgres(w, nowMs);
      if (!near) {
        const reading = counted.then(
          () => undefined,
          () => undefined,
        );
        w.reading = reading;
        void reading.then(() => {
          if (w.reading === reading) w.reading = null;
        });
      }
      return this.verdict(await counted, limit, nowMs);
    }
  }

  /**
   * Counts this request, and what this replica counted since its last flush, in the shared
   * row (so near the limit every replica's count is in it); returns the count to judge by.
   */
  private async countInPostgres(w: Window, nowMs: number): Promise<number> {
    const add = 1 + w.local;
    w.local = 0;
    let count: number;
    try {
      const res = await this.pool.query<{ count: number }>({ ...HIT, values: [w.bucket, w.windowStart, add] });
      count = res.rows[0]!.count;
    } catch (err) {
      w.local += add - 1;
      throw err;
    }
    if (count > w.shared) {
      w.shared = count;
      w.readAtMs = nowMs;
    }
    return count + w.local + w.flushing;
  }

  /** The verdict for the `count`-th request of the window holding `nowMs`. */
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

  /** Adds every bucket's local count to its shared row and reads the totals back. */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    this.flushing = this.flushOnce().finally(() => {
      this.flushing = null;
    });
    await this.flushing;
  }

  /** Stops the timer and flushes what is still counted only here. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush().catch(() => undefined);
  }

  /** Deletes windows that ended before `olderThanMs`; returns how many. */
  async purge(olderThanMs: number): Promise<number> {
    const res = await this.pool.query('delete from rate_limit_windows where window_start < $1', [olderThanMs - WINDOW_MS]);
    return res.rowCount ?? 0;
  }

  private countLocally(w: Window): void {
    w.local++;
    if (!this.timer) {
      this.timer = setInterval(() => void this.flush().catch(() => undefined), this.flushIntervalMs);
      this.timer.unref();
    }
  }

  private async flushOnce(): Promise<void> {
    const current = this.windowStart();
    const due: Window[] = [];
    for (const [key, w] of this.windows) {
      if (w.local > 0) {
        w.flushing = w.local;
        w.local = 0;
        due.push(w);
      } else if (w.flushing === 0 && w.windowStart < current) {
        this.windows.delete(key); // a past window with nothing left to add
      }
    }
    if (due.length === 0) {
      if (this.timer && this.windows.size === 0) {
        clearInterval(this.timer);
        this.timer = null;
      }
      return;
    }
    for (let i = 0; i < due.length; i += FLUSH_BATCH) {
      const batch = due.slice(i, i + FLUSH_BATCH);
      try {
        const res = await this.pool.query<{ bucket: string; window_start: string; count: number }>({
          ...FLUSH,
          values: [batch.map((w) => w.bucket), batch.map((w) => w.windowStart), batch.map((w) => w.flushing)],
        });
        const totals = new Map(res.rows.map((r) => [`${r.window_start}|${r.bucket}`, r.count]));
        const readAtMs = this.now();
        for (const w of batch) {
          const total = totals.get(`${w.windowStart}|${w.bucket}`);
          if (total !== undefined && total > w.shared) w.shared = total;
          w.readAtMs = readAtMs;
          w.flushing = 0;
        }
      } catch (err) {
        // Kept for the next flush: the counts are not lost, only late.
        for (const w of batch) {
          w.local += w.flushing;
          w.flushing = 0;
        }
        throw err;
      }
    }
  }
}
