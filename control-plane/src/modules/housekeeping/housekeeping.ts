import type { Logger } from 'pino';
import type pg from 'pg';
import { DeliveryQueue } from '../webhooks/delivery-queue.js';
import type { IdempotencyStore } from '../idempotency/idempotency-store.js';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { RecordingRetention } from '../conversations/recording-retention.js';
import type { CarrierCallEventStore } from '../telephony/carrier-call-event-store.js';

/**
 * Periodic clean-up: expired idempotency records (24 h), past rate-limit windows,
 * webhook events (with their delivery log) past the log retention, and call recordings
 * past their agent's `storageRetentionDays` (object deleted, marked unavailable), and
 * carriers' call-status events past their retention (in batches), and messaging threads
 * idle past their window (completed, as the peer's next message would).
 * Every replica may run it; the deletes are idempotent, so no coordination is needed,
 * and a restart loses nothing (the state it cleans is in Postgres).
 */
export class Housekeeping {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      idempotency: IdempotencyStore;
      rateLimiter: RateLimiter;
      log: Logger;
      intervalMs: number;
      now?: () => number;
      /** Webhook events older than `retentionDays` are deleted with their deliveries and attempts. */
      webhookLog?: { pool: pg.Pool; retentionDays: number };
      /** Deletes recordings whose retention ran out (claims rows with SKIP LOCKED, so replicas do not collide). */
      recordingRetention?: RecordingRetention;
      /** Carrier call events received more than `retentionDays` ago are deleted. */
      carrierCallEvents?: { store: CarrierCallEventStore; retentionDays: number };
      /** Open SMS/WhatsApp/Telegram threads whose last message is older than `idleMs` are completed (`idle_timeout`). */
      messagingThreads?: { repo: { closeIdleThreads(idleSince: Date): Promise<number> }; idleMs: number };
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.runOnce(), this.deps.intervalMs);
    this.timer.unref();
    void this.runOnce();
  }

  async runOnce(): Promise<{ idempotencyKeys: number; rateLimitWindows: number; webhookEvents: number; recordings: number; carrierCallEvents: number; idleThreads: number }> {
    const run = (async () => {
      const nowMs = (this.deps.now ?? Date.now)();
      const idempotencyKeys = await this.deps.idempotency.purgeExpired();
      const rateLimitWindows = await this.deps.rateLimiter.purge(nowMs);
      const log = this.deps.webhookLog;
      const webhookEvents = log ? await new DeliveryQueue(log.pool).purgeBefore(new Date(nowMs - log.retentionDays * 86_400_000)) : 0;
      const recordings = this.deps.recordingRetention ? (await this.deps.recordingRetention.purge(new Date(nowMs))).purged : 0;
      const events = this.deps.carrierCallEvents;
      const carrierCallEvents = events ? await events.store.purgeBefore(new Date(nowMs - events.retentionDays * 86_400_000)) : 0;
      const threads = this.deps.messagingThreads;
      const idleThreads = threads ? await threads.repo.closeIdleThreads(new Date(nowMs - threads.idleMs)) : 0;
      const purged = { idempotencyKeys, rateLimitWindows, webhookEvents, recordings, carrierCallEvents, idleThreads };
      if (idempotencyKeys + rateLimitWindows + webhookEvents + recordings + carrierCallEvents + idleThreads > 0) this.deps.log.debug(purged, 'housekeeping purged');
      return purged;
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
