import { index, integer, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { conversations } from './conversations.js';
import { tenants } from './tenants.js';

/** Carriers whose call-status callbacks are stored. */
export type CarrierCallEventProvider = 'twilio' | 'telnyx' | 'vonage';

/**
 * One call-status callback of a carrier (Twilio status callback, Vonage event webhook), as
 * the carrier sent it: the admin call inspector shows them, including for calls that never
 * got a conversation (ended while ringing). `status` is the carrier's own value, not mapped.
 *
 * Carriers retry deliveries: the unique key (provider, call_sid, status, occurred_at) makes a
 * redelivered event a no-op (`on conflict do nothing`). When the carrier sends no timestamp,
 * `occurred_at` is the receipt time and a redelivery cannot be told apart from a new event.
 *
 * Deleting a conversation deletes the events of its call (by `conversation_id` through the
 * foreign key, and by provider and call id in the delete's transaction, for events that
 * arrived before the conversation existed); housekeeping deletes events after 90 days.
 */
export const carrierCallEvents = pgTable(
  'carrier_call_events',
  {
    id: text('id').primaryKey(),
    provider: text('provider').$type<CarrierCallEventProvider>().notNull(),
    /** The carrier's call id: Twilio `CallSid`, Vonage `uuid`. */
    callSid: text('call_sid').notNull(),
    status: text('status').notNull(),
    detail: text('detail'),
    durationSeconds: integer('duration_seconds'),
    /** The carrier's timestamp of the event when it sends one, else `received_at`. */
    occurredAt: timestamp('occurred_at', { withTimezone: true, mode: 'date' }).notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true, mode: 'date' }).notNull(),
    /** The conversation stored under this call id when the event arrived. */
    conversationId: text('conversation_id').references(() => conversations.id, { onDelete: 'cascade' }),
    /** From the conversation, else from the called number; null when neither is known. */
    tenantId: text('tenant_id').references(() => tenants.id, { onDelete: 'cascade' }),
  },
  (t) => [
    // Also serves the lookups of one call's events (provider, call_sid): they are its prefix.
    uniqueIndex('carrier_call_events_delivery_key').on(t.provider, t.callSid, t.status, t.occurredAt),
    // The housekeeping purge walks the oldest rows (our clock: a carrier's timestamp may be off).
    index('carrier_call_events_received_idx').on(t.receivedAt),
    index('carrier_call_events_conversation_idx').on(t.conversationId),
  ],
);
