import { bigint, date, integer, numeric, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

/**
 * Billing usage of deleted conversations, kept as an anonymous aggregate: one row per
 * tenant, agent, UTC day and channel, with no conversation id, caller or content. Deleting
 * a conversation adds its usage here in the same transaction, so billing totals
 * (conversations plus this table) do not change when a customer deletes call data.
 */
export const deletedConversationUsage = pgTable(
  'deleted_conversation_usage',
  {
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    channel: text('channel').notNull(),
    conversations: integer('conversations').notNull().default(0),
    durationSeconds: bigint('duration_seconds', { mode: 'number' }).notNull().default(0),
    llmInputTokens: bigint('llm_input_tokens', { mode: 'number' }).notNull().default(0),
    llmOutputTokens: bigint('llm_output_tokens', { mode: 'number' }).notNull().default(0),
    ttsCharacters: bigint('tts_characters', { mode: 'number' }).notNull().default(0),
    sttAudioSeconds: numeric('stt_audio_seconds', { precision: 14, scale: 2, mode: 'number' }).notNull().default(0),
    telephonyMinutes: numeric('telephony_minutes', { precision: 14, scale: 4, mode: 'number' }).notNull().default(0),
    llmUsd: numeric('llm_usd', { precision: 14, scale: 6, mode: 'number' }).notNull().default(0),
    ttsUsd: numeric('tts_usd', { precision: 14, scale: 6, mode: 'number' }).notNull().default(0),
    sttUsd: numeric('stt_usd', { precision: 14, scale: 6, mode: 'number' }).notNull().default(0),
    telephonyUsd: numeric('telephony_usd', { precision: 14, scale: 6, mode: 'number' }).notNull().default(0),
    totalUsd: numeric('total_usd', { precision: 14, scale: 6, mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ name: 'deleted_conversation_usage_pk', columns: [t.tenantId, t.agentId, t.day, t.channel] })],
);
