import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

describe('POST /api/v1/agents', () => {
  it('creates a draft agent at version 1 with defaults filled in', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name: 'Front desk', tags: ['sales', 'sales', 'emea'] }));
    expect(res.statusCode).toBe(201);
    const agent = res.json();
    expect(agent.id).toMatch(/^agt_[0-9a-z]{26}$/);
    expect(agent).toMatchObject({
      name: 'Front desk',
      status: 'draft',
      version: 1,
      publishedVersion: null,
      maxDurationSeconds: 600,
      firstMessageMode: 'assistant_speaks_first',
      interruption: { enabled: true, sensitivity: 'medium' },
      tags: ['sales', 'emea'],
    });
    expect(new Date(agent.createdAt).toISOString()).toBe(agent.createdAt);
    const got = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`);
    expect(got.json()).toEqual(agent);
  });

  it('answers 422 naming each bad field and stating the rule', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ voice: { provider: 'polly', voiceId: 'x' }, maxDurationSeconds: 10, name: 'x'.repeat(101) }));
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json();
    expect(body.type).toMatch(/\/errors\/validation$/);
    expect(body.errors).toEqual(
      expect.arrayContaining([
        { field: 'voice.provider', message: 'must be one of: elevenlabs, google, aws, azure' },
        { field: 'maxDurationSeconds', message: 'must be an integer from 30 to 3600' },
        { field: 'name', message: 'must be at most 100 characters' },
      ]),
    );
  });

  it('checks the model against the provider table', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ llm: { provider: 'anthropic', model: 'gpt-4o' }, transcription: { provider: 'assemblyai', model: 'nova-2' } }));
    expect(res.statusCode).toBe(422);
    const fields = res.json().errors.map((e: { field: string }) => e.field);
    expect(fields).toEqual(['llm.model', 'transcription.model']);
    expect(res.json().errors[0].message).toContain('claude-3-5-sonnet-20241022');
  });

  it('rejects unknown fields by name', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ voice: { provider: 'elevenlabs', voiceId: 'v', pitch: 3 } }));
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field: 'voice.pitch', message: 'is not a known field' }]);
  });

  it('answers 400 for malformed JSON and for missing required fields', async () => {
    const bad = await call(t.app, tenant.key, 'POST', '/api/v1/agents', '{"name": ');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().type).toMatch(/\/errors\/malformed-request$/);
    const missing = await call(t.app, tenant.key, 'POST', '/api/v1/agents', { name: 'No persona' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.map((e: { field: string }) => e.field)).toEqual(['persona', 'voice', 'llm', 'transcription', 'systemPromptTemplate']);
  });

  it('takes any model for huggingface, requires its endpoint, and never returns the key', async () => {
    const noEndpoint = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ llm: { provider: 'huggingface', model: 'my-org/llama' } }));
    expect(noEndpoint.statusCode).toBe(422);
    expect(noEndpoint.json().errors).toEqual([{ field: 'llm.endpointUrl', message: 'is required for provider huggingface' }]);

    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ llm: { provider: 'huggingface', model: 'my-org/llama', endpointUrl: 'https://hf.example.com/v1', apiKey: 'hf_secret_value' } }));
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain('hf_secret_value');
    expect(res.json().llm).toEqual({ provider: 'huggingface', model: 'my-org/llama', endpointUrl: 'https://hf.example.com/v1', apiKeySet: true });
    const versions = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${res.json().id}/versions/1`);
    expect(versions.body).not.toContain('hf_secret_value');
    const { rows } = await t.database.pool.query('select config::text, llm_api_key_encrypted from agents where id = $1', [res.json().id]);
    expect(rows[0].config).not.toContain('hf_secret_value');
    expect(rows[0].llm_api_key_encrypted).not.toContain('hf_secret_value');
  });

  it('answers 409 for a duplicate name in the same tenant, but not across tenants', async () => {
    const body = agentBody({ name: 'Unique Name' });
    expect((await call(t.app, tenant.key, 'POST', '/api/v1/agents', body)).statusCode).toBe(201);
    const dup = await call(t.app, tenant.key, 'POST', '/api/v1/agents', { ...body, name: 'unique name' });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().type).toMatch(/\/errors\/conflict$/);
    const other = await createTenant(t.database);
    expect((await call(t.app, other.key, 'POST', '/api/v1/agents', body)).statusCode).toBe(201);
  });

  it('needs agents:write (403) and a credential (401)', async () => {
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const forbidden = await call(t.app, readOnly.key, 'POST', '/api/v1/agents', agentBody());
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:write');
    expect((await call(t.app, null, 'POST', '/api/v1/agents', agentBody())).statusCode).toBe(401);
  });
});
