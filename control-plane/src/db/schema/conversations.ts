import { sql } from 'drizzle-orm';
import { boolean, index, integer, jsonb, numeric, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export type ConversationStatus = 'in_progress' | 'completed' | 'failed' | 'abandoned';

/** Usage and prices of one call, as stored (spec "Costs" breakdown). */
export interface StoredCosts {
  currency: 'USD';
  total: number;
  llm: { provider: string; model: string; inputTokens: number; outputTokens: number; cost: number };
  tts: { provider: string; characters: number; cost: number };
  stt: { provider: string; audioSeconds: number; cost: number };
  telephony: { provider: string; minutes: number; cost: number };
}

/** The recording of a call as stored (spec "Conversation.recording" plus what the store needs). */
export interface StoredRecording {
  available: boolean;
  format: 'mp3' | 'wav';
  /** 2 = stereo (caller left, agent right), 1 = mono mix. */
  channels: 1 | 2;
  durationSeconds: number;
  sizeBytes: number;
  /** When the retention job deletes it (ISO 8601); the spec's `expiresAt`. */
  expiresAt: string | null;
  /** Set when the retention job deleted the object. */
  deletedAt?: string;
}

/** Latency of one agent reply as stored (bus `turnMetricsSchema`; ms). */
export interface StoredTurnMetrics {
  turnId: string;
  endpointingMs: number;
  sttMs: number;
  /** Knowledge-base retrieval; absent in breakdowns stored before it existed (read as 0). */
  retrievalMs?: number;
  llmFirstTokenMs: number;
  /** First token → first phrase to TTS; absent in breakdowns stored before it existed (read as 0, then part of overhead). */
  llmFirstPhraseMs?: number;
  ttsFirstByteMs: number;
  overheadMs: number;
  totalMs: number;
}

/**
 * One call or chat (spec "Conversation"). `agent_id` is not a foreign key: conversations
 * outlive a deleted agent ("conversations kept"), with its name copied here.
 */
export const conversations = pgTable(
  'conversations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    agentId: text('agent_id').notNull(),
    agentName: text('agent_name').notNull(),
    agentVersion: integer('agent_version').notNull(),
    channel: text('channel').notNull(),
    status: text('status').$type<ConversationStatus>().notNull(),
    direction: text('direction').notNull(),
    provider: text('provider').notNull(),
    /** The carrier's call id (Twilio CallSid): the debug inspector's key, unique per provider. */
    externalId: text('external_id').notNull(),
    callerPhone: text('caller_phone'),
    callerCountry: text('caller_country'),
    calledPhone: text('called_phone'),
    metadata: jsonb('metadata').$type<Record<string, unknown>>().notNull().default({}),
    /** The gateway carrying the call; a gateway that stops its heartbeat fails its calls. */
    gatewayId: text('gateway_id'),
    startedAt: timestamp('started_at', { withTimezone: true, mode: 'date' }).notNull(),
    endedAt: timestamp('ended_at', { withTimezone: true, mode: 'date' }),
    durationSeconds: integer('duration_seconds'),
    endReason: text('end_reason'),
    language: text('language'),
    costs: jsonb('costs').$type<StoredCosts>(),
    costTotalUsd: numeric('cost_total_usd', { precision: 12, scale: 6, mode: 'number' }),
    error: jsonb('error').$type<{ code: string; message: string }>(),
    tags: text('tags').array().notNull().default(sql`'{}'::text[]`),
    outcome: text('outcome'),
    outcomeNotes: text('outcome_notes'),
    analysis: jsonb('analysis').$type<Record<string, unknown>>(),
    recording: jsonb('recording').$type<StoredRecording>(),
    /** Object key of the stored recording in the recording store; null when none is stored. */
    recordingKey: text('recording_key'),
    /** When the retention job deletes the recording (`recording.storageRetentionDays` after the call). */
    recordingExpiresAt: timestamp('recording_expires_at', { withTimezone: true, mode: 'date' }),
    /** Per-turn latency from the gateway's end record, in call order; null until one is stored (in progress, gateway lost). */
    turnMetrics: jsonb('turn_metrics').$type<StoredTurnMetrics[]>(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('conversations_provider_external_key').on(t.provider, t.externalId),
    index('conversations_tenant_started_idx').on(t.tenantId, t.startedAt, t.id),
    // The list's agent filter (the common one) walks this in start order; tags need GIN for @>.
    index('conversations_tenant_agent_started_idx').on(t.tenantId, t.agentId, t.startedAt, t.id),
    index('conversations_tags_idx').using('gin', t.tags),
    index('conversations_in_progress_idx').on(t.gatewayId).where(sql`status = 'in_progress'`),
    index('conversations_recording_expiry_idx').on(t.recordingExpiresAt).where(sql`recording_key IS NOT NULL`),
  ],
);

/** Messages of a conversation (spec "Message"), ordered by `seq`. */
export const conversationMessages = pgTable(
  'conversation_messages',
  {
    id: text('id').primaryKey(),
    conversationId: text('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    role: text('role').$type<'agent' | 'user'>().notNull(),
    content: text('content').notNull(),
    source: text('source').notNull(),
    interrupted: boolean('interrupted').notNull().default(false),
    durationMs: integer('duration_ms').notNull(),
    timestamp: timestamp('timestamp', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (t) => [uniqueIndex('conversation_messages_seq_key').on(t.conversationId, t.seq)],
);

/** Transcript turns with word timings (spec "Transcript"); times in seconds from call start. */
export const transcriptTurns = pgTable(
  'transcript_turns',
  {
    id: text('id').primaryKey(),
    conversationId: text('conversation_id').notNull().references(() => conversations.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    speaker: text('speaker').$type<'agent' | 'user'>().notNull(),
    text: text('text').notNull(),
    startTime: numeric('start_time', { precision: 10, scale: 3, mode: 'number' }).notNull(),
    endTime: numeric('end_time', { precision: 10, scale: 3, mode: 'number' }).notNull(),
    confidence: numeric('confidence', { precision: 5, scale: 4, mode: 'number' }).notNull(),
    words: jsonb('words').$type<{ word: string; startTime: number; endTime: number; confidence: number }[]>().notNull(),
  },
  (t) => [uniqueIndex('transcript_turns_seq_key').on(t.conversationId, t.seq)],
);

/** Last heartbeat of each media gateway (one row per gateway instance). */
export const gatewayHeartbeats = pgTable('gateway_heartbeats', {
  gatewayId: text('gateway_id').primaryKey(),
  intervalMs: integer('interval_ms').notNull(),
  lastSeenAt: timestamp('last_seen_at', { withTimezone: true, mode: 'date' }).notNull(),
  /** Its last heartbeat said it is shutting down and takes no new call. */
  draining: boolean('draining').notNull().default(false),
});
