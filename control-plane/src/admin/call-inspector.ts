import { desc, eq, sql } from 'drizzle-orm';
import type { Db } from '../db/database.js';
import { conversations } from '../db/schema/conversations.js';
import { CarrierCallEventStore } from '../modules/telephony/carrier-call-event-store.js';
import type { CarrierCallEventView } from '../modules/telephony/carrier-call-event-store.js';

/** A conversation as the debug inspector shows it: capitalised enum values (spec "Telephony debug"). */
export interface InspectedConversation {
  id: string;
  tenantId: string;
  agentId: string;
  channel: string;
  status: string;
  startedAt: string;
  endedAt: string | null;
  durationSeconds: number | null;
  callerIdentifier: string | null;
  outcome: string | null;
  /** USD. */
  costTotal: number | null;
  messageCount: number;
}

/** What the inspector found for a provider call id. */
export interface InspectedCall {
  callSid: string;
  conversation: InspectedConversation | null;
  outboundCall: null;
  /** The carriers' call-status callbacks for this call id, oldest first. */
  carrierEvents: CarrierCallEventView[];
}

/** Channel names of this endpoint: a phone call is a `Voice` conversation, a browser one `Web`. */
const CHANNELS: Record<string, string> = { phone: 'Voice', webrtc: 'Web', webchat: 'WebChat', sms: 'Sms', whatsapp: 'WhatsApp', telegram: 'Telegram' };

/** `in_progress` → `InProgress`, `callback_scheduled` → `CallbackScheduled`. */
export function pascalCase(value: string): string {
  return value
    .split(/[_\s-]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
}

/** A stored channel as this endpoint names it (see the table in docs/api.md). */
export function inspectorChannel(channel: string): string {
  return CHANNELS[channel] ?? pascalCase(channel);
}

/**
 * Looks a provider call id up for the admin debug inspector: the conversation whose
 * `external_id` it is (the most recent one if two carriers reused an id) and the carriers'
 * status events for it. A call with events but no conversation (it ended while ringing, or
 * its stream never connected) is a match with `conversation: null`; null only when neither
 * exists. Read-only.
 */
export class CallInspector {
  private readonly events: CarrierCallEventStore;

  constructor(private readonly db: Db) {
    this.events = new CarrierCallEventStore(db);
  }

  async find(callSid: string): Promise<InspectedCall | null> {
    const [row] = await this.db
      .select({
        id: conversations.id,
        tenantId: conversations.tenantId,
        agentId: conversations.agentId,
        channel: conversations.channel,
        status: conversations.status,
        startedAt: conversations.startedAt,
        endedAt: conversations.endedAt,
        durationSeconds: conversations.durationSeconds,
        callerPhone: conversations.callerPhone,
        outcome: conversations.outcome,
        costTotalUsd: conversations.costTotalUsd,
        // Qualified by hand: drizzle renders a column in `sql` unqualified, and an unqualified
        // "id" inside the subquery would be the message's id.
        messageCount: sql<number>`(select count(*)::int from conversation_messages m where m.conversation_id = "conversations"."id")`,
      })
      .from(conversations)
      .where(eq(conversations.externalId, callSid))
      .orderBy(desc(conversations.startedAt))
      .limit(1);
    // Not yet: also look the id up in outbound calls (provider call id) once that table exists:
    // an outbound call fills `outboundCall` {to, from, status, provider, retryCount, error, timestamps}
    // and may have no conversation (never connected). Until then `outboundCall` is always null.
    const carrierEvents = await this.events.listForCall(callSid);
    if (!row) return carrierEvents.length > 0 ? { callSid, conversation: null, outboundCall: null, carrierEvents } : null;
    return {
      callSid,
      conversation: {
        id: row.id,
        tenantId: row.tenantId,
        agentId: row.agentId,
        channel: inspectorChannel(row.channel),
        status: pascalCase(row.status),
        startedAt: row.startedAt.toISOString(),
        endedAt: row.endedAt ? row.endedAt.toISOString() : null,
        durationSeconds: row.durationSeconds,
        callerIdentifier: row.callerPhone,
        outcome: row.outcome ? pascalCase(row.outcome) : null,
        costTotal: row.costTotalUsd,
        messageCount: Number(row.messageCount),
      },
      outboundCall: null,
      carrierEvents,
    };
  }
}
