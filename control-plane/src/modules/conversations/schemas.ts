import { z } from 'zod';

export const conversationIdParams = z.object({ conversationId: z.string().min(1) });

const callerSchema = z.object({
  phoneNumber: z.string().nullable().describe('E.164; null when the caller is not a phone number (WebRTC, withheld)'),
  country: z.string().nullable().describe('ISO 3166-1 alpha-2 country of the number'),
});

export const costSummarySchema = z
  .object({ totalUsd: z.number(), llmUsd: z.number(), ttsUsd: z.number(), sttUsd: z.number(), telephonyUsd: z.number() })
  .meta({ id: 'ConversationCostSummary' });

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
    analysis: z.record(z.string(), z.unknown()).nullable().describe('null until the AI analysis has run'),
    recording: recordingSchema,
    tags: z.array(z.string()),
    outcome: z.string().nullable(),
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

export type ConversationView = z.infer<typeof conversationSchema>;
export type MessagesView = z.infer<typeof messagesSchema>;
export type TranscriptView = z.infer<typeof transcriptSchema>;
export type CostsView = z.infer<typeof costsSchema>;
