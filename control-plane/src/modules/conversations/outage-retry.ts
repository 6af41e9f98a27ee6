import { WakeableDelays } from '@vap/shared';
import { isDatabaseUnavailable } from '../../db/errors.js';

export interface OutageRetryOptions {
  /** Wait before the first retry (ms), doubled up to `maxDelayMs`. Default 500. */
  firstDelayMs?: number;
  /** Default 5000. */
  maxDelayMs?: number;
  /** How long one piece of work is retried (ms). Default 120 000. */
  giveUpAfterMs?: number;
  /** Pieces of work waiting at most; one more is not retried. Default 5000. */
  maxWaiting?: number;
}

/**
 * Runs bus work that stores what a gateway reported (a live message, a provider error, a tool
 * call) again while the database is unreachable, instead of dropping it on the first failure:
 * those messages come once and unanswered, so a Postgres restart lost them (the `Error` and
 * `ToolCallCompleted` webhooks of the calls in progress; live transcript lines, which the end
 * record brings back later). Only a database outage is retried (another error would fail
 * again), for a bounded time and count, in memory. {@link close} ends the waiting: each piece
 * gets one more attempt.
 */
export class OutageRetry {
  private readonly delays = new WakeableDelays();
  private waiting = 0;
  private closed = false;

  constructor(private readonly opts: OutageRetryOptions = {}) {}

  /** Pieces of work waiting for the database now. */
  get size(): number {
    return this.waiting;
  }

  /** Resolves with `work`'s result; rejects with its last error once given up. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    const giveUpAt = performance.now() + (this.opts.giveUpAfterMs ?? 120_000);
    let delayMs = this.opts.firstDelayMs ?? 500;
    let counted = false;
    try {
      for (;;) {
        try {
          return await work();
        } catch (err) {
          if (!isDatabaseUnavailable(err) || this.closed || performance.now() >= giveUpAt) throw err;
          if (!counted) {
            if (this.waiting >= (this.opts.maxWaiting ?? 5000)) throw err;
            this.waiting += 1;
            counted = true;
          }
          await this.delays.sleep(Math.min(delayMs, giveUpAt - performance.now()));
          delayMs = Math.min(delayMs * 2, this.opts.maxDelayMs ?? 5000);
        }
      }
    } finally {
      if (counted) this.waiting -= 1;
    }
  }

  /** Wakes every waiting piece for its last attempt; later failures are not retried. */
  close(): void {
    this.closed = true;
    this.delays.wakeAll();
  }
}
