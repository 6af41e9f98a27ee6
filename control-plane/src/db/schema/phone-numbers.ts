import { sql } from 'drizzle-orm';
import { index, numeric, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';
import { tenants } from './tenants.js';

export type NumberProvider = 'twilio' | 'telnyx' | 'vonage';

/** `active` routes calls; `released` was given back to the carrier and is kept for stats and billing. */
export type NumberStatus = 'active' | 'released';

/**
 * A phone number the platform answers (spec "Phone number"). The voice loop only reads
 * it to route an inbound call; provisioning through the carriers is the telephony issue's.
 * A number routes to at most one tenant: E.164 is unique across the platform among numbers
 * not released. A released number keeps its row (status `released`, `released_at`) so
 * statistics and billing still see it, and the same E.164 can be provisioned again.
 */
export const phoneNumbers = pgTable(
  'phone_numbers',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    phoneNumber: text('phone_number').notNull(),
    friendlyName: text('friendly_name'),
    country: text('country').notNull(),
    provider: text('provider').$type<NumberProvider>().notNull(),
    /** The carrier's id for the number (Twilio `PN…`), when it has one. */
    providerSid: text('provider_sid'),
    capabilities: text('capabilities').array().notNull().default(sql`'{voice}'::text[]`),
    assignedAgentId: text('assigned_agent_id').references(() => agents.id, { onDelete: 'set null' }),
    status: text('status').$type<NumberStatus>().notNull().default('active'),
    monthlyCostUsd: numeric('monthly_cost_usd', { precision: 10, scale: 4, mode: 'number' }).notNull().default(0),
    provisionedAt: timestamp('provisioned_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    /** When the number was given back to the carrier; null while it is held. */
    releasedAt: timestamp('released_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('phone_numbers_e164_key').on(t.phoneNumber).where(sql`status <> 'released'`), index('phone_numbers_tenant_idx').on(t.tenantId, t.provisionedAt)],
);
