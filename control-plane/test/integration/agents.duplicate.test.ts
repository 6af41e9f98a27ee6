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

function duplicate(id: string, body: unknown, key = tenant.key) {
  return call(t.app, key, 'POST', `/api/v1/agents/${id}/duplicate`, body);
}

/** The settings of an agent: everything but identity, name, state and timestamps. */
function settingsOf(agent: Record<string, unknown>): Record<string, unknown> {
  const { id: _i, name: _n, status: _s, version: _v, publishedVersion: _p, createdAt: _c, updatedAt: _u, ...settings } = agent;
  return settings;
}

describe('POST /api/v1/agents/{agentId}/duplicate', () => {
  it('creates a new inactive agent at version 1 with the same settings, leaving the source unchanged', async () => {
    const source = await createAgent({ description: 'original', tags: ['x', 'y'], voice: { provider: 'azure', voiceId: 'en-US-Jenny', speed: 1.1 }, maxDurationSeconds: 900 });
    await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${source.id}`, { llm: { temperature: 0.3 } });
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${source.id}/activate`);
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${source.id}/publish`, { notes: 'stable' });
    const sourceBefore = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${source.id}`)).json();
    expect(sourceBefore).toMatchObject({ status: 'active', version: 2, publishedVersion: 2 });

    const res = await duplicate(source.id, { name: 'The copy' });
    expect(res.statusCode).toBe(201);
    const copy = res.json();
    expect(copy.id).toMatch(/^agt_[0-9a-z]{26}$/);
    expect(copy.id).not.toBe(source.id);
    expect(copy).toMatchObject({ name: 'The copy', status: 'inactive', version: 1, publishedVersion: null });
    expect(settingsOf(copy)).toEqual(settingsOf(sourceBefore));
    expect(copy.llm.temperature).toBe(0.3);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${copy.id}`)).json()).toEqual(copy);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${source.id}`)).json()).toEqual(sourceBefore);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${source.id}/versions`)).json().data).toHaveLength(2);
  });

  it('gives the copy one version record saying where it came from', async () => {
    const writer = await tenant.mintKey();
    const source = await createAgent();
    const copy = (await duplicate(source.id, { name: 'Copy with history' }, writer.key)).json();
    const versions = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${copy.id}/versions`);
    expect(versions.statusCode).toBe(200);
    const data = versions.json().data;
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({ version: 1, createdBy: writer.id, changedFields: [] });
    expect(data[0].changesSummary).toMatch(/^Duplicated from /);
    expect(data[0].changesSummary).toContain(source.id);
    const v1 = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${copy.id}/versions/1`)).json();
    expect(v1.config).toMatchObject({ name: 'Copy with history', persona: source.persona, voice: source.voice });
  });

  it('duplicates a draft into an inactive agent', async () => {
    const source = await createAgent();
    const copy = (await duplicate(source.id, { name: 'From a draft' })).json();
    expect(copy.status).toBe('inactive');
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${source.id}`)).json().status).toBe('draft');
  });

  it('carries a stored huggingface key over without returning it', async () => {
    const source = await createAgent({ llm: { provider: 'huggingface', model: 'org/llama', endpointUrl: 'https://hf.example.com/v1', apiKey: 'hf_dup_secret' } });
    const res = await duplicate(source.id, { name: 'HF copy' });
    expect(res.statusCode).toBe(201);
    expect(res.body).not.toContain('hf_dup_secret');
    expect(res.json().llm).toEqual({ provider: 'huggingface', model: 'org/llama', endpointUrl: 'https://hf.example.com/v1', apiKeySet: true });
  });

  it('answers 409 for a name already used in the tenant, ignoring case', async () => {
    const source = await createAgent({ name: 'Source agent' });
    await createAgent({ name: 'Existing agent' });
    const before = (await call(t.app, tenant.key, 'GET', '/api/v1/agents')).json().total;
    for (const name of ['existing AGENT', 'source agent']) {
      const res = await duplicate(source.id, { name });
      expect(res.statusCode, name).toBe(409);
      expect(res.json().type).toMatch(/\/errors\/conflict$/);
    }
    expect((await call(t.app, tenant.key, 'GET', '/api/v1/agents')).json().total).toBe(before);
  });

  it('answers 400 without a name and 422 for a bad one or an unknown field', async () => {
    const source = await createAgent();
    const missing = await duplicate(source.id, {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors.map((e: { field: string }) => e.field)).toEqual(['name']);
    const empty = await duplicate(source.id, { name: '   ' });
    expect(empty.statusCode).toBe(422);
    expect(empty.json().errors).toEqual([{ field: 'name', message: 'must not be empty' }]);
    const long = await duplicate(source.id, { name: 'x'.repeat(101) });
    expect(long.statusCode).toBe(422);
    expect(long.json().errors).toEqual([{ field: 'name', message: 'must be at most 100 characters' }]);
    const extra = await duplicate(source.id, { name: 'Fine', status: 'active' });
    expect(extra.statusCode).toBe(422);
    expect(extra.json().errors).toEqual([{ field: 'status', message: 'is not a known field' }]);
  });

  it('answers 404 for an unknown source', async () => {
    const res = await duplicate(newId('agt'), { name: 'Orphan' });
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/not-found$/);
  });

  it('needs agents:write (403) and a credential (401)', async () => {
    const source = await createAgent();
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const forbidden = await duplicate(source.id, { name: 'Nope' }, readOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:write');
    expect((await call(t.app, null, 'POST', `/api/v1/agents/${source.id}/duplicate`, { name: 'Nope' })).statusCode).toBe(401);
    expect((await call(t.app, tenant.key, 'GET', '/api/v1/agents?search=Nope')).json().total).toBe(0);
  });
});
