import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;

// Created in this order (so createdAt ascending), each name starting with a different capital.
const NAMES = ['Alpha desk', 'Bravo line', 'Charlie 100% off', 'Delta_team', 'Echo back\\slash'];
const ids: Record<string, string> = {};

async function list(query: string, key = tenant.key) {
  return call(t.app, key, 'GET', `/api/v1/agents${query ? `?${query}` : ''}`);
}

async function namesOf(query: string): Promise<string[]> {
  const res = await list(query);
  expect(res.statusCode).toBe(200);
  return res.json().data.map((a: { name: string }) => a.name);
}

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  const tags: Record<string, string[]> = {
    'Alpha desk': ['sales', 'emea'],
    'Bravo line': ['sales'],
    'Charlie 100% off': ['support', 'emea'],
    'Delta_team': ['support'],
    'Echo back\\slash': [],
  };
  for (const name of NAMES) {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name, tags: tags[name] }));
    expect(res.statusCode).toBe(201);
    ids[name] = res.json().id;
  }
  // Alpha active, Charlie inactive, the rest drafts.
  expect((await call(t.app, tenant.key, 'POST', `/api/v1/agents/${ids['Alpha desk']}/activate`)).statusCode).toBe(200);
  expect((await call(t.app, tenant.key, 'POST', `/api/v1/agents/${ids['Charlie 100% off']}/activate`)).statusCode).toBe(200);
  expect((await call(t.app, tenant.key, 'POST', `/api/v1/agents/${ids['Charlie 100% off']}/deactivate`)).statusCode).toBe(200);

  // Another tenant with look-alike agents that must never show up here.
  const other = await createTenant(t.database);
  for (const name of ['Alpha desk', 'Zulu other']) {
    const res = await call(t.app, other.key, 'POST', '/api/v1/agents', agentBody({ name, tags: ['sales', 'emea', 'support'] }));
    expect(res.statusCode).toBe(201);
    expect((await call(t.app, other.key, 'POST', `/api/v1/agents/${res.json().id}/activate`)).statusCode).toBe(200);
  }
});
afterAll(async () => t.close());

describe('GET /api/v1/agents', () => {
  it("lists only the caller's agents, newest first, with the page fields and defaults", async () => {
    const res = await list('');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(['data', 'page', 'pageSize', 'total', 'totalPages']);
    expect(body).toMatchObject({ page: 1, pageSize: 20, total: 5, totalPages: 1 });
    expect(body.data.map((a: { name: string }) => a.name)).toEqual([...NAMES].reverse());
    expect(body.data.map((a: { id: string }) => a.id)).toEqual(NAMES.map((n) => ids[n]).reverse());
  });

  it('returns each agent exactly as GET /agents/{id} does', async () => {
    const res = await list('search=alpha');
    expect(res.json().data).toHaveLength(1);
    const got = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${ids['Alpha desk']}`);
    expect(res.json().data[0]).toEqual(got.json());
  });

  it('pages through the results with page and pageSize', async () => {
    const p1 = (await list('pageSize=2')).json();
    expect(p1).toMatchObject({ page: 1, pageSize: 2, total: 5, totalPages: 3 });
    expect(p1.data.map((a: { name: string }) => a.name)).toEqual(['Echo back\\slash', 'Delta_team']);
    const p2 = (await list('pageSize=2&page=2')).json();
    expect(p2).toMatchObject({ page: 2, pageSize: 2, total: 5, totalPages: 3 });
    expect(p2.data.map((a: { name: string }) => a.name)).toEqual(['Charlie 100% off', 'Bravo line']);
    const p3 = (await list('pageSize=2&page=3')).json();
    expect(p3.data.map((a: { name: string }) => a.name)).toEqual(['Alpha desk']);
    const beyond = (await list('pageSize=2&page=4')).json();
    expect(beyond).toMatchObject({ data: [], page: 4, pageSize: 2, total: 5, totalPages: 3 });
  });

  it('accepts pageSize 100 and refuses 0, 101 and page 0 with 422 naming the field', async () => {
    expect((await list('pageSize=100')).json()).toMatchObject({ pageSize: 100, total: 5 });
    for (const [query, field] of [
      ['pageSize=0', 'pageSize'],
      ['pageSize=101', 'pageSize'],
      ['page=0', 'page'],
      ['page=abc', 'page'],
      ['pageSize=2.5', 'pageSize'],
    ] as const) {
      const res = await list(query);
      expect(res.statusCode, query).toBe(422);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json().type).toMatch(/\/errors\/validation$/);
      expect(res.json().errors.map((e: { field: string }) => e.field), query).toEqual([field]);
    }
    expect((await list('pageSize=101')).json().errors[0].message).toBe('must be an integer from 1 to 100');
  });

  it('filters by status', async () => {
    expect(await namesOf('status=active')).toEqual(['Alpha desk']);
    expect(await namesOf('status=inactive')).toEqual(['Charlie 100% off']);
    expect(await namesOf('status=draft')).toEqual(['Echo back\\slash', 'Delta_team', 'Bravo line']);
    const res = await list('status=paused');
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toEqual(['status']);
  });

  it('searches names case-insensitively by substring', async () => {
    expect(await namesOf('search=DESK')).toEqual(['Alpha desk']);
    expect(await namesOf('search=lin')).toEqual(['Bravo line']);
    expect(await namesOf('search=ha')).toEqual(['Charlie 100% off', 'Alpha desk']);
    expect(await namesOf('search=nothing-like-this')).toEqual([]);
    expect((await list('search=DESK')).json().total).toBe(1);
  });

  it('matches %, _ and \\ in search literally, not as wildcards', async () => {
    expect(await namesOf(`search=${encodeURIComponent('%')}`)).toEqual(['Charlie 100% off']);
    expect(await namesOf(`search=${encodeURIComponent('0%')}`)).toEqual(['Charlie 100% off']);
    expect(await namesOf('search=_')).toEqual(['Delta_team']);
    expect(await namesOf(`search=${encodeURIComponent('a_t')}`)).toEqual(['Delta_team']);
    expect(await namesOf(`search=${encodeURIComponent('\\')}`)).toEqual(['Echo back\\slash']);
  });

  it('filters by tags: any of them by default, every one with tagsMatch=all', async () => {
    expect(await namesOf('tags=emea')).toEqual(['Charlie 100% off', 'Alpha desk']);
    expect(await namesOf('tags=emea,support')).toEqual(['Delta_team', 'Charlie 100% off', 'Alpha desk']);
    expect(await namesOf('tags=emea,support&tagsMatch=any')).toEqual(['Delta_team', 'Charlie 100% off', 'Alpha desk']);
    expect(await namesOf('tags=sales,emea&tagsMatch=all')).toEqual(['Alpha desk']);
    expect(await namesOf(`tags=${encodeURIComponent('support, emea')}&tagsMatch=all`)).toEqual(['Charlie 100% off']);
    expect(await namesOf('tags=sales,support&tagsMatch=all')).toEqual([]);
    expect(await namesOf('tags=unknown')).toEqual([]);
    expect((await list('tags=emea,support')).json().total).toBe(3);
    const bad = await list('tags=sales&tagsMatch=some');
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors.map((e: { field: string }) => e.field)).toEqual(['tagsMatch']);
  });

  it('combines filters', async () => {
    expect(await namesOf('status=draft&tags=sales,support')).toEqual(['Delta_team', 'Bravo line']);
    expect(await namesOf('status=draft&tags=sales&search=bravo')).toEqual(['Bravo line']);
    expect(await namesOf('status=active&tags=support')).toEqual([]);
  });

  it('sorts by name and createdAt in either order', async () => {
    expect(await namesOf('sortBy=name&sortOrder=asc')).toEqual([...NAMES]);
    expect(await namesOf('sortBy=name&sortOrder=desc')).toEqual([...NAMES].reverse());
    expect(await namesOf('sortBy=name')).toEqual([...NAMES].reverse());
    expect(await namesOf('sortBy=createdAt&sortOrder=asc')).toEqual([...NAMES]);
    expect(await namesOf('sortOrder=asc')).toEqual([...NAMES]);
  });

  it('sorts by updatedAt, so the agent changed last comes first in desc order', async () => {
    const patched = await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${ids['Bravo line']}`, { description: 'touched' });
    expect(patched.statusCode).toBe(200);
    const res = await list('sortBy=updatedAt&sortOrder=desc');
    const data: { name: string; updatedAt: string }[] = res.json().data;
    expect(data[0]!.name).toBe('Bravo line');
    const stamps = data.map((a) => Date.parse(a.updatedAt));
    expect(stamps).toEqual([...stamps].sort((a, b) => b - a));
    const asc: string[] = (await list('sortBy=updatedAt&sortOrder=asc')).json().data.map((a: { name: string }) => a.name);
    expect(asc.at(-1)).toBe('Bravo line');
  });

  it('refuses an unknown sortBy or sortOrder with 422 naming the field', async () => {
    const res = await list('sortBy=priority');
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field: 'sortBy', message: 'must be one of: name, createdAt, updatedAt' }]);
    const order = await list('sortOrder=up');
    expect(order.statusCode).toBe(422);
    expect(order.json().errors.map((e: { field: string }) => e.field)).toEqual(['sortOrder']);
  });

  it('refuses an unknown query parameter with 422 naming it', async () => {
    const res = await list('colour=blue');
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field: 'colour', message: 'is not a known field' }]);
  });

  it('needs agents:read (403) and a credential (401)', async () => {
    const writeOnly = await tenant.mintKey({ scopes: ['agents:write'] });
    const forbidden = await list('', writeOnly.key);
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().type).toMatch(/\/errors\/forbidden$/);
    expect(forbidden.json().detail).toContain('agents:read');
    const readOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    expect((await list('', readOnly.key)).json().total).toBe(5);
    const none = await call(t.app, null, 'GET', '/api/v1/agents');
    expect(none.statusCode).toBe(401);
    expect(none.json().type).toMatch(/\/errors\/unauthorized$/);
  });
});
