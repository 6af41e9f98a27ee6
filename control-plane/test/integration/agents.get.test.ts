import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

const createAgent = (overrides: Record<string, unknown> = {}) => createAgentFor(t.app, tenant.key, overrides);

describe('GET /api/v1/agents/{agentId}', () => {
  it('returns the agent with every field, defaults included', async () => {
    const created = await createAgent({ name: 'Reader', description: 'internal note', firstMessage: 'Hello!', tags: ['a'] });
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${created.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/json');
    const agent = res.json();
    expect(agent).toEqual(created);
    expect(agent).toMatchObject({
      id: created.id,
      name: 'Reader',
      description: 'internal note',
      status: 'draft',
      version: 1,
      publishedVersion: null,
      persona: { name: 'Ava', personality: 'warm', role: 'support' },
      voice: { provider: 'elevenlabs', voiceId: 'voice-1' },
      llm: { provider: 'openai', model: 'gpt-4o-mini' },
      transcription: { provider: 'deepgram', model: 'nova-2', language: 'en-US' },
      systemPromptTemplate: 'You are {{persona}}. Help the caller.',
      firstMessage: 'Hello!',
      firstMessageMode: 'assistant_speaks_first',
      endCallPhrases: [],
      maxDurationSeconds: 600,
      maxIdleTimeSeconds: 30,
      dtmfEnabled: false,
      hipaaCompliant: false,
      silenceDetection: { enabled: false, timeoutSeconds: 10 },
      endpointing: { provider: 'vad', silenceDurationMs: 500, utteranceEndMs: 1000 },
      interruption: { enabled: true, sensitivity: 'medium' },
      voicemailDetection: { enabled: false, action: 'hang_up' },
      recording: { enabled: false, format: 'mp3', storageRetentionDays: 30, stereo: false },
      costTracking: { enabled: true, currency: 'USD' },
      analysisConfig: { enabled: false, sentimentAnalysis: true, intentDetection: true, summaryEnabled: true, customFields: [] },
      knowledgeBaseIds: [],
      tags: ['a'],
    });
    expect(agent.llm).not.toHaveProperty('apiKeySet');
    expect(new Date(agent.updatedAt).toISOString()).toBe(agent.updatedAt);
  });

  it('works with a key that holds only agents:read', async () => {
    const created = await createAgent();
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const res = await call(t.app, readOnly.key, 'GET', `/api/v1/agents/${created.id}`);
    expect(res.statusCode).toBe(200);
    expect(res.json().id).toBe(created.id);
  });

  it('answers 404 not-found for an unknown id and for a string that is not an agent id', async () => {
    const missing = newId('agt');
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${missing}`);
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(res.json()).toMatchObject({ status: 404, detail: expect.stringContaining(missing) });
    expect(res.json().type).toMatch(/\/errors\/not-found$/);
    const junk = await call(t.app, tenant.key, 'GET', '/api/v1/agents/not-an-id');
    expect(junk.statusCode).toBe(404);
    expect(junk.json().type).toMatch(/\/errors\/not-found$/);
  });

  it('needs agents:read (403)', async () => {
    const created = await createAgent();
    const writeOnly = await tenant.mintKey({ scopes: ['agents:write', 'conversations:read'] });
    const res = await call(t.app, writeOnly.key, 'GET', `/api/v1/agents/${created.id}`);
    expect(res.statusCode).toBe(403);
    expect(res.json().type).toMatch(/\/errors\/forbidden$/);
    expect(res.json().detail).toContain('agents:read');
  });

  it('answers 401 without a credential, with a malformed or unknown one', async () => {
    const created = await createAgent();
    const url = `/api/v1/agents/${created.id}`;
    for (const headers of [{}, { authorization: 'Basic abc' }, { authorization: 'Bearer not-a-key' }]) {
      const res = await t.app.inject({ method: 'GET', url, headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().type).toMatch(/\/errors\/unauthorized$/);
      expect(res.body).not.toContain(created.name);
    }
  });

  it('answers 401 for a revoked key and for an expired key', async () => {
    const created = await createAgent();
    const url = `/api/v1/agents/${created.id}`;
    const doomed = await tenant.mintKey({ scopes: ['agents:read'] });
    expect((await call(t.app, doomed.key, 'GET', url)).statusCode).toBe(200);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/api-keys/${doomed.id}`)).statusCode).toBe(204);
    const revoked = await call(t.app, doomed.key, 'GET', url);
    expect(revoked.statusCode).toBe(401);
    expect(revoked.json().detail).toContain('revoked');

    const expired = await tenant.mintKey({ scopes: ['agents:read'], expiresAt: new Date(Date.now() - 60_000) });
    const res = await call(t.app, expired.key, 'GET', url);
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toContain('expired');
  });
});
