import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { EventKind } from '@vap/shared';

/** A delivery claimed by this worker for one attempt, with what the attempt needs. */
export interface ClaimedDelivery {
  webhookId: string;
  eventId: string;
  tenantId: string;
  eventType: EventKind;
  leaseToken: string;
  /** Attempts already made in the current run (0 for the first). */
  runAttempts: number;
  url: string;
  secretSealed: string;
  enabled: boolean;
  /** The envelope's JSON text, sent byte for byte. */
  body: string;
}

/** What one HTTP attempt came to. */
export interface AttemptOutcome {
  startedAt: Date;
  finishedAt: Date;
  statusCode: number | null;
  latencyMs: number;
  success: boolean;
  error: string | null;
}

export type RecordResult = 'delivered' | 'retry' | 'failed' | 'lease-lost';

/**
 * The durable delivery queue in Postgres (table `webhook_deliveries`). A due row is claimed
 * with `FOR UPDATE SKIP LOCKED` and a lease (`lease_token`, `locked_until`), so control
 * planes sharing one database never attempt the same delivery twice at once, and a claim
 * of a worker that died expires after the lease. Results are written only under the
 * lease that claimed them.
 */
export class DeliveryQueue {
  constructor(private readonly pool: pg.Pool) {}

  /**
   * Claims up to `limit` due deliveries, at most `perWebhook` per webhook minus what this
   * worker already has in flight for it (`inFlight`), oldest due first.
   */
  async claim(opts: { now: Date; limit: number; perWebhook: number; inFlight: ReadonlyMap<string, number>; leaseMs: number }): Promise<ClaimedDelivery[]> {
    if (opts.limit <= 0) return [];
    const ids = [...opts.inFlight.keys()];
    const remaining = ids.map((id) => Math.max(0, opts.perWebhook - (opts.inFlight.get(id) ?? 0)));
    const leaseToken = randomBytes(12).toString('base64url');
    const res = await this.pool.query<{
      webhook_id: string;
      event_id: string;
      tenant_id: string;
      event_type: EventKind;
      run_attempts: number;
      url: string;
      secret_sealed: string;
      enabled: boolean;
      body: string;
    }>(
      `with busy as (
         select * from unnest($1::text[], $2::int[]) as b(webhook_id, remaining)
       ), due_webhooks as (
         select distinct webhook_id from webhook_deliveries
          where status = 'pending' and next_attempt_at <= $3 and (locked_until is null or locked_until <= $3)
       ), picked as (
         select p.webhook_id, p.event_id, p.next_attempt_at
           from due_webhooks w
           left join busy b on b.webhook_id = w.webhook_id
           cross join lateral (
             select d.webhook_id, d.event_id, d.next_attempt_at from webhook_deliveries d
              where d.webhook_id = w.webhook_id and d.status = 'pending' and d.next_attempt_at <= $3
                and (d.locked_until is null or d.locked_until <= $3)
              order by d.next_attempt_at, d.event_id
              limit coalesce(b.remaining, $4)
              for update of d skip locked
           ) p
          order by p.next_attempt_at, p.event_id
          limit $5
       )
       update webhook_deliveries d
          set lease_token = $6, locked_until = $7
         from picked p, webhooks w, webhook_events e
        where d.webhook_id = p.webhook_id and d.event_id = p.event_id and w.id = d.webhook_id and e.id = d.event_id
       returning d.webhook_id, d.event_id, d.tenant_id, d.event_type, d.run_attempts, w.url, w.secret_sealed, w.enabled, e.body`,
      [ids, remaining, opts.now, opts.perWebhook, opts.limit, leaseToken, new Date(opts.now.getTime() + opts.leaseMs)],
    );
    return res.rows.map((r) => ({
      webhookId: r.webhook_id,
      eventId: r.event_id,
      tenantId: r.tenant_id,
      eventType: r.event_type,
      leaseToken,
      runAttempts: r.run_attempts,
      url: r.url,
      secretSealed: r.secret_sealed,
      enabled: r.enabled,
      body: r.body,
    }));
  }

  /**
   * Writes an attempt's outcome and the delivery's next state in one statement:
   * delivered on success; otherwise retried after `delaysMs[n - 1]` (n = attempts made in
   * this run, counted from the end of the failed attempt), or failed once the run has made
   * `delaysMs.length + 1` attempts, or at once when `final` (nothing to retry).
   */
  async record(d: ClaimedDelivery, outcome: AttemptOutcome, delaysMs: readonly number[], final = false): Promise<RecordResult> {
    const maxAttempts = delaysMs.length + 1;
    const res = await this.pool.query<{ status: string }>(
      `with upd as (
         update webhook_deliveries
            set run_attempts = run_attempts + 1,
                total_attempts = total_attempts + 1,
                status = case when $4 then 'delivered' when $10 or run_attempts + 1 >= $8 then 'failed' else 'pending' end,
                next_attempt_at = case when $4 or $10 or run_attempts + 1 >= $8 then null
                                       else $5::timestamptz + (($9::int[])[run_attempts + 1] * interval '1 millisecond') end,
                delivered_at = case when $4 then $5::timestamptz else delivered_at end,
                last_status_code = $6, last_error = $7,
                lease_token = null, locked_until = null, updated_at = $5
          where webhook_id = $1 and event_id = $2 and lease_token = $3
          returning webhook_id, event_id, total_attempts, replays, status
       ), ins as (
         insert into webhook_delivery_attempts (webhook_id, event_id, attempt, run, started_at, status_code, latency_ms, error, success)
         select webhook_id, event_id, total_attempts, replays, $11, $6, $12, $7, $4 from upd
       )
       select status from upd`,
      [d.webhookId, d.eventId, d.leaseToken, outcome.success, outcome.finishedAt, outcome.statusCode, outcome.error, maxAttempts, delaysMs, final, outcome.startedAt, Math.round(outcome.latencyMs)],
    );
    const status = res.rows[0]?.status;
    if (status === undefined) return 'lease-lost';
    return status === 'delivered' ? 'delivered' : status === 'failed' ? 'failed' : 'retry';
  }

  /**
   * When the next pending delivery nobody holds becomes due, ignoring webhooks in
   * `exclude` (this worker's full ones); null when there is none. Held deliveries are not
   * waited for: their holder finishes them, or its lease runs out and the poll finds them.
   */
  async nextDueAt(now: Date, exclude: readonly string[]): Promise<Date | null> {
    const res = await this.pool.query<{ next_attempt_at: Date }>(
      `select next_attempt_at from webhook_deliveries
        where status = 'pending' and (locked_until is null or locked_until <= $1) and webhook_id <> all($2::text[])
        order by next_attempt_at limit 1`,
      [now, exclude],
    );
    return res.rows[0]?.next_attempt_at ?? null;
  }

  /** Deletes events (with their deliveries and attempts) older than `before`; returns how many. */
  async purgeBefore(before: Date): Promise<number> {
    const res = await this.pool.query('delete from webhook_events where created_at < $1', [before]);
    return res.rowCount ?? 0;
  }
}
