import { describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { compileShaper, immutableBody, trustedSerializerCompiler } from '../../src/http/fast-serializer.js';
import { pageSchema } from '../../src/http/pagination.js';
import { problemSchema } from '../../src/http/problem.js';
import { agentSchema } from '../../src/modules/agents/schemas.js';

type Route = Parameters<typeof zodSerializerCompiler>[0];
const route = (schema: z.ZodType): Route => ({ schema, method: 'GET', url: '/x', httpStatus: '200' }) as unknown as Route;
const both = (schema: z.ZodType) => ({ zod: zodSerializerCompiler(route(schema)), fast: trustedSerializerCompiler(route(schema)) });

const meta = { id: 'agt_1', status: 'draft', version: 3, publishedVersion: null, createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z' };
const required = {
  name: 'Reader',
  persona: { name: 'Ava' },
  voice: { provider: 'elevenlabs', voiceId: 'voice-1' },
  llm: { provider: 'openai', model: 'gpt-4o-mini' },
  transcription: { provider: 'deepgram' },
  systemPromptTemplate: 'You are {{persona}}.',
};

/** A view of an agent stored before the later fields existed: only the required ones. */
const oldRow = { ...meta, ...required };
/** A view with every field set, keys in an order unlike the schema's. */
const fullRow = {
  tags: ['b', 'a'],
  knowledgeBaseIds: [newId('kb')],
  analysisConfig: { customFields: [{ description: 'd', options: ['x', 'y'], type: 'enum', name: 'Outcome' }], summaryEnabled: false, enabled: true },
  costTracking: { currency: 'USD', enabled: false },
  recording: { stereo: true, enabled: true },
  voicemailDetection: { message: 'hi', enabled: true },
  interruption: { sensitivity: 'high' },
  endpointing: { utteranceEndMs: 1200, provider: 'stt' },
  silenceDetection: { message: 'still there?', enabled: true },
  aiDisclosureMessage: 'I am an AI',
  hipaaCompliant: true,
  dtmfEnabled: true,
  maxIdleTimeSeconds: 12,
  maxDurationSeconds: 900,
  endCallPhrases: ['bye'],
  firstMessageMode: 'wait_for_user',
  firstMessage: 'Hello!',
  systemPromptTemplate: 'p',
  transcription: { punctuate: true, language: 'en-US', model: 'nova-2', provider: 'deepgram', smartFormat: false, profanityFilter: true },
  llm: { apiKeySet: true, endpointUrl: 'https://example.com/v1', presencePenalty: 0, frequencyPenalty: -1, topP: 0.5, maxTokens: 100, temperature: 0.7, model: 'm', provider: 'huggingface' },
  voice: { speed: 1.1, useSpeakerBoost: true, style: 0, similarityBoost: 0.3, stability: 0.5, voiceId: 'v', provider: 'elevenlabs' },
  persona: { role: 'support', personality: 'warm', name: 'Ava' },
  description: 'note',
  name: 'Full',
  ...meta,
  publishedVersion: 2,
  status: 'active',
};

describe('trustedSerializerCompiler', () => {
  it('keeps the JSON of a body marked immutable and stringifies anything else on every call', () => {
    const { zod, fast } = both(agentSchema);
    const frozen = immutableBody(Object.freeze({ ...fullRow }));
    const json = fast(frozen);
    expect(json).toBe(zod(frozen));
    expect(fast(frozen)).toBe(json);
    const open: Record<string, unknown> = { ...fullRow };
    expect(fast(open)).toBe(json);
    open.name = 'Renamed';
    expect(JSON.parse(fast(open))).toMatchObject({ name: 'Renamed' });
    // Another marked object with other content gets its own JSON.
    expect(JSON.parse(fast(immutableBody(Object.freeze({ ...fullRow, name: 'Other' }))))).toMatchObject({ name: 'Other' });
    // Frozen but not marked (only its top level may be frozen): serialized on every call.
    const shallow = Object.freeze({ ...fullRow, tags: ['a'] });
    expect(JSON.parse(fast(shallow)).tags).toEqual(['a']);
    shallow.tags.push('b');
    expect(JSON.parse(fast(shallow)).tags).toEqual(['a', 'b']);
  });

  it('writes the same bytes as the zod serializer for agents old and new', () => {
    const { zod, fast } = both(agentSchema);
    for (const row of [oldRow, fullRow, { ...oldRow, description: undefined, llm: { ...required.llm, apiKeySet: undefined } }]) {
      expect(fast(row)).toBe(zod(row));
    }
    // The old row really is filled in with the later fields' defaults.
    const out = JSON.parse(fast(oldRow)) as Record<string, unknown>;
    expect(out).toMatchObject({ firstMessageMode: 'assistant_speaks_first', silenceDetection: { enabled: false, timeoutSeconds: 10 }, tags: [], knowledgeBaseIds: [] });
    expect(Object.keys(out)).toEqual(Object.keys(agentSchema.shape).filter((k) => !['description', 'firstMessage', 'aiDisclosureMessage'].includes(k)));
  });

  it('fills nested defaults inside a partly stored object, as zod does', () => {
    const { zod, fast } = both(agentSchema);
    const row = { ...oldRow, endpointing: { provider: 'stt' }, analysisConfig: { enabled: true }, recording: {} };
    expect(fast(row)).toBe(zod(row));
    expect(JSON.parse(fast(row))).toMatchObject({ endpointing: { provider: 'stt', silenceDurationMs: 500, utteranceEndMs: 1000 }, recording: { format: 'mp3', storageRetentionDays: 30 } });
  });

  it('drops keys the schema does not name (write-only secrets never leak)', () => {
    const { fast } = both(agentSchema);
    const out = JSON.parse(fast({ ...oldRow, llm: { ...required.llm, apiKey: 'sk-secret' }, tenantId: 'ten_1', llmApiKeyEncrypted: 'x' })) as Record<string, unknown>;
    expect(JSON.stringify(out)).not.toContain('sk-secret');
    expect(out).not.toHaveProperty('tenantId');
    expect(out).not.toHaveProperty('llmApiKeyEncrypted');
  });

  it('shapes pages and problems like zod', () => {
    const page = both(pageSchema(agentSchema));
    const body = { data: [fullRow, oldRow], page: 1, pageSize: 20, total: 2, totalPages: 1 };
    expect(page.fast(body)).toBe(page.zod(body));
    const problem = both(problemSchema);
    const p = { type: 't', title: 'T', status: 422, detail: 'd', traceId: 'trace_1', errors: [{ field: 'name', message: 'm', extra: 1 }] };
    expect(problem.fast(p)).toBe(problem.zod(p));
  });

  it('keeps the zod serializer for constructs it does not model', () => {
    expect(compileShaper(z.union([z.string(), z.number()]))).toBeNull();
    expect(compileShaper(z.string().transform((s) => s.length))).toBeNull();
    expect(compileShaper(z.looseObject({ a: z.string() }))).toBeNull();
    const { fast } = both(z.object({ a: z.string().transform((s) => s.length) }));
    expect(fast({ a: 'abc' })).toBe('{"a":3}');
  });
});
