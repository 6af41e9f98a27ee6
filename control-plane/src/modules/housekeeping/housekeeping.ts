import type { Logger } from 'pino';
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';

/**
 * Periodic clean-up: expired idempotency records (24 h) and past rate-limit windows.
 * Every replica may run it; the deletes are idempotent, so no coordination is needed,
 * and a restart loses nothing (the state it cleans is in Postgres).
 */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly deps: { idempotency: IdempotencyStore; rateLimiter: RateLimiter; log: Logger; intervalMs: number; now?: () => number }) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.deps.intervalMs);
    this.timer.unref();
    void this.runOnce();
  }

  async runOnce(): Promise<{ idempotencyKeys: number; rateLimitWindows: number }> {
    const run = (async () => {
      const idempotencyKeys = await this.deps.idempotency.purgeExpired();
      const rateLimitWindows = await this.deps.rateLimiter.purge((this.deps.now ?? Date.now)());
      if (idempotencyKeys + rateLimitWindows > 0) this.deps.log.debug({ idempotencyKeys, rateLimitWindows }, 'housekeeping purged');
      return { idempotencyKeys, rateLimitWindows };
    })();
    this.running = run.then(
      () => undefined,
      (err: unknown) => this.deps.log.warn({ err }, 'housekeeping failed; will retry'),
    );
    return run;
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
