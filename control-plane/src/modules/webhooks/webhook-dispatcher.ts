import type pg from 'pg';
import type { Logger } from 'pino';
import { OutboundRequestError, WEBHOOK_HEADERS, guardedPost, signWebhook } from '@vap/shared';
import type { OutboundGuard } from '@vap/shared';
import type { SecretBox } from '../../secret-box.js';
import { DELIVERIES_CHANNEL } from './event-outbox.js';
import { DeliveryQueue } from './delivery-queue.js';
import type { AttemptOutcome, ClaimedDelivery } from './delivery-queue.js';

/** Spec "Events": a delivery fails without a 2xx within 5 s. */
export const WEBHOOK_TIMEOUT_MS = 5000;
/** Spec "Events": attempts 2..6 follow the previous one after 1, 2, 4, 8 and 16 s. */
export const WEBHOOK_RETRY_DELAYS_MS: readonly number[] = [1000, 2000, 4000, 8000, 16000];

export interface WebhookDispatcherOptions {
  pool: pg.Pool;
  secrets: SecretBox;
  guard: OutboundGuard;
  log: Logger;
  /** Sent as `User-Agent`. */
  userAgent: string;
  /** Attempts in flight at once in this process, over all webhooks. */
  concurrency: number;
  /** Attempts in flight at once for one webhook, so a slow receiver cannot take every slot. */
  perWebhook: number;
  /** Longest sleep between looks at the queue when nothing woke the dispatcher (deliveries of other replicas, expired leases). */
  pollIntervalMs: number;
  now?: () => number;
  timeoutMs?: number;
  retryDelaysMs?: readonly number[];
  /** How long a claim holds a delivery; must exceed the timeout plus the writes after it. */
  leaseMs?: number;
}

/**
 * Delivers webhook events from the durable queue (`DeliveryQueue`): signs each attempt
 * (fresh timestamp, same body and delivery id), sends it through the outbound guard,
 * and writes the outcome and the next attempt's time. Every control plane runs one;
 * they share the queue through Postgres. Woken by the local outbox, by `NOTIFY` from other
 * control planes, by a timer set to the next due attempt, and by a slow poll.
 */
export class WebhookDispatcher {
  private readonly queue: DeliveryQueue;
  private readonly o: Required<Omit<WebhookDispatcherOptions, 'now'>> & { now: () => number };
  private readonly inFlightPerWebhook = new Map<string, number>();
  private readonly inFlight = new Set<Promise<void>>();
  private listener: pg.PoolClient | undefined;
  private releaseListener: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private tickAgain = false;
  private stopped = true;

  constructor(opts: WebhookDispatcherOptions) {
    this.o = { now: Date.now, timeoutMs: WEBHOOK_TIMEOUT_MS, retryDelaysMs: WEBHOOK_RETRY_DELAYS_MS, leaseMs: 3 * WEBHOOK_TIMEOUT_MS, ...opts };
    this.queue = new DeliveryQueue(opts.pool);
  }

  /** Starts listening for new deliveries and looks at the queue at once. */
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

  /** Stops claiming and waits for attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.listener = undefined;
    const release = this.releaseListener;
    this.releaseListener = undefined;
    await release?.();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async listen(): Promise<void> {
    let client: pg.PoolClient | undefined;
    let released = false;
    const release = (err?: Error) => {
      if (released || !client) return;
      released = true;
      client.removeAllListeners('notification');
      client.release(err);
    };
    try {
      client = await this.o.pool.connect();
      client.on('notification', () => this.wake());
      client.on('error', (err) => {
        // After stop() released it, the pool owns the client and its errors.
        if (released) return;
        this.o.log.warn({ err }, 'webhook queue listener lost; polling until it is back');
        if (this.listener === client) this.listener = undefined;
        release(err);
        if (!this.stopped) setTimeout(() => void this.listen(), this.o.pollIntervalMs).unref();
      });
      await client.query(`listen ${DELIVERIES_CHANNEL}`);
      if (this.stopped) {
        release();
        return;
      }
      this.listener = client;
      this.releaseListener = async () => {
        await client!.query(`unlisten ${DELIVERIES_CHANNEL}`).catch(() => undefined);
        release();
      };
    } catch (err) {
      release(err instanceof Error ? err : undefined);
      this.o.log.warn({ err }, 'webhook queue listener not started; polling instead');
      if (!this.stopped) setTimeout(() => void this.listen(), this.o.pollIntervalMs).unref();
    }
  }

  private async tick(): Promise<void> {
    this.ticking = true;
    clearTimeout(this.timer);
    let delayMs = this.o.pollIntervalMs;
    try {
      do {
        this.tickAgain = false;
        const free = this.o.concurrency - this.inFlight.size;
        if (free > 0) {
          const claimed = await this.queue.claim({ now: new Date(this.o.now()), limit: free, perWebhook: this.o.perWebhook, inFlight: this.inFlightPerWebhook, leaseMs: this.o.leaseMs });
          for (const d of claimed) this.launch(d);
        }
        if (this.inFlight.size >= this.o.concurrency) {
          delayMs = this.o.pollIntervalMs; // a finishing attempt wakes us
          continue;
        }
        const full = [...this.inFlightPerWebhook].filter(([, n]) => n >= this.o.perWebhook).map(([id]) => id);
        const nowMs = this.o.now();
        const next = await this.queue.nextDueAt(new Date(nowMs), full);
        // Due but not claimable (another worker is claiming it): look again shortly rather than spin.
        delayMs = next === null ? this.o.pollIntervalMs : Math.min(this.o.pollIntervalMs, Math.max(next.getTime() - nowMs, 0));
        if (delayMs === 0 && !this.tickAgain) delayMs = 25;
      } while (this.tickAgain && !this.stopped);
    } catch (err) {
      this.o.log.error({ err }, 'webhook queue look failed; retrying');
    } finally {
      this.ticking = false;
    }
    if (this.stopped) return;
    if (this.tickAgain) {
      this.wake();
      return;
    }
    this.timer = setTimeout(() => this.wake(), delayMs);
    this.timer.unref();
  }

  private launch(d: ClaimedDelivery): void {
    this.inFlightPerWebhook.set(d.webhookId, (this.inFlightPerWebhook.get(d.webhookId) ?? 0) + 1);
    const run = this.attempt(d)
      .catch((err: unknown) => this.o.log.error({ err, webhookId: d.webhookId, deliveryId: d.eventId }, 'webhook attempt not recorded; its lease will expire and it is retried'))
      .finally(() => {
        this.inFlight.delete(run);
        const n = (this.inFlightPerWebhook.get(d.webhookId) ?? 1) - 1;
        if (n <= 0) this.inFlightPerWebhook.delete(d.webhookId);
        else this.inFlightPerWebhook.set(d.webhookId, n);
        this.wake();
      });
    this.inFlight.add(run);
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const log = this.o.log.child({ webhookId: d.webhookId, deliveryId: d.eventId, eventType: d.eventType, tenantId: d.tenantId });
    const startedAt = new Date(this.o.now());
    if (!d.enabled) {
      // Disabled after the event was queued: nothing is sent; a replay after re-enabling sends it.
      await this.queue.record(d, { startedAt, finishedAt: startedAt, statusCode: null, latencyMs: 0, success: false, error: 'webhook disabled; not sent' }, this.o.retryDelaysMs, true);
      return;
    }
    const outcome = await this.send(d, startedAt);
    const result = await this.queue.record(d, outcome, this.o.retryDelaysMs);
    if (result === 'failed') log.warn({ error: outcome.error, statusCode: outcome.statusCode }, 'webhook delivery failed permanently');
    else if (result === 'lease-lost') log.warn('webhook attempt finished after its lease expired; result not recorded');
    else log.debug({ result, statusCode: outcome.statusCode, latencyMs: outcome.latencyMs }, 'webhook attempt');
  }

  private async send(d: ClaimedDelivery, startedAt: Date): Promise<AttemptOutcome> {
    const timestampSeconds = Math.floor(startedAt.getTime() / 1000);
    const secret = this.o.secrets.open(d.secretSealed);
    const headers = {
      'Content-Type': 'application/json',
      'User-Agent': this.o.userAgent,
      [WEBHOOK_HEADERS.signature]: signWebhook(secret, timestampSeconds, d.body),
      [WEBHOOK_HEADERS.timestamp]: String(timestampSeconds),
      [WEBHOOK_HEADERS.deliveryId]: d.eventId,
    };
    const t0 = performance.now();
    try {
      const res = await guardedPost(d.url, { guard: this.o.guard, headers, body: d.body, timeoutMs: this.o.timeoutMs });
      const success = res.status >= 200 && res.status < 300;
      const snippet = res.bodySnippet.trim().slice(0, 200);
      return {
        startedAt,
        finishedAt: new Date(this.o.now()),
        statusCode: res.status,
        latencyMs: res.latencyMs,
        success,
        error: success ? null : `HTTP ${res.status}${snippet ? `: ${snippet}` : ''}`,
      };
    } catch (err) {
      const latencyMs = err instanceof OutboundRequestError ? err.latencyMs : performance.now() - t0;
      const error = err instanceof OutboundRequestError ? `${err.kind}: ${err.message}` : 'request failed';
      if (!(err instanceof OutboundRequestError)) this.o.log.error({ err }, 'webhook request failed unexpectedly');
      return { startedAt, finishedAt: new Date(this.o.now()), statusCode: null, latencyMs, success: false, error };
    }
  }
}
