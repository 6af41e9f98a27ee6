import type pg from 'pg';
import type { Logger } from 'pino';
import { OutboundRequestError, WEBHOOK_HEADERS, guardedPost, signWebhook } from '@vap/shared';
import type { OutboundGuard } from '@vap/shared';
import { QueueLoop } from '../../db/queue-loop.js';
import { storableText } from '../../db/storable-text.js';
import type { SecretBox } from '../../secret-box.js';
import type { WebhookMetrics } from '../metrics/control-plane-metrics.js';
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
  /** Counts each attempt by result, with its HTTP time. */
  metrics?: WebhookMetrics;
}

/**
 * Delivers webhook events from the durable queue (`DeliveryQueue`): signs each attempt
 * (fresh timestamp, same body and delivery id), sends it through the outbound guard,
 * and writes the outcome and the next attempt's time. Every control plane runs one;
 * they share the queue through Postgres. Woken by the local outbox, by `NOTIFY` from other
 * control planes, by a timer set to the next due attempt, and by a slow poll.
 */
export class WebhookDispatcher extends QueueLoop<ClaimedDelivery> {
  private readonly queue: DeliveryQueue;
  private readonly o: Required<Omit<WebhookDispatcherOptions, 'now' | 'metrics'>> & { now: () => number; metrics?: WebhookMetrics };
  private readonly inFlightPerWebhook = new Map<string, number>();

  constructor(opts: WebhookDispatcherOptions) {
    const o = { now: Date.now, timeoutMs: WEBHOOK_TIMEOUT_MS, retryDelaysMs: WEBHOOK_RETRY_DELAYS_MS, leaseMs: 3 * WEBHOOK_TIMEOUT_MS, ...opts };
    super({ pool: opts.pool, log: o.log, channel: DELIVERIES_CHANNEL, label: 'webhook queue', concurrency: o.concurrency, pollIntervalMs: o.pollIntervalMs, now: o.now });
    this.o = o;
    this.queue = new DeliveryQueue(opts.pool);
  }

  protected override claim(free: number, now: Date): Promise<ClaimedDelivery[]> {
    return this.queue.claim({ now, limit: free, perWebhook: this.o.perWebhook, inFlight: this.inFlightPerWebhook, leaseMs: this.o.leaseMs });
  }

  /** Webhooks with all their `perWebhook` slots busy are left out: their due deliveries cannot be claimed yet. */
  protected override nextDueAt(now: Date): Promise<Date | null> {
    const full = [...this.inFlightPerWebhook].filter(([, n]) => n >= this.o.perWebhook).map(([id]) => id);
    return this.queue.nextDueAt(now, full);
  }

  /** Runs one claimed attempt, counting it against its webhook's `perWebhook` slots meanwhile. */
  protected override async process(d: ClaimedDelivery): Promise<void> {
    this.inFlightPerWebhook.set(d.webhookId, (this.inFlightPerWebhook.get(d.webhookId) ?? 0) + 1);
    try {
      await this.attempt(d);
    } catch (err) {
      this.o.log.error({ err, webhookId: d.webhookId, deliveryId: d.eventId }, 'webhook attempt not recorded; its lease will expire and it is retried');
    } finally {
      const n = (this.inFlightPerWebhook.get(d.webhookId) ?? 1) - 1;
      if (n <= 0) this.inFlightPerWebhook.delete(d.webhookId);
      else this.inFlightPerWebhook.set(d.webhookId, n);
    }
  }

  private async attempt(d: ClaimedDelivery): Promise<void> {
    const log = this.o.log.child({ webhookId: d.webhookId, deliveryId: d.eventId, eventType: d.eventType, tenantId: d.tenantId });
    const startedAt = new Date(this.o.now());
    if (!d.enabled) {
      // Disabled after the event was queued: nothing is sent; a replay after re-enabling sends it.
      await this.queue.record(d, { startedAt, finishedAt: startedAt, statusCode: null, latencyMs: 0, success: false, error: 'webhook disabled; not sent' }, this.o.retryDelaysMs, true);
      this.o.metrics?.webhookAttempt('disabled', 0);
      return;
    }
    const outcome = await this.send(d, startedAt);
    const result = await this.queue.record(d, outcome, this.o.retryDelaysMs);
    this.o.metrics?.webhookAttempt(result, outcome.latencyMs);
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
      // The receiver's words, kept where its answer holds a NUL (binary, compressed): the attempt must be recorded.
      const snippet = storableText(res.bodySnippet.trim().slice(0, 200));
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
