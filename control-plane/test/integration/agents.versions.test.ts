import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;
let writer: { id: string; key: string };

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  writer = await tenant.mintKey();
});
afterAll(async () => t.close());

async function createAgent(overrides: Record<string, unknown> = {}) {
  const res = await call(t.app, writer.key, 'POST', '/api/v1/agents', agentBody(overrides));
  expect(res.statusCode).toBe(201);
  return res.json();
}

async function patch(id: string, body: unknown) {
  const res = await call(t.app, writer.key, 'PATCH', `/api/v1/agents/${id}`, body);
  expect(res.statusCode).toBe(200);
  return res.json();
}

function get(url: string, key = tenant.key) {
  return call(t.app, key, 'GET', url);
}

describe('GET /api/v1/agents/{agentId}/versions', () => {
  it('lists the creation record of a new agent, under data only', async () => {
    const agent = await createAgent();
    const res = await get(`/api/v1/agents/${agent.id}/versions`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual(['data']);
    expect(body.data).toEqual([{ version: 1, createdAt: expect.any(String), createdBy: writer.id, changesSummary: 'Created', changedFields: [] }]);
    expect(new Date(body.data[0].createdAt).toISOString()).toBe(body.data[0].createdAt);
  });

  it('lists every version newest first, each with what changed', async () => {
    const agent = await createAgent();
    await patch(agent.id, { voice: { stability: 0.5 } });
    await patch(agent.id, { name: `${agent.name} renamed`, tags: ['t'] });
    const data = (await get(`/api/v1/agents/${agent.id}/versions`)).json().data;
    expect(data.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    expect(data[0]).toMatchObject({ changedFields: ['name', 'tags'], changesSummary: 'Changed name, tags', createdBy: writer.id });
    expect(data[1]).toMatchObject({ changedFields: ['voice.stability'], changesSummary: 'Changed voice.stability' });
    expect(data[0]).not.toHaveProperty('config');
    const stamps = data.map((v: { createdAt: string }) => Date.parse(v.createdAt));
    expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
  });

  it('answers 404 for an unknown agent', async () => {
    const res = await get(`/api/v1/agents/${newId('agt')}/versions`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/not-found$/);
  });

  it('needs agents:read (403) and a credential (401)', async () => {
    const agent = await createAgent();
    const writeOnly = await tenant.mintKey({ scopes: ['agents:write'] });
    const forbidden = await get(`/api/v1/agents/${agent.id}/versions`, writeOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:read');
    expect((await call(t.app, null, 'GET', `/api/v1/agents/${agent.id}/versions`)).statusCode).toBe(401);
  });
});

describe('GET /api/v1/agents/{agentId}/versions/{versionNumber}', () => {
  it('returns the record with the full configuration as it was at that version', async () => {
    const agent = await createAgent({ description: 'first' });
    await patch(agent.id, { voice: { stability: 0.5 }, description: 'second' });
    const current = await patch(agent.id, { voice: { stability: 0.9 }, description: null });

    const v1 = (await get(`/api/v1/agents/${agent.id}/versions/1`)).json();
    expect(v1).toMatchObject({ version: 1, changesSummary: 'Created', changedFields: [], createdBy: writer.id });
    expect(v1.config.description).toBe('first');
    expect(v1.config.voice).toEqual({ provider: 'elevenlabs', voiceId: 'voice-1' });

    const v2 = (await get(`/api/v1/agents/${agent.id}/versions/2`)).json();
    expect(v2).toMatchObject({ version: 2, changedFields: ['description', 'voice.stability'] });
    expect(v2.config.voice.stability).toBe(0.5);
    expect(v2.config.description).toBe('second');

    const v3 = (await get(`/api/v1/agents/${agent.id}/versions/3`)).json();
    expect(v3.config.voice.stability).toBe(0.9);
    expect(v3.config).not.toHaveProperty('description');
    const { id: _i, status: _s, version: _v, publishedVersion: _p, createdAt: _c, updatedAt: _u, ...settings } = current;
    expect(v3.config).toEqual(settings);
  });

  it('matches the record in the list', async () => {
    const agent = await createAgent();
    await patch(agent.id, { firstMessage: 'Hello' });
    const listed = (await get(`/api/v1/agents/${agent.id}/versions`)).json().data[0];
    const { config, ...record } = (await get(`/api/v1/agents/${agent.id}/versions/2`)).json();
    expect(record).toEqual(listed);
    expect(config.firstMessage).toBe('Hello');
  });

  it('answers 404 for a version that does not exist and for an unknown agent', async () => {
    const agent = await createAgent();
    for (const url of [`/api/v1/agents/${agent.id}/versions/2`, `/api/v1/agents/${agent.id}/versions/99`, `/api/v1/agents/${newId('agt')}/versions/1`]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.json().type, url).toMatch(/\/errors\/not-found$/);
    }
  });

  it('answers 422 naming versionNumber when it is not a positive integer', async () => {
    const agent = await createAgent();
    for (const n of ['abc', '0', '-1', '1.5']) {
      const res = await get(`/api/v1/agents/${agent.id}/versions/${n}`);
      expect(res.statusCode, n).toBe(422);
      expect(res.json().type).toMatch(/\/errors\/validation$/);
      expect(res.json().errors.map((e: { field: string }) => e.field), n).toEqual(['versionNumber']);
    }
  });

  it('needs agents:read (403) and a credential (401)', async () => {
    const agent = await createAgent();
    const writeOnly = await tenant.mintKey({ scopes: ['agents:write'] });
    const forbidden = await get(`/api/v1/agents/${agent.id}/versions/1`, writeOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().detail).toContain('agents:read');
    expect((await call(t.app, null, 'GET', `/api/v1/agents/${agent.id}/versions/1`)).statusCode).toBe(401);
  });
});
