import { z } from 'zod';
import { pageQueryShape } from '../../http/pagination.js';

export const conversationIdParams = z.object({ conversationId: z.string().min(1) });

const callerSchema = z.object({
  phoneNumber: z.string().nullable().describe('E.164; null when the caller is not a phone number (WebRTC, withheld)'),
  country: z.string().nullable().describe('ISO 3166-1 alpha-2 country of the number'),
});

export const costSummarySchema = z
  .object({ totalUsd: z.number(), llmUsd: z.number(), ttsUsd: z.number(), sttUsd: z.number(), telephonyUsd: z.number() })
  .meta({ id: 'ConversationCostSummary' });

const sentimentSchema = z.enum(['positive', 'neutral', 'negative']).nullable();
const sentimentScoreSchema = z.number().min(-1).max(1).nullable().describe('-1 very negative … 1 very positive; null when sentimentAnalysis is off');
const analysisCustomFieldsSchema = z
  .record(z.string(), z.string().nullable())
  .describe("Every custom field of the agent's analysisConfig: an enum value is one of its options; null when the conversation did not tell or no valid value was produced");

/** A conversation's `analysis`: the spec's summary fields. Parts switched off are null. */
export const analysisSummarySchema = z
  .object({ sentiment: sentimentSchema, sentimentScore: sentimentScoreSchema, intent: z.string().nullable(), summary: z.string().nullable(), customFields: analysisCustomFieldsSchema })
  .meta({ id: 'ConversationAnalysisSummary' });

/** Spec "Analysis". A part switched off in analysisConfig is null, as is a field the model never got valid. */
export const analysisSchema = z
  .object({
    conversationId: z.string(),
    completedAt: z.string(),
    sentiment: sentimentSchema,
    sentimentScore: sentimentScoreSchema,
    sentimentBreakdown: z.object({ agent: z.number().min(-1).max(1), user: z.number().min(-1).max(1) }).nullable(),
    intent: z.string().nullable().describe('snake_case label of what the caller wanted; null when intentDetection is off'),
    entities: z.array(z.object({ type: z.string(), value: z.string() })).nullable(),
    summary: z.string().nullable().describe('null when summaryEnabled is off'),
    topics: z.array(z.string()).nullable(),
    customFields: analysisCustomFieldsSchema,
    callQualityScore: z.number().min(0).max(10).nullable().describe('0 poor … 10 excellent'),
    agentPerformanceNotes: z.string().nullable(),
  })
  .meta({ id: 'ConversationAnalysis' });

const recordingSchema = z.object({
  available: z.boolean(),
  durationSeconds: z.number().int().nullable(),
  format: z.string().nullable(),
  expiresAt: z.string().nullable(),
});

/** A conversation (spec "Conversation"), plus `endReason`. */
export const conversationSchema = z
  .object({
    id: z.string(),
    agentId: z.string(),
    agentName: z.string(),
    channel: z.enum(['phone', 'webrtc', 'webchat', 'sms', 'whatsapp', 'telegram']),
    status: z.enum(['in_progress', 'completed', 'failed', 'abandoned']),
    direction: z.enum(['inbound', 'outbound']),
    startedAt: z.string(),
    endedAt: z.string().nullable().describe('null while in progress'),
    durationSeconds: z.number().int().nullable().describe('null while in progress'),
    endReason: z
      .string()
      .nullable()
      .describe('Why it ended: user_ended, agent_ended, max_duration, idle_timeout, error, gateway_shutdown, gateway_lost; null while in progress'),
    caller: callerSchema,
    metadata: z.record(z.string(), z.unknown()),
    cost: costSummarySchema.nullable().describe('null while in progress, or when the gateway was lost before reporting usage'),
    analysis: analysisSummarySchema.nullable().describe('null until the AI analysis is done (see GET …/analysis for all its fields)'),
    recording: recordingSchema,
    tags: z.array(z.string()),
    outcome: z.string().nullable(),
    outcomeNotes: z.string().nullable().describe('Notes set with the outcome (not in the spec)'),
  })
  .meta({ id: 'Conversation' });

export const messagesSchema = z
  .object({
    conversationId: z.string(),
    messages: z.array(
      z.object({
        id: z.string(),
        role: z.enum(['agent', 'user']),
        content: z.string().describe('For an interrupted agent message: what was spoken before the caller cut in'),
        timestamp: z.string(),
        durationMs: z.number().int(),
        interrupted: z.boolean().describe('The caller barged in while the agent was speaking this message'),
      }),
    ),
  })
  .meta({ id: 'ConversationMessages' });

const wordSchema = z.object({ word: z.string(), startTime: z.number(), endTime: z.number(), confidence: z.number() });

export const transcriptSchema = z
  .object({
    conversationId: z.string(),
    language: z.string().nullable().describe('null while in progress'),
    durationSeconds: z.number().int().nullable().describe('null while in progress'),
    turns: z.array(
      z.object({
        id: z.string(),
        speaker: z.enum(['agent', 'user']),
        text: z.string(),
        startTime: z.number().describe('Seconds from the start of the call'),
        endTime: z.number().describe('Seconds from the start of the call'),
        confidence: z.number().min(0).max(1),
        words: z.array(wordSchema),
      }),
    ),
  })
  .meta({ id: 'Transcript' });

export const costsSchema = z
  .object({
    conversationId: z.string(),
    currency: z.literal('USD'),
    total: z.number(),
    breakdown: z.object({
      llm: z.object({ provider: z.string(), model: z.string(), inputTokens: z.number().int(), outputTokens: z.number().int(), cost: z.number() }),
      tts: z.object({ provider: z.string(), characters: z.number().int(), cost: z.number() }),
      stt: z.object({ provider: z.string(), audioSeconds: z.number(), cost: z.number() }),
      telephony: z.object({ provider: z.string(), minutes: z.number().int().describe('Billed minutes: every started minute counts'), cost: z.number() }),
    }),
  })
  .meta({ id: 'ConversationCosts' });

export const CHANNELS = ['phone', 'webrtc', 'webchat', 'sms', 'whatsapp', 'telegram'] as const;
export const CONVERSATION_STATUSES = ['in_progress', 'completed', 'failed', 'abandoned'] as const;
/** The spec's outcome values ("values seen"); the set is closed here so filters and reports agree. */
export const OUTCOMES = ['resolved', 'escalated', 'callback_scheduled', 'unresolved', 'abandoned'] as const;
export const MAX_TAGS = 50;
const tag = z.string().trim().min(1, 'must not be empty').max(64, 'must be at most 64 characters');

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** `YYYY-MM-DD` (a whole UTC day) or an ISO 8601 instant with offset. */
const isoDate = z.iso.date();
const isoInstant = z.iso.datetime({ offset: true });
const dateBound = z.string().refine((v) => isoDate.safeParse(v).success || isoInstant.safeParse(v).success, 'must be a date (YYYY-MM-DD) or an ISO 8601 timestamp');

/** Start of `dateFrom`; for a date-only `dateTo`, the end of that day (both inclusive, UTC). */
export function dateRange(from: string | undefined, to: string | undefined): { from: Date | undefined; to: Date | undefined } {
  const toDate = to === undefined ? undefined : DATE_ONLY.test(to) ? new Date(Date.parse(`${to}T00:00:00Z`) + 86_400_000 - 1) : new Date(to);
  return { from: from === undefined ? undefined : new Date(DATE_ONLY.test(from) ? `${from}T00:00:00Z` : from), to: toDate };
}

const checkRange = (q: { dateFrom?: string; dateTo?: string }, ctx: z.RefinementCtx) => {
  const { from, to } = dateRange(q.dateFrom, q.dateTo);
  if (from && to && from > to) ctx.addIssue({ code: 'custom', path: ['dateTo'], message: 'must not be before dateFrom' });
};

export const listConversationsQuery = z
  .strictObject({
    ...pageQueryShape,
    agentId: z.string().min(1).optional(),
    channel: z.enum(CHANNELS).optional(),
    status: z.enum(CONVERSATION_STATUSES).optional(),
    direction: z.enum(['inbound', 'outbound']).optional(),
    dateFrom: dateBound.optional().describe('Conversations started at or after; a date means 00:00 UTC of that day'),
    dateTo: dateBound.optional().describe('Conversations started at or before; a date means the whole day (UTC)'),
    outcome: z.enum(OUTCOMES).optional(),
    tags: z
      .string()
      .optional()
      .transform((v, ctx) => {
        if (v === undefined) return undefined;
        const list = [...new Set(v.split(',').map((t) => t.trim()))];
        if (list.some((t) => t.length === 0)) ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of non-empty tags' });
        return list;
      })
      .describe('Comma list; a conversation must carry every tag listed'),
    minDuration: z.coerce.number().int('must be a whole number of seconds').min(0, 'must be 0 or more').optional().describe('Seconds; conversations in progress (no duration yet) are left out'),
    sortBy: z.enum(['startedAt', 'durationSeconds', 'cost']).default('startedAt'),
  })
  .superRefine(checkRange);
export type ListConversationsQuery = z.infer<typeof listConversationsQuery>;

export const addTagsBody = z.strictObject({
  tags: z
    .array(tag)
    .min(1, 'must list at least one tag')
    .max(MAX_TAGS, `must list at most ${MAX_TAGS} tags`),
});
export const setOutcomeBody = z.strictObject({
  outcome: z.enum(OUTCOMES),
  notes: z.string().max(2000, 'must be at most 2000 characters').nullable().optional().describe('Free text; absent or null clears the notes'),
});
export const tagsResultSchema = z.object({ conversationId: z.string(), tags: z.array(z.string()) }).meta({ id: 'ConversationTags' });
export const outcomeResultSchema = z.object({ conversationId: z.string(), outcome: z.enum(OUTCOMES), notes: z.string().nullable() }).meta({ id: 'ConversationOutcome' });

export type ConversationView = z.infer<typeof conversationSchema>;
export type MessagesView = z.infer<typeof messagesSchema>;
export type TranscriptView = z.infer<typeof transcriptSchema>;
export type CostsView = z.infer<typeof costsSchema>;
export type AnalysisView = z.infer<typeof analysisSchema>;
export type AnalysisSummaryView = z.infer<typeof analysisSummarySchema>;

/** `GET /agents/{agentId}/stats`: the list's date filters (same meaning, same validation). */
export const agentStatsQuery = z
  .strictObject({
    dateFrom: dateBound.optional().describe('Conversations started at or after; a date means 00:00 UTC of that day. Default: 29 days before dateTo'),
    dateTo: dateBound.optional().describe('Conversations started at or before; a date means the whole day (UTC). Default: today (UTC)'),
  })
  .superRefine(checkRange);
export type AgentStatsQuery = z.infer<typeof agentStatsQuery>;
export const agentIdParams = z.object({ agentId: z.string().min(1) });

export const agentStatsSchema = z
  .object({
    agentId: z.string(),
    period: z.object({ from: z.string(), to: z.string() }).describe('The bounds used, as given (dates, or instants when instants were given)'),
    totalConversations: z.number().int().describe('Conversations started in the period, in any status (the list total for the same filters)'),
    totalDurationSeconds: z.number().int().describe('Sum over ended conversations'),
    avgDurationSeconds: z.number().int().describe('Mean over ended conversations, rounded; 0 when none ended'),
    totalCostUsd: z.number(),
    avgCostUsdPerConversation: z.number().describe('Mean over priced (ended) conversations; 0 when none'),
    channelBreakdown: z.record(z.string(), z.number().int()),
    outcomeBreakdown: z.record(z.string(), z.number().int()).describe('Conversations with an outcome set, by outcome'),
    avgSentimentScore: z.number().nullable().describe('Mean sentimentScore of analysed conversations; null when none was analysed'),
  })
  .meta({ id: 'AgentStatistics' });
export type AgentStatsView = z.infer<typeof agentStatsSchema>;

/** The slices of a reply's latency that add up to `totalMs`, as `slowestStage` names them. */
export const LATENCY_STAGES = ['endpointing', 'retrieval', 'llmFirstToken', 'llmFirstPhrase', 'ttsFirstByte', 'overhead'] as const;

/** `GET /conversations/{id}/latency`: where the time of each agent reply went (not in the spec). */
export const latencySchema = z
  .object({
    conversationId: z.string(),
    turns: z
      .array(
        z.object({
          turnId: z.string(),
          endpointingMs: z.number().int().describe("End of the caller's speech → the turn decision"),
          sttMs: z.number().int().describe("End of the caller's speech → final transcript (runs inside the endpointing wait)"),
          retrievalMs: z.number().int().describe("Turn decision → the agent's knowledge-base passages in hand (0 for agents without knowledgeBaseIds)"),
          llmFirstTokenMs: z.number().int().describe('LLM request → first token'),
          llmFirstPhraseMs: z
            .number()
            .int()
            .describe("LLM first token → the reply's first phrase complete and sent to TTS (the LLM's text pace; 0 in breakdowns stored before this field, where it is part of overheadMs)"),
          ttsFirstByteMs: z.number().int().describe('First sentence to TTS → first audio byte'),
          overheadMs: z.number().int().describe('The rest: queues, pacing, transport, the platform itself'),
          totalMs: z.number().int().describe("End of the caller's speech → first agent audio sent to the carrier"),
        }),
      )
      .describe('One entry per agent reply to a caller turn, in call order (the greeting is not a reply)'),
    summary: z.object({
      turns: z.number().int(),
      p50TotalMs: z.number().int().nullable().describe('Nearest-rank median of totalMs; null without turns'),
      p95TotalMs: z.number().int().nullable().describe('Nearest-rank 95th percentile of totalMs; null without turns'),
      maxTotalMs: z.number().int().nullable(),
      slowestStage: z.enum(LATENCY_STAGES).nullable().describe('The stage with the most time summed over all turns; null without turns'),
    }),
  })
  .meta({ id: 'ConversationLatency' });
export type LatencyView = z.infer<typeof latencySchema>;
