import { and, desc, eq } from 'drizzle-orm';
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/database.js';
import { conversations } from '../../db/schema/conversations.js';
import { CarrierCallEventStore } from './carrier-call-event-store.js';
import { unstorableTextReason } from '../../db/storable-text.js';

/** Vonage call statuses after which the call is over (reference/telephony-vonage.md §4). */
export const VONAGE_FINAL_STATUSES: ReadonlySet<string> = new Set(['completed', 'failed', 'rejected', 'busy', 'cancelled', 'unanswered', 'timeout']);

/** One event webhook body, as far as this module reads it. */
export interface VonageCallEvent {
  status?: string;
  /** The call leg; `human`/`machine` events carry `call_uuid` instead (§4). */
  uuid?: string;
  call_uuid?: string;
  conversation_uuid?: string;
  direction?: string;
  detail?: string;
  duration?: string;
  /** Present on call-flow errors, which have no status. */
  reason?: string;
  /** When the event happened (ISO 8601, §4); stored as the event's time. */
  timestamp?: string;
  /** The called number, E.164 (the route adds the `+`): the tenant of a call with no conversation. */
  to?: string;
}

/** What {@link VonageCallStatus.record} found for an event (returned for tests and logs). */
export type VonageEventOutcome =
  | { kind: 'error-report' }
  | { kind: 'no-conversation'; final: boolean }
  | { kind: 'lookup-failed'; final: boolean }
  | { kind: 'conversation'; conversationId: string; conversationStatus: string; final: boolean };

/**
 * Records Vonage call-status events against the platform's view of the call. The
 * conversation of a call is created by the media gateway when the WebSocket connects,
 * keyed by the carrier call id (`external_id` = Vonage `uuid`), so:
 * - a final status for a call with no conversation is a call that ended before its
 *   stream connected (caller hung up while ringing, the socket failed): there is nothing
 *   to close, and the platform stays consistent by storing nothing;
 * - a final status for a conversation still `in_progress` is normal (the carrier's event
 *   and the gateway's end record race); the gateway's end record, or the lost-gateway
 *   watchdog, closes it with the real transcript and usage, which this event does not have.
 * The conversation is not changed: the events are logged with the conversation they belong
 * to, and each status event is stored in `carrier_call_events` for the admin inspector
 * (call-flow errors have no status and no call id, so they are only logged). A failing lookup
 * or insert (database down) still logs the status: a 5xx would only make Vonage send it again.
 */
export class VonageCallStatus {
  private readonly events: CarrierCallEventStore;

  constructor(private readonly db: Db) {
    this.events = new CarrierCallEventStore(db);
  }

  async record(event: VonageCallEvent, log: FastifyBaseLogger): Promise<VonageEventOutcome> {
    const outcome = await this.lookUp(event, log);
    const uuid = event.uuid ?? event.call_uuid;
    if (event.status !== undefined && uuid) {
      await this.events.record(
        { provider: 'vonage', callSid: uuid, status: event.status, detail: event.detail, duration: event.duration, timestamp: event.timestamp, calledNumber: event.to },
        log,
      );
    }
    return outcome;
  }

  /** Finds the event's conversation and logs the event with it. */
  private async lookUp(event: VonageCallEvent, log: FastifyBaseLogger): Promise<VonageEventOutcome> {
    const uuid = event.uuid ?? event.call_uuid;
    if (event.status === undefined) {
      log.warn({ provider: 'vonage', conversationUuid: event.conversation_uuid, reason: event.reason }, 'Vonage reported a call-flow error');
      return { kind: 'error-report' };
    }
    const final = VONAGE_FINAL_STATUSES.has(event.status);
    const base = { provider: 'vonage', callSid: uuid, callStatus: event.status, detail: event.detail, durationSec: event.duration };
    let row: { id: string; status: string } | undefined;
    try {
      // A call id Postgres cannot hold (a NUL, an unpaired surrogate) is no call of ours.
      [row] = uuid && unstorableTextReason(uuid) === null
        ? await this.db
            .select({ id: conversations.id, status: conversations.status })
            .from(conversations)
            .where(and(eq(conversations.provider, 'vonage'), eq(conversations.externalId, uuid)))
            .orderBy(desc(conversations.startedAt))
            .limit(1)
        : [];
    } catch (err) {
      log.warn({ ...base, err }, 'Vonage call status; its conversation could not be looked up');
      return { kind: 'lookup-failed', final };
    }
    const fields = { ...base, conversationId: row?.id, conversationStatus: row?.status };
    if (!row) {
      log.info(fields, final ? 'Vonage call ended before its media stream connected' : 'Vonage call status');
      return { kind: 'no-conversation', final };
    }
    log.info(fields, 'Vonage call status');
    return { kind: 'conversation', conversationId: row.id, conversationStatus: row.status, final };
  }
}
