import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serializerCompiler as zodSerializerCompiler } from 'fastify-type-provider-zod';
import { call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { agentSchema } from '../../src/modules/agents/schemas.js';

/**
 * Agents stored before later fields existed: the agent routes serialize without re-validating
 * (http/fast-serializer.ts), so the body must still be what the zod serializer wrote, defaults
 * of the missing fields included.
 */
let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

const zodSerialize = zodSerializerCompiler({ schema: agentSchema, method: 'GET', url: '/agents/:agentId', httpStatus: '200' } as unknown as Parameters<typeof zodSerializerCompiler>[0]);
const LATER_FIELDS = ['firstMessageMode', 'endCallPhrases', 'silenceDetection', 'endpointing', 'interruption', 'voicemailDetection', 'recording', 'costTracking', 'analysisConfig', 'knowledgeBaseIds'];

describe('agents stored with an older configuration shape', () => {
  it('come back with the defaults of the fields they lack, byte-equal to the zod serializer', async () => {
    const created = await createAgentFor(t.app, tenant.key, { name: 'Old timer' });
    // Strip the later fields from the stored row, and part of a nested object.
    await t.database.pool.query(`update agents set config = (config - $2::text[]) || jsonb_build_object('endpointing', jsonb_build_object('provider', 'stt')) where id = $1`, [
      created.id,
      LATER_FIELDS.filter((f) => f !== 'endpointing'),
    ]);
    const { rows } = await t.database.pool.query<{ config: Record<string, unknown> }>('select config from agents where id = $1', [created.id]);
    expect(rows[0]!.config).not.toHaveProperty('recording');

    const res = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${created.id}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({
      firstMessageMode: 'assistant_speaks_first',
      endCallPhrases: [],
      endpointing: { provider: 'stt', silenceDurationMs: 500, utteranceEndMs: 1000 },
      recording: { enabled: false, format: 'mp3', storageRetentionDays: 30, stereo: false },
      analysisConfig: { enabled: false, customFields: [] },
      knowledgeBaseIds: [],
    });
    // Same bytes as the zod serializer writes for the same view.
    expect(res.body).toBe(zodSerialize(body));
    const { endpointing: _e, ...rest } = created;
    expect(body).toEqual({ ...rest, endpointing: body.endpointing });

    const list = await call(t.app, tenant.key, 'GET', '/api/v1/agents');
    expect(list.json().data.find((a: { id: string }) => a.id === created.id)).toEqual(body);
  });
});
