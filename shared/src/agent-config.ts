import { z } from 'zod';
import { LLM_PROVIDERS, STT_PROVIDERS, VOICE_PROVIDERS } from './catalogue.js';
import { isId } from './ids.js';

/*
 * Bounds the spec leaves open are chosen here and documented in docs/agents.md:
 * they follow what the providers themselves accept (ElevenLabs voice settings 0..1,
 * OpenAI sampling parameters) so a stored agent is always one a provider can run.
 */
const int = (min: number, max: number) => z.number().int(`must be an integer from ${min} to ${max}`).min(min, `must be an integer from ${min} to ${max}`).max(max, `must be an integer from ${min} to ${max}`);
const num = (min: number, max: number) => z.number(`must be a number from ${min} to ${max}`).min(min, `must be a number from ${min} to ${max}`).max(max, `must be a number from ${min} to ${max}`);
const text = (max: number) => z.string().max(max, `must be at most ${max} characters`);
const requiredText = (max: number) => z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`);

export const personaSchema = z.strictObject({
  name: requiredText(100),
  personality: text(4000).optional(),
  role: text(200).optional(),
});

export const voiceSchema = z.strictObject({
  provider: z.enum(VOICE_PROVIDERS),
  voiceId: requiredText(200),
  stability: num(0, 1).optional(),
  similarityBoost: num(0, 1).optional(),
  style: num(0, 1).optional(),
  useSpeakerBoost: z.boolean().optional(),
  speed: num(0.5, 2).optional(),
});

export const llmSchema = z.strictObject({
  provider: z.enum(LLM_PROVIDERS),
  model: requiredText(200),
  temperature: num(0, 2).optional(),
  maxTokens: int(1, 32_768).optional(),
  topP: num(0, 1).optional(),
  frequencyPenalty: num(-2, 2).optional(),
  presencePenalty: num(-2, 2).optional(),
  endpointUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2000).optional(),
  /** Write-only: accepted on create/PATCH, stored encrypted, never returned. */
  apiKey: requiredText(1000).optional(),
});

export const transcriptionSchema = z.strictObject({
  provider: z.enum(STT_PROVIDERS),
  model: requiredText(100).optional(),
  language: z
    .string()
    .regex(/^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$/, 'must be a BCP 47 language tag such as en or en-US')
    .optional(),
  smartFormat: z.boolean().optional(),
  punctuate: z.boolean().optional(),
  profanityFilter: z.boolean().optional(),
});

const customFieldSchema = z.strictObject({
  name: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, 'must start with a letter and use letters, digits and _ (at most 64)'),
  type: z.enum(['enum', 'string']),
  options: z.array(requiredText(100)).max(50, 'must have at most 50 items').optional(),
  description: text(500).optional(),
});

/** Every agent field a caller may set, with the defaults a new agent gets. */
export const agentConfigSchema = z.strictObject({
  name: requiredText(100),
  description: text(1000).optional(),
  persona: personaSchema,
  voice: voiceSchema,
  llm: llmSchema,
  transcription: transcriptionSchema,
  systemPromptTemplate: requiredText(50_000),
  firstMessage: text(2000).optional(),
  firstMessageMode: z.enum(['assistant_speaks_first', 'wait_for_user']).default('assistant_speaks_first'),
  endCallPhrases: z.array(requiredText(200)).max(20, 'must have at most 20 items').default([]),
  maxDurationSeconds: int(30, 3600).default(600),
  maxIdleTimeSeconds: int(5, 60).default(30),
  dtmfEnabled: z.boolean().default(false),
  hipaaCompliant: z.boolean().default(false),
  aiDisclosureMessage: text(1000).optional(),
  silenceDetection: z
    .strictObject({ enabled: z.boolean().default(false), timeoutSeconds: int(5, 60).default(10), message: text(500).optional() })
    .default({ enabled: false, timeoutSeconds: 10 }),
  endpointing: z
    .strictObject({ provider: z.enum(['vad', 'stt']).default('vad'), silenceDurationMs: int(100, 5000).default(500), utteranceEndMs: int(500, 5000).default(1000) })
    .default({ provider: 'vad', silenceDurationMs: 500, utteranceEndMs: 1000 }),
  interruption: z.strictObject({ enabled: z.boolean().default(true), sensitivity: z.enum(['low', 'medium', 'high']).default('medium') }).default({ enabled: true, sensitivity: 'medium' }),
  voicemailDetection: z
    .strictObject({ enabled: z.boolean().default(false), action: z.enum(['leave_message', 'hang_up']).default('hang_up'), message: text(1000).optional() })
    .default({ enabled: false, action: 'hang_up' }),
  recording: z
    .strictObject({ enabled: z.boolean().default(false), format: z.enum(['mp3', 'wav']).default('mp3'), storageRetentionDays: int(1, 3650).default(30), stereo: z.boolean().default(false) })
    .default({ enabled: false, format: 'mp3', storageRetentionDays: 30, stereo: false }),
  costTracking: z.strictObject({ enabled: z.boolean().default(true), currency: z.enum(['USD']).default('USD') }).default({ enabled: true, currency: 'USD' }),
  analysisConfig: z
    .strictObject({
      enabled: z.boolean().default(false),
      sentimentAnalysis: z.boolean().default(true),
      intentDetection: z.boolean().default(true),
      summaryEnabled: z.boolean().default(true),
      customFields: z.array(customFieldSchema).max(20, 'must have at most 20 items').default([]),
    })
    .default({ enabled: false, sentimentAnalysis: true, intentDetection: true, summaryEnabled: true, customFields: [] }),
  knowledgeBaseIds: z
    .array(z.string().refine((v) => isId('kb', v), 'must be a knowledge-base document id (kb_…)'))
    .max(50, 'must have at most 50 items')
    .default([]),
  tags: z.array(requiredText(50)).max(20, 'must have at most 20 items').default([]),
});

export type AgentConfig = z.output<typeof agentConfigSchema>;
