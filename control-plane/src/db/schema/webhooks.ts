import { sql } from 'drizzle-orm';
import { boolean, foreignKey, index, integer, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import type { EventKind } from '@vap/shared';
import { tenants } from './tenants.js';

/**
 * A customer's webhook (spec "Webhook configuration"). The signing secret is stored
 * sealed with the platform key and never shown again after create (docs/api.md
 * "Webhooks"). `agent_id` is not a foreign key: deleting an agent deletes its webhooks in
 * the agent service's transaction, so an agent id can still be checked against the tenant.
 */
export const webhooks = pgTable(
  'webhooks',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    url: text('url').notNull(),
    events: text('events').array().$type<EventKind[]>().notNull(),
    secretSealed: text('secret_sealed').notNull(),
    /** Last four characters of the secret, so a person can tell which one is configured. */
    secretHint: text('secret_hint').notNull(),
    enabled: boolean('enabled').notNull().default(true),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('webhooks_tenant_created_idx').on(t.tenantId, t.createdAt), index('webhooks_agent_idx').on(t.agentId)],
);

/**
 * One platform event that at least one webhook subscribed to, in its exact wire form:
 * `body` is the JSON text that is signed and sent, kept byte-identical across attempts
 * and replays (jsonb would reorder keys).
 */
export const webhookEvents = pgTable(
  'webhook_events',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    type: text('type').$type<EventKind>().notNull(),
    /** The conversation the event is about: deleting a conversation deletes its events (their bodies hold its data). */
    conversationId: text('conversation_id'),
    body: text('body').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [index('webhook_events_created_idx').on(t.createdAt), index('webhook_events_conversation_idx').on(t.conversationId)],
);

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/**
 * One event to one webhook: the durable job behind a delivery and its log entry. Its id
 * is the event id (`X-Webhook-Delivery-Id`), unique within the webhook. A worker claims a
 * due row by setting `lease_token`/`locked_until` (SKIP LOCKED), so several control
 * planes share the work and a crashed worker's claim expires.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    webhookId: text('webhook_id').notNull().references(() => webhooks.id, { onDelete: 'cascade' }),
    eventId: text('event_id').notNull().references(() => webhookEvents.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
    eventType: text('event_type').$type<EventKind>().notNull(),
    status: text('status').$type<DeliveryStatus>().notNull().default('pending'),
    /** Attempts in the current run (1..6); a replay starts a new run. */
    runAttempts: integer('run_attempts').notNull().default(0),
    /** Attempts over all runs; numbers the attempt log. */
    totalAttempts: integer('total_attempts').notNull().default(0),
    replays: integer('replays').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true, mode: 'date' }),
    leaseToken: text('lease_token'),
    lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [
    primaryKey({ columns: [t.webhookId, t.eventId] }),
    // The dispatcher's queue: pending rows by due time.
    index('webhook_deliveries_due_idx').on(t.nextAttemptAt).where(sql`status = 'pending'`),
    index('webhook_deliveries_webhook_due_idx').on(t.webhookId, t.nextAttemptAt).where(sql`status = 'pending'`),
    index('webhook_deliveries_log_idx').on(t.webhookId, t.createdAt),
    index('webhook_deliveries_event_idx').on(t.eventId),
  ],
);

/** One HTTP attempt of a delivery: the delivery log's detail. */
export const webhookDeliveryAttempts = pgTable(
  'webhook_delivery_attempts',
  {
    webhookId: text('webhook_id').notNull(),
    eventId: text('event_id').notNull(),
    attempt: integer('attempt').notNull(),
    /** 0 for the original schedule, n for the n-th replay. */
    run: integer('run').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    error: text('error'),
    success: boolean('success').notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.webhookId, t.eventId, t.attempt] }),
    foreignKey({ name: 'webhook_attempts_delivery_fk', columns: [t.webhookId, t.eventId], foreignColumns: [webhookDeliveries.webhookId, webhookDeliveries.eventId] }).onDelete('cascade'),
  ],
);
