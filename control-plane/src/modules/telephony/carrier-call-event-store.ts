import { and, asc, eq, inArray, sql } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import { newId } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { carrierCallEvents } from '../../db/schema/carrier-call-events.js';
import type { CarrierCallEventProvider } from '../../db/schema/carrier-call-events.js';
import { storableText } from '../../db/storable-text.js';

/** How long carrier call events are kept (housekeeping deletes older ones). */
export const CARRIER_CALL_EVENT_RETENTION_DAYS = 90;

const PROVIDERS: readonly CarrierCallEventProvider[] = ['twilio', 'telnyx', 'vonage'];

/** One call-status callback as a webhook route read it (carrier values, unmapped). */
export interface CarrierCallEventInput {
  provider: CarrierCallEventProvider;
  callSid: string;
  status: string;
  detail?: string | undefined;
  /** The carrier's duration field as sent (a string of seconds); anything else is stored as null. */
  duration?: string | undefined;
  /** The carrier's event time as sent (ISO 8601, RFC 2822); unreadable or absent → receipt time. */
  timestamp?: string | undefined;
  /** The called number (E.164), for the tenant of a call that has no conversation yet. */
  calledNumber?: string | undefined;
}

/** What became of an event: stored, already stored (a redelivery), or not stored (database failure, logged). */
export type CarrierCallEventResult = 'stored' | 'duplicate' | 'failed';

/** An event as the admin call inspector shows it. */
export interface CarrierCallEventView {
  provider: CarrierCallEventProvider;
  status: string;
  detail: string | null;
  durationSeconds: number | null;
  occurredAt: string;
}

/** A carrier's seconds field: whole non-negative seconds within int4, else null (never a failed insert). */
export function parseDurationSeconds(raw: string | undefined): number | null {
  if (raw === undefined || !/^\d{1,9}$/.test(raw.trim())) return null;
  return Number(raw.trim());
}

/** A carrier's event time, or undefined when absent or not a date (the caller falls back to receipt time). */
export function parseCarrierTimestamp(raw: string | undefined): Date | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const ms = Date.parse(raw);
  return Number.isNaN(ms) ? undefined : new Date(ms);
}

/**
 * Stores carrier call-status callbacks in `carrier_call_events` (see the table for the
 * deduplication key and deletion rules) and reads them back for the admin inspector.
 */
export class CarrierCallEventStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Inserts one event with the conversation stored under its call id at receipt and the
   * tenant of that conversation, else of the called number (one statement, so nothing is
   * half-written). Never throws: the webhook answers the carrier the same either way, since
   * a 5xx would only make it send the event again while the database is down.
   */
  async record(raw: CarrierCallEventInput, log: FastifyBaseLogger): Promise<CarrierCallEventResult> {
    // Carrier text with a NUL or an unpaired surrogate is kept with U+FFFD (Postgres refuses both); such a call id matches no conversation.
    const input = storableText(raw);
    const receivedAt = this.now();
    const occurredAt = parseCarrierTimestamp(input.timestamp) ?? receivedAt;
    try {
      const { rows } = await this.db.execute<{ id: string }>(sql`
        insert into carrier_call_events
          (id, provider, call_sid, status, detail, duration_seconds, occurred_at, received_at, conversation_id, tenant_id)
        select ${newId('cce')}, ${input.provider}, ${input.callSid}, ${input.status}, ${input.detail ?? null},
               ${parseDurationSeconds(input.duration)}::int, ${occurredAt.toISOString()}::timestamptz, ${receivedAt.toISOString()}::timestamptz,
               c.id, coalesce(c.tenant_id, n.tenant_id)
          from (select 1) as one
          left join lateral (
            select id, tenant_id from conversations
             where provider = ${input.provider} and external_id = ${input.callSid}
             order by started_at desc limit 1
          ) as c on true
          left join lateral (
            select tenant_id from phone_numbers
             where phone_number = ${input.calledNumber ?? null} and status <> 'released'
             limit 1
          ) as n on true
        on conflict (provider, call_sid, status, occurred_at) do nothing
        returning id
      `);
      return rows.length > 0 ? 'stored' : 'duplicate';
    } catch (err) {
      log.warn({ err, provider: input.provider, callSid: input.callSid, callStatus: input.status }, 'carrier call event could not be stored');
      return 'failed';
    }
  }

  /** The events of a carrier call id on any carrier, oldest first (by the carrier's time, then arrival). */
  async listForCall(callSid: string): Promise<CarrierCallEventView[]> {
    const rows = await this.db
      .select({
        provider: carrierCallEvents.provider,
        status: carrierCallEvents.status,
        detail: carrierCallEvents.detail,
        durationSeconds: carrierCallEvents.durationSeconds,
        occurredAt: carrierCallEvents.occurredAt,
      })
      .from(carrierCallEvents)
      // The provider list lets the (provider, call_sid) index serve a lookup by call id alone.
      .where(and(inArray(carrierCallEvents.provider, [...PROVIDERS]), eq(carrierCallEvents.callSid, callSid)))
      .orderBy(asc(carrierCallEvents.occurredAt), asc(carrierCallEvents.receivedAt), asc(carrierCallEvents.id));
    return rows.map((r) => ({ ...r, occurredAt: r.occurredAt.toISOString() }));
  }

  /**
   * Deletes events received before `before`, `batchSize` rows per statement so a large
   * backlog never holds one long lock; answers how many went.
   */
  async purgeBefore(before: Date, batchSize = 1000): Promise<number> {
    let purged = 0;
    for (;;) {
      const { rowCount } = await this.db.execute(sql`
        delete from carrier_call_events where id in (
          select id from carrier_call_events where received_at < ${before.toISOString()}::timestamptz
           limit ${batchSize} for update skip locked)
      `);
      purged += rowCount ?? 0;
      if ((rowCount ?? 0) < batchSize) return purged;
    }
  }
}
