import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { activeAgent, conversationsWorld, seedCall } from './calls.fixtures.js';

const w = conversationsWorld();
const ids: Record<string, string> = {};
let agent2: string;

const list = async (query: string, key = w.tenant.key) => {
  const res = await call(w.t.app, key, 'GET', `/api/v1/conversations${query}`);
  return res;
};
const idsOf = async (query: string) => {
  const res = await list(query);
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data.map((c: { id: string }) => c.id) as string[];
};

/**
 * Five conversations of this tenant (two agents) with known start days, durations,
 * statuses, directions, tags and outcomes; one of another tenant.
 */
beforeAll(async () => {
  agent2 = (await activeAgent(w.t.app, w.tenant.key)).id;
  const seed = async (name: string, agentId: string, day: string, opts: Parameters<typeof seedCall>[4] = {}) => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, agentId, opts);
    await w.t.database.pool.query('update conversations set started_at = $2 where id = $1', [conversationId, `${day}T12:00:00Z`]);
    ids[name] = conversationId;
  };
  await seed('a', w.agent.id, '2026-03-01', { record: { durationSeconds: 30 } });
  await seed('b', w.agent.id, '2026-03-02', { record: { durationSeconds: 200, status: 'failed', endReason: 'error' } });
  await seed('c', agent2, '2026-03-03', { record: { durationSeconds: 90 }, request: { direction: 'outbound', from: '+442071838750', to: '+14155550123' } });
  await seed('d', agent2, '2026-03-03', { ended: false });
  await seed('e', w.agent.id, '2026-03-05', { record: { durationSeconds: 5, status: 'abandoned' } });
  await seedCall(w.t.bus, w.calls, w.other.tenantId, (await activeAgent(w.t.app, w.other.key)).id);
  for (const [id, body] of [
    [ids.a, { tags: ['vip', 'booking'] }],
    [ids.b, { tags: ['booking'] }],
    [ids.c, { tags: ['vip'] }],
  ] as const) {
    expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/conversations/${id}/tags`, body)).statusCode).toBe(200);
  }
  expect((await call(w.t.app, w.tenant.key, 'PUT', `/api/v1/conversations/${ids.a}/outcome`, { outcome: 'resolved', notes: 'Booked for 4' })).statusCode).toBe(200);
  expect((await call(w.t.app, w.tenant.key, 'PUT', `/api/v1/conversations/${ids.b}/outcome`, { outcome: 'escalated' })).statusCode).toBe(200);
});

// Only this file's conversations: the run's database is shared, so every query is bounded to March 2026.
const MARCH = 'dateFrom=2026-03-01&dateTo=2026-03-31';

describe('GET /api/v1/conversations', () => {
  it("lists the tenant's conversations, newest first, in the spec's shape", async () => {
    const res = await list(`?${MARCH}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ page: 1, pageSize: 20, total: 5, totalPages: 1 });
    // c and d started at the same moment: ties go by id, in the same direction.
    const sameStart = [ids.c!, ids.d!].sort().reverse();
    expect(body.data.map((c: { id: string }) => c.id)).toEqual([ids.e, ...sameStart, ids.b, ids.a]);
    expect(body.data.find((c: { id: string }) => c.id === ids.a)).toMatchObject({ agentId: w.agent.id, status: 'completed', tags: ['vip', 'booking'], outcome: 'resolved', outcomeNotes: 'Booked for 4', durationSeconds: 30 });
  });

  it.each([
    ['agentId', () => `agentId=${agent2}`, ['c', 'd']],
    ['status', () => 'status=failed', ['b']],
    ['direction', () => 'direction=outbound', ['c']],
    ['channel', () => 'channel=phone', ['a', 'b', 'c', 'd', 'e']],
    ['channel (none)', () => 'channel=sms', []],
    ['outcome', () => 'outcome=escalated', ['b']],
    ['one tag', () => 'tags=vip', ['a', 'c']],
    ['every tag listed', () => 'tags=vip,booking', ['a']],
    ['minDuration', () => 'minDuration=90', ['b', 'c']],
    ['dateFrom and dateTo, inclusive whole days', () => 'dateFrom=2026-03-02&dateTo=2026-03-03', ['b', 'c', 'd']],
    ['a timestamp bound', () => 'dateFrom=2026-03-03T12:00:00Z&dateTo=2026-03-05T11:59:59Z', ['c', 'd']],
    ['filters combined', () => `agentId=${w.agent.id}&tags=booking&minDuration=100`, ['b']],
  ])('filters by %s', async (_name, query, expected) => {
    const q = query();
    const bounded = q.includes('dateFrom') ? q : `${q}&${MARCH}`;
    expect((await idsOf(`?${bounded}`)).sort()).toEqual(expected.map((n) => ids[n]).sort());
  });

  it('pages with stable order and sorts by duration and cost (in-progress last)', async () => {
    const p1 = (await list(`?${MARCH}&pageSize=2&sortBy=durationSeconds&sortOrder=asc`)).json();
    const p3 = (await list(`?${MARCH}&pageSize=2&page=3&sortBy=durationSeconds&sortOrder=asc`)).json();
    expect(p1).toMatchObject({ total: 5, totalPages: 3, pageSize: 2 });
    expect(p1.data.map((c: { id: string }) => c.id)).toEqual([ids.e, ids.a]);
    expect(p3.data.map((c: { id: string }) => c.id)).toEqual([ids.d]);
    expect(p3).toMatchObject({ page: 3, total: 5, totalPages: 3 });
    // Past the end: no rows, and still the total.
    expect((await list(`?${MARCH}&pageSize=2&page=4`)).json()).toMatchObject({ data: [], page: 4, total: 5, totalPages: 3 });
    expect((await list(`?${MARCH}&agentId=agt_none`)).json()).toMatchObject({ data: [], page: 1, total: 0, totalPages: 0 });
    const byDurationDesc = await idsOf(`?${MARCH}&sortBy=durationSeconds`);
    expect(byDurationDesc).toEqual([ids.b, ids.c, ids.a, ids.e, ids.d]);
    expect((await idsOf(`?${MARCH}&sortBy=cost`)).at(-1)).toBe(ids.d);
  });

  it('names the parameter of a bad filter (422)', async () => {
    for (const [query, field] of [
      ['status=done', 'status'],
      ['channel=fax', 'channel'],
      ['outcome=great', 'outcome'],
      ['dateFrom=yesterday', 'dateFrom'],
      ['dateFrom=2026-03-05&dateTo=2026-03-01', 'dateTo'],
      ['minDuration=-1', 'minDuration'],
      ['minDuration=1.5', 'minDuration'],
      ['tags=vip,,x', 'tags'],
      ['pageSize=101', 'pageSize'],
      ['sortBy=agentName', 'sortBy'],
      ['color=blue', 'color'],
    ]) {
      const res = await list(`?${query}`);
      expect(res.statusCode, query).toBe(422);
      expect(res.json().errors.map((e: { field: string }) => e.field), query).toContain(field);
    }
  });

  it("needs conversations:read and never shows another tenant's conversations", async () => {
    const noScope = await w.tenant.mintKey({ scopes: ['agents:read'] });
    expect((await list('', noScope.key)).statusCode).toBe(403);
    expect((await list('', null as unknown as string)).statusCode).toBe(401);
    const theirs = (await list('?pageSize=100', w.other.key)).json();
    expect(theirs.data.some((c: { id: string }) => Object.values(ids).includes(c.id))).toBe(false);
  });
});

describe('POST /api/v1/conversations/{id}/tags and PUT …/outcome', () => {
  it('adds tags without repeats, keeping their order', async () => {
    const res = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/conversations/${ids.e}/tags`, { tags: ['callback', 'vip', 'callback'] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ conversationId: ids.e, tags: ['callback', 'vip'] });
    const again = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/conversations/${ids.e}/tags`, { tags: ['vip', 'spanish'] });
    expect(again.json().tags).toEqual(['callback', 'vip', 'spanish']);
    expect((await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${ids.e}`)).json().tags).toEqual(['callback', 'vip', 'spanish']);
  });

  it('sets and replaces the outcome with its notes', async () => {
    const set = await call(w.t.app, w.tenant.key, 'PUT', `/api/v1/conversations/${ids.c}/outcome`, { outcome: 'callback_scheduled', notes: 'Call back Monday' });
    expect(set.statusCode).toBe(200);
    expect(set.json()).toEqual({ conversationId: ids.c, outcome: 'callback_scheduled', notes: 'Call back Monday' });
    const replaced = await call(w.t.app, w.tenant.key, 'PUT', `/api/v1/conversations/${ids.c}/outcome`, { outcome: 'unresolved' });
    expect(replaced.json()).toEqual({ conversationId: ids.c, outcome: 'unresolved', notes: null });
  });

  it('refuses bad bodies naming the field, other tenants (404) and keys without conversations:write', async () => {
    const bad = await call(w.t.app, w.tenant.key, 'PUT', `/api/v1/conversations/${ids.c}/outcome`, { outcome: 'great' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0].field).toBe('outcome');
    const emptyTag = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/conversations/${ids.c}/tags`, { tags: ['ok', ' '] });
    expect(emptyTag.statusCode).toBe(422);
    expect(emptyTag.json().errors[0].field).toBe('tags.1');
    const tooMany = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/conversations/${ids.c}/tags`, { tags: Array.from({ length: 50 }, (_, i) => `t${i}`) });
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.json().errors[0].field).toBe('tags');
    expect((await call(w.t.app, w.other.key, 'POST', `/api/v1/conversations/${ids.c}/tags`, { tags: ['x'] })).statusCode).toBe(404);
    expect((await call(w.t.app, w.other.key, 'PUT', `/api/v1/conversations/${ids.c}/outcome`, { outcome: 'resolved' })).statusCode).toBe(404);
    const reader = await w.tenant.mintKey({ scopes: ['conversations:read'] });
    expect((await call(w.t.app, reader.key, 'POST', `/api/v1/conversations/${ids.c}/tags`, { tags: ['x'] })).statusCode).toBe(403);
    expect((await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${ids.c}`)).json().tags).toEqual(['vip']);
  });
});
