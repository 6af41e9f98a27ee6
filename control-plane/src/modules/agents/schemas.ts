import { z } from 'zod';
import { LLM_PROVIDERS, STT_PROVIDERS, VOICE_PROVIDERS, isId } from '@vap/shared';
import { pageQueryShape } from '../../http/pagination.js';

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

/**
 * The PATCH body: every field of the create schema optional at every depth, `null`
 * clearing an optional field. Rules that span fields (model for provider, required
 * fields) are checked on the merged result.
 */
function deepPartial(schema: z.ZodType): z.ZodType {
  if (schema instanceof z.ZodDefault || schema instanceof z.ZodOptional) return deepPartial(schema.unwrap() as z.ZodType);
  if (schema instanceof z.ZodObject) {
    const shape = Object.fromEntries(Object.entries(schema.shape as Record<string, z.ZodType>).map(([k, v]) => [k, deepPartial(v).nullable().optional()]));
    return z.strictObject(shape);
  }
  return schema;
}

export const agentPatchSchema = (deepPartial(agentConfigSchema) as z.ZodObject).describe('Any agent fields; nested objects may be partial; null clears an optional field.');

const llmOutSchema = llmSchema.omit({ apiKey: true }).extend({ apiKeySet: z.boolean().optional().describe('true when a write-only apiKey is stored') });

/** An agent as returned: no write-only secrets (the serializer drops unknown keys too). */
export const agentSchema = agentConfigSchema
  .extend({
    id: z.string(),
    status: z.enum(['active', 'inactive', 'draft']),
    version: z.number().int(),
    publishedVersion: z.number().int().nullable(),
    llm: llmOutSchema,
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Agent' });

export const agentIdParams = z.object({ agentId: z.string().min(1) });
export const versionParams = z.object({
  agentId: z.string().min(1),
  versionNumber: z.coerce.number().int('must be a positive integer').min(1, 'must be a positive integer'),
});

export const listAgentsQuery = z.strictObject({
  ...pageQueryShape,
  status: z.enum(['active', 'inactive', 'draft']).optional(),
  search: z.string().max(100).optional(),
  tags: z.string().max(1100).optional().describe('Comma-separated tags'),
  tagsMatch: z.enum(['any', 'all']).default('any').describe('any: agents with at least one of the tags; all: agents with every tag'),
  sortBy: z.enum(['name', 'createdAt', 'updatedAt']).default('createdAt'),
});
export type ListAgentsQuery = z.infer<typeof listAgentsQuery>;

export const versionRecordSchema = z
  .object({
    version: z.number().int(),
    createdAt: z.string(),
    createdBy: z.string(),
    changesSummary: z.string(),
    changedFields: z.array(z.string()),
    publishedAt: z.string().optional(),
    publishNotes: z.string().optional(),
  })
  .meta({ id: 'AgentVersion' });

export const versionDetailSchema = versionRecordSchema.extend({ config: z.record(z.string(), z.unknown()).describe('The full configuration at this version (secrets excluded)') });

export const publishBody = z.strictObject({ notes: text(2000).optional() }).nullish();
export const duplicateBody = z.strictObject({ name: requiredText(100) });
