import { beforeAll, describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { activeAgent, conversationsWorld, seedCall } from './calls.fixtures.js';

const w = conversationsWorld();
const ids: Record<string, string> = {};
let idle: string;

/**
 * Six conversations of one agent in April 2026 (phone and webrtc, ended and in progress,
 * with and without outcome and sentiment), one of another agent and one of another tenant
 * on the same days, and one of the agent in May.
 */
beforeAll(async () => {
  const other = (await activeAgent(w.t.app, w.tenant.key)).id;
  idle = (await activeAgent(w.t.app, w.tenant.key)).id;
  const seed = async (name: string, tenantId: string, agentId: string, at: string, opts: Parameters<typeof seedCall>[4] = {}) => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, tenantId, agentId, opts);
    await w.t.database.pool.query('update conversations set started_at = $2 where id = $1', [conversationId, at]);
    ids[name] = conversationId;
  };
  await seed('a', w.tenant.tenantId, w.agent.id, '2026-04-01T00:00:00Z', { record: { durationSeconds: 60 } });
  await seed('b', w.tenant.tenantId, w.agent.id, '2026-04-02T10:00:00Z', { record: { durationSeconds: 120 }, request: { channel: 'webrtc' } });
  await seed('c', w.tenant.tenantId, w.agent.id, '2026-04-02T11:00:00Z', { record: { durationSeconds: 31, status: 'abandoned' } });
  await seed('d', w.tenant.tenantId, w.agent.id, '2026-04-03T09:00:00Z', { ended: false });
  await seed('e', w.tenant.tenantId, w.agent.id, '2026-04-30T23:59:59Z', { record: { durationSeconds: 10 } });
  await seed('late', w.tenant.tenantId, w.agent.id, '2026-05-01T00:00:00Z', { record: { durationSeconds: 500 } });
  await seed('otherAgent', w.tenant.tenantId, other, '2026-04-02T10:00:00Z', { record: { durationSeconds: 700 } });
  await seed('otherTenant', w.other.tenantId, (await activeAgent(w.t.app, w.other.key)).id, '2026-04-02T10:00:00Z', { record: { durationSeconds: 900 } });
  for (const [id, outcome] of [[ids.a, 'resolved'], [ids.b, 'resolved'], [ids.c, 'abandoned']] as const) {
    expect((await call(w.t.app, w.tenant.key, 'PUT', `/api/v1/conversations/${id}/outcome`, { outcome })).statusCode).toBe(200);
  }
  // Analysis results as the analysis job stores them (only sentimentScore matters here).
  for (const [id, score] of [[ids.a, 0.8], [ids.b, -0.2]] as const) {
    await w.t.database.pool.query(`update conversations set analysis = jsonb_build_object('sentiment', 'neutral', 'sentimentScore', $2::numeric) where id = $1`, [id, score]);
  }
  await w.t.database.pool.query(`update conversations set analysis = '{"sentimentScore": "n/a"}' where id = $1`, [ids.e]);
});

const stats = (agentId: string, query: string, key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/agents/${agentId}/stats${query}`);

describe('GET /api/v1/agents/{agentId}/stats', () => {
  it("computes the spec's fields over the agent's conversations in the period (inclusive dates)", async () => {
    const res = await stats(w.agent.id, '?dateFrom=2026-04-01&dateTo=2026-04-30');
    expect(res.statusCode, res.body).toBe(200);
    const s = res.json();
    expect(s).toMatchObject({
      agentId: w.agent.id,
      period: { from: '2026-04-01', to: '2026-04-30' },
      totalConversations: 5,
      totalDurationSeconds: 60 + 120 + 31 + 10,
      // Mean over the four ended calls: 221 / 4 = 55.25.
      avgDurationSeconds: 55,
      channelBreakdown: { phone: 4, webrtc: 1 },
      outcomeBreakdown: { resolved: 2, abandoned: 1 },
      // Only numeric scores count: (0.8 - 0.2) / 2.
      avgSentimentScore: 0.3,
    });
    expect(s.totalCostUsd).toBeGreaterThan(0);
    expect(s.avgCostUsdPerConversation).toBeCloseTo(s.totalCostUsd / 4, 5);
  });

  it('agrees with the conversations list for the same agent and dates', async () => {
    for (const q of ['dateFrom=2026-04-01&dateTo=2026-04-30', 'dateFrom=2026-04-02&dateTo=2026-04-02', 'dateFrom=2026-04-02T10:30:00Z&dateTo=2026-05-01T00:00:00Z']) {
      const list = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations?agentId=${w.agent.id}&${q}&pageSize=100`);
      expect(list.statusCode).toBe(200);
      const rows = list.json().data as { durationSeconds: number | null; cost: { totalUsd: number } | null; channel: string }[];
      const s = (await stats(w.agent.id, `?${q}`)).json();
      expect(s.totalConversations, q).toBe(list.json().total);
      expect(s.totalDurationSeconds, q).toBe(rows.reduce((n, r) => n + (r.durationSeconds ?? 0), 0));
      expect(s.totalCostUsd, q).toBeCloseTo(rows.reduce((n, r) => n + (r.cost?.totalUsd ?? 0), 0), 5);
      const channels: Record<string, number> = {};
      for (const r of rows) channels[r.channel] = (channels[r.channel] ?? 0) + 1;
      expect(s.channelBreakdown, q).toEqual(channels);
    }
  });

  it('answers zeros and empty breakdowns for an agent without conversations', async () => {
    const res = await stats(idle, '?dateFrom=2026-04-01&dateTo=2026-04-30');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      agentId: idle,
      period: { from: '2026-04-01', to: '2026-04-30' },
      totalConversations: 0,
      totalDurationSeconds: 0,
      avgDurationSeconds: 0,
      totalCostUsd: 0,
      avgCostUsdPerConversation: 0,
      channelBreakdown: {},
      outcomeBreakdown: {},
      avgSentimentScore: null,
    });
  });

  it('defaults to the 30 days ending today (UTC)', async () => {
    const before = new Date().toISOString().slice(0, 10);
    const res = await stats(w.agent.id, '');
    expect(res.statusCode).toBe(200);
    // The day the request was answered on: the one before it, unless midnight (UTC) passed meanwhile.
    const today = res.json().period?.to === before ? before : new Date().toISOString().slice(0, 10);
    const from = new Date(Date.parse(`${today}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
    expect(res.json().period).toEqual({ from, to: today });
  });

  it("is 404 for another tenant's agent and an unknown one", async () => {
    for (const res of [await stats(w.agent.id, '', w.other.key), await stats('agt_unknown', '')]) {
      expect(res.statusCode).toBe(404);
      expect(res.json().type).toMatch(/not-found$/);
    }
  });

  it('names the bad field of a bad query', async () => {
    for (const [q, field] of [['?dateFrom=yesterday', 'dateFrom'], ['?dateFrom=2026-04-10&dateTo=2026-04-01', 'dateTo'], ['?groupBy=day', 'groupBy']] as const) {
      const res = await stats(w.agent.id, q);
      expect(res.statusCode, q).toBe(422);
      expect(JSON.stringify(res.json().errors ?? res.json()), q).toContain(field);
    }
  });

  it('needs agents:read', async () => {
    const key = (await w.tenant.mintKey({ scopes: ['conversations:read'] })).key;
    expect((await stats(w.agent.id, '', key)).statusCode).toBe(403);
  });
});
