import { sql } from 'drizzle-orm';
import { integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { agents } from './agents.js';

/** One row per agent version: a full snapshot of the configuration (secrets excluded). */
export const agentVersions = pgTable(
  'agent_versions',
  {
    agentId: text('agent_id').notNull().references(() => agents.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
    version: integer('version').notNull(),
    snapshot: jsonb('snapshot').$type<Record<string, unknown>>().notNull(),
    changedFields: text('changed_fields').array().notNull().default(sql`'{}'::text[]`),
    changesSummary: text('changes_summary').notNull(),
    createdBy: text('created_by').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    publishedAt: timestamp('published_at', { withTimezone: true, mode: 'date' }),
    publishNotes: text('publish_notes'),
  },
  (t) => [primaryKey({ columns: [t.agentId, t.version] })],
);
