import { sql } from 'drizzle-orm';
import { index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export type AgentStatus = 'active' | 'inactive' | 'draft';

/**
 * Name, status and tags are columns (filtered and sorted on); the rest of the
 * configuration is one JSON document, which makes partial updates a deep merge and a
 * version snapshot a copy. The write-only LLM key is kept apart, encrypted.
 */
export const agents = pgTable(
  'agents',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    status: text('status').$type<AgentStatus>().notNull(),
    version: integer('version').notNull(),
    publishedVersion: integer('published_version'),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    config: jsonb('config').$type<Record<string, unknown>>().notNull(),
    /** AES-256-GCM ciphertext of `llm.apiKey` (huggingface endpoints); never returned. */
    llmApiKeyEncrypted: text('llm_api_key_encrypted'),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('agents_tenant_name_key').on(t.tenantId, sql`lower(${t.name})`),
    index('agents_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    index('agents_tenant_updated_idx').on(t.tenantId, t.updatedAt, t.id),
    index('agents_tags_idx').using('gin', t.tags),
  ],
);
