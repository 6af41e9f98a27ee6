import type pg from 'pg';
import type { Logger } from 'pino';

export interface QueueLoopOptions {
  pool: pg.Pool;
  log: Logger;
  /** Postgres channel `NOTIFY`ed when an item is committed (by any replica). */
  channel: string;
  /** Names the queue in log messages (`job queue`, `webhook queue`). */
  label: string;
  /** Items processed at once in this process. */
  concurrency: number;
  /** Longest sleep between looks at the queue when nothing woke the loop (other replicas' items, expired leases); also the delay before re-listening after the connection broke. */
  pollIntervalMs: number;
  now: () => number;
}

/**
 * The worker loop over a Postgres-backed queue: claims due items up to `concurrency` and
 * processes them, and is woken by `NOTIFY` on `channel`, by `wake()`, by a timer set to the
 * next due item and by a slow poll. Looks are coalesced (a `wake()` during a look runs it
 * once more). A lost LISTEN connection is logged and re-opened after `pollIntervalMs`;
 * meanwhile the poll keeps the queue moving. Subclasses say how to claim, when the next
 * item is due and how to process one.
 */
export abstract class QueueLoop<T> {
  private readonly inFlight = new Set<Promise<void>>();
  private listener: { release(): Promise<void> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private tickAgain = false;
  private stopped = true;

  constructor(private readonly loop: QueueLoopOptions) {}

  /** Claims at most `free` due items (`free` ≥ 1). */
  protected abstract claim(free: number, now: Date): Promise<readonly T[]>;

  /** When the next item this process could claim falls due (in the past if one is due now), or null if none is queued. */
  protected abstract nextDueAt(now: Date): Promise<Date | null>;

  /**
   * Works one claimed item and records its outcome. Should not reject: a rejection is
   * logged here as a generic error, so log a specific message first.
   */
  protected abstract process(item: T): Promise<void>;

  /** Starts listening and looks at the queue at once (items left from before a restart included). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.listen();
    this.wake();
  }

  /** Looks at the queue now (coalesced: a look in progress runs once more). */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    void this.tick();
  }

  /** Stops claiming, releases the LISTEN connection and waits for a look in progress and the items in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.release();
    while (this.ticking || this.inFlight.size > 0) await Promise.allSettled([...this.inFlight, new Promise((r) => setTimeout(r, 10))]);
  }

  private async listen(): Promise<void> {
    const { channel, label, log, pool, pollIntervalMs } = this.loop;
    let client: pg.PoolClient | undefined;
    let handle: { release(): Promise<void> } | undefined;
    let released = false;
    const release = (err?: Error): void => {
      if (released || !client) return;
      released = true;
      client.removeAllListeners('notification');
      client.release(err);
    };
    const retryLater = (): void => {
      if (!this.stopped) setTimeout(() => void this.listen(), pollIntervalMs).unref();
    };
    try {
      client = await pool.connect();
      client.on('notification', () => this.wake());
      client.on('error', (err) => {
        if (released) return; // after release the pool owns the client and its errors
        log.warn({ err }, `${label} listener lost; polling until it is back`);
        if (this.listener === handle) this.listener = undefined;
        release(err);
        retryLater();
      });
      await client.query(`listen ${channel}`);
      if (this.stopped) return release();
      const c = client;
      handle = {
        release: async () => {
          await c.query(`unlisten ${channel}`).catch(() => undefined);
          release();
        },
      };
      this.listener = handle;
    } catch (err) {
      if (released) return; // the error handler above already released it and retries
      release(err instanceof Error ? err : undefined);
      log.warn({ err }, `${label} listener not started; polling instead`);
      retryLater();
    }
  }

  private async tick(): Promise<void> {
    const { concurrency, label, log, now, pollIntervalMs } = this.loop;
    this.ticking = true;
    clearTimeout(this.timer);
    let delayMs = pollIntervalMs;
    try {
      do {
        this.tickAgain = false;
        const free = concurrency - this.inFlight.size;
        if (free > 0 && !this.stopped) {
          const claimed = await this.claim(free, new Date(now()));
          for (const item of claimed) this.launch(item);
        }
        if (this.inFlight.size >= concurrency) {
          delayMs = pollIntervalMs; // a finishing item wakes us
          continue;
        }
        const nowMs = now();
        const next = await this.nextDueAt(new Date(nowMs));
        delayMs = next === null ? pollIntervalMs : Math.min(pollIntervalMs, Math.max(next.getTime() - nowMs, 0));
        // Due but not claimable (another worker is claiming it): look again shortly rather than spin.
        if (delayMs === 0 && !this.tickAgain) delayMs = 25;
      } while (this.tickAgain && !this.stopped);
    } catch (err) {
      log.error({ err }, `${label} look failed; retrying`);
    } finally {
      this.ticking = false;
    }
    if (this.stopped) return;
    if (this.tickAgain) return this.wake();
    this.timer = setTimeout(() => this.wake(), delayMs);
    this.timer.unref();
  }

  private launch(item: T): void {
    const run = this.process(item)
      .catch((err: unknown) => this.loop.log.error({ err }, `${this.loop.label} item not processed`))
      .finally(() => {
        this.inFlight.delete(run);
        this.wake();
      });
    this.inFlight.add(run);
  }
}
