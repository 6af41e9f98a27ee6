import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
/** The caller. */
let mine: TestTenant;
/** The owner of the agent the caller must not reach. */
let theirs: TestTenant;
let theirAgent: { id: string; name: string };

beforeAll(async () => {
  t = await createTestApp();
  mine = await createTenant(t.database);
  theirs = await createTenant(t.database);
  const res = await call(t.app, theirs.key, 'POST', '/api/v1/agents', agentBody({ name: 'Their agent', tags: ['private'] }));
  expect(res.statusCode).toBe(201);
  theirAgent = res.json();
  expect((await call(t.app, theirs.key, 'PATCH', `/api/v1/agents/${theirAgent.id}`, { description: 'v2' })).statusCode).toBe(200);
  expect((await call(t.app, theirs.key, 'POST', `/api/v1/agents/${theirAgent.id}/activate`)).statusCode).toBe(200);
});
afterAll(async () => t.close());

type Method = 'GET' | 'PATCH' | 'DELETE' | 'POST';

/** Every agent route that takes an id, with a body that would succeed on the caller's own agent. */
const ROUTES: { method: Method; path: (id: string) => string; body?: unknown }[] = [
  { method: 'GET', path: (id) => `/api/v1/agents/${id}` },
  { method: 'PATCH', path: (id) => `/api/v1/agents/${id}`, body: { description: 'hijacked', voice: { stability: 0.1 } } },
  { method: 'POST', path: (id) => `/api/v1/agents/${id}/activate` },
  { method: 'POST', path: (id) => `/api/v1/agents/${id}/deactivate` },
  { method: 'POST', path: (id) => `/api/v1/agents/${id}/publish`, body: { notes: 'hijacked' } },
  { method: 'POST', path: (id) => `/api/v1/agents/${id}/duplicate`, body: { name: 'Stolen copy' } },
  { method: 'GET', path: (id) => `/api/v1/agents/${id}/versions` },
  { method: 'GET', path: (id) => `/api/v1/agents/${id}/versions/1` },
  { method: 'GET', path: (id) => `/api/v1/agents/${id}/versions/2` },
  // Last, so that if it wrongly succeeded the routes above still ran against a live agent.
  { method: 'DELETE', path: (id) => `/api/v1/agents/${id}` },
];

async function snapshot(key: string, id: string) {
  const agent = await call(t.app, key, 'GET', `/api/v1/agents/${id}`);
  const versions = await call(t.app, key, 'GET', `/api/v1/agents/${id}/versions`);
  return { agent: agent.json(), versions: versions.json() };
}

describe("another tenant's agent", () => {
  it('answers 404 on every agent route exactly as a missing id does, and is left unchanged', async () => {
    const before = await snapshot(theirs.key, theirAgent.id);
    expect(before.agent).toMatchObject({ status: 'active', version: 2 });
    const missingId = newId('agt');
    for (const route of ROUTES) {
      const label = `${route.method} ${route.path(':id')}`;
      const foreign = await call(t.app, mine.key, route.method, route.path(theirAgent.id), route.body);
      const missing = await call(t.app, mine.key, route.method, route.path(missingId), route.body);
      expect(missing.statusCode, label).toBe(404);
      expect(foreign.statusCode, label).toBe(missing.statusCode);
      expect(foreign.headers['content-type'], label).toBe(missing.headers['content-type']);
      expect(foreign.json().type, label).toBe(missing.json().type);
      expect(foreign.json().title, label).toBe(missing.json().title);
      expect(foreign.json().detail, label).toBe(missing.json().detail.replace(missingId, theirAgent.id));
      expect(foreign.body, label).not.toContain('Their agent');
    }
    expect(await snapshot(theirs.key, theirAgent.id)).toEqual(before);
  });

  it('never appears in the list, a search or a tag filter', async () => {
    expect((await call(t.app, mine.key, 'POST', '/api/v1/agents', agentBody({ name: 'My agent' }))).statusCode).toBe(201);
    for (const query of ['', '?search=Their', '?tags=private', '?status=active']) {
      const res = await call(t.app, mine.key, 'GET', `/api/v1/agents${query}`);
      expect(res.statusCode, query).toBe(200);
      expect(res.json().data.map((a: { id: string }) => a.id), query).not.toContain(theirAgent.id);
      expect(res.body, query).not.toContain('Their agent');
    }
    expect((await call(t.app, mine.key, 'GET', '/api/v1/agents?search=Their')).json().total).toBe(0);
  });

  it('does not block the caller from using the same name', async () => {
    const res = await call(t.app, mine.key, 'POST', '/api/v1/agents', agentBody({ name: 'their AGENT' }));
    expect(res.statusCode).toBe(201);
    const dup = await call(t.app, mine.key, 'POST', `/api/v1/agents/${res.json().id}/duplicate`, { name: 'Their agent copy' });
    expect(dup.statusCode).toBe(201);
    expect((await call(t.app, theirs.key, 'GET', '/api/v1/agents')).json().total).toBe(1);
  });
});
