import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore, newId } from '@vap/shared';
import { call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp } from '../helpers.js';
import { activeAgent, conversationsWorld, seedCall, startCalls } from './calls.fixtures.js';

const w = conversationsWorld();

const rowsOf = async (conversationId: string) => {
  const q = async (sql: string) => Number((await w.t.database.pool.query<{ n: string }>(sql, [conversationId])).rows[0]!.n);
  return {
    conversations: await q('select count(*) as n from conversations where id = $1'),
    messages: await q('select count(*) as n from conversation_messages where conversation_id = $1'),
    turns: await q('select count(*) as n from transcript_turns where conversation_id = $1'),
    events: await q('select count(*) as n from webhook_events where conversation_id = $1'),
    // Anything else that still mentions the id (event bodies, job payloads).
    mentions: await q(`select (select count(*) from webhook_events where body like '%' || $1 || '%') + (select count(*) from jobs where subject_id = $1 or payload::text like '%' || $1 || '%') as n`),
  };
};

const usageOf = async (tenantId: string) =>
  (await w.t.database.pool.query<{ conversations: number; duration_seconds: string; total_usd: string; llm_input_tokens: string; day: string }>(
    `select conversations, duration_seconds, total_usd, llm_input_tokens, day::text from deleted_conversation_usage where tenant_id = $1 order by day`,
    [tenantId],
  )).rows;

beforeAll(async () => {
  // A webhook on the agent, so the calls' events are stored with the conversation's data in their bodies.
  const res = await call(w.t.app, w.tenant.key, 'POST', '/api/v1/webhooks', { agentId: w.agent.id, url: 'http://127.0.0.1:9/hook', events: ['SessionStarted', 'SessionEnded'] });
  expect(res.statusCode, res.body).toBe(201);
});

describe('DELETE /api/v1/conversations/{id}', () => {
  it('removes messages, transcript, analysis and events for good, and keeps the billing usage as an anonymous aggregate', async () => {
    const { conversationId, record } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const { conversationId: second } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { record: { durationSeconds: 40 } });
    await w.t.database.pool.query(`update conversations set analysis = '{"summary": "caller booked a table"}' where id = $1`, [conversationId]);
    const before = await rowsOf(conversationId);
    expect(before).toMatchObject({ conversations: 1, messages: 2, turns: 2 });
    expect(before.events).toBeGreaterThan(0);
    const cost = (await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/costs`)).json();
    const cost2 = (await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${second}/costs`)).json();
    const { startedAt } = (await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}`)).json();

    const res = await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expect(await rowsOf(conversationId)).toEqual({ conversations: 0, messages: 0, turns: 0, events: 0, mentions: 0 });
    for (const sub of ['', '/messages', '/transcript', '/costs']) {
      expect((await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}${sub}`)).statusCode, sub).toBe(404);
    }
    // The other conversation is untouched.
    expect((await rowsOf(second)).messages).toBe(2);

    const [usage] = await usageOf(w.tenant.tenantId);
    expect(usage).toMatchObject({ conversations: 1, duration_seconds: String(record!.durationSeconds), llm_input_tokens: String(record!.usage.llm.inputTokens), day: startedAt.slice(0, 10) });
    expect(Number(usage!.total_usd)).toBeCloseTo(cost.total, 6);
    // The aggregate row has no column that could name the call or the caller.
    const columns = (await w.t.database.pool.query<{ column_name: string }>(`select column_name from information_schema.columns where table_name = 'deleted_conversation_usage'`)).rows.map((r) => r.column_name);
    expect(columns.filter((c) => /conversation_id|caller|phone|content|transcript/.test(c))).toEqual([]);

    // A second deletion on the same day and channel adds to the same row.
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${second}`)).statusCode).toBe(204);
    const [sum] = await usageOf(w.tenant.tenantId);
    expect(sum!.conversations).toBe(2);
    expect(Number(sum!.duration_seconds)).toBe(record!.durationSeconds + 40);
    expect(Number(sum!.total_usd)).toBeCloseTo(cost.total + cost2.total, 6);
  });

  it('is 404 the second time, for another tenant and for an unknown id; nothing of the other tenant is touched', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const foreign = await call(w.t.app, w.other.key, 'DELETE', `/api/v1/conversations/${conversationId}`);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().type).toMatch(/conversation-not-found$/);
    expect((await rowsOf(conversationId)).conversations).toBe(1);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${conversationId}`)).statusCode).toBe(204);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${conversationId}`)).statusCode).toBe(404);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', '/api/v1/conversations/conv_unknown')).statusCode).toBe(404);
  });

  it('refuses a call in progress (409) and deletes nothing', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const res = await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toMatch(/in progress/);
    expect((await rowsOf(conversationId)).conversations).toBe(1);
  });

  it('needs conversations:write', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const reader = (await w.tenant.mintKey({ scopes: ['conversations:read'] })).key;
    expect((await call(w.t.app, reader, 'DELETE', `/api/v1/conversations/${conversationId}`)).statusCode).toBe(403);
    expect((await rowsOf(conversationId)).conversations).toBe(1);
  });
});

describe('DELETE with a recording', () => {
  const recorded = async (app: TestApp, tenantId: string, agentId: string, key: string) => {
    const calls = startCalls(app.database.db, app.bus);
    try {
      const { conversationId } = await seedCall(app.bus, calls, tenantId, agentId, { record: { recording: { key, format: 'mp3', channels: 2, durationSeconds: 94.6, sizeBytes: 4, retentionDays: 30 } } });
      return conversationId;
    } finally {
      await calls.close();
    }
  };

  it('deletes the object from the recording store with the rows', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vap-del-'));
    const app = await createTestApp({ env: { RECORDINGS_STORE: 'local', RECORDINGS_DIR: dir } });
    try {
      const tenant = await createTenant(app.database);
      const agent = await activeAgent(app.app, tenant.key);
      const key = `${tenant.tenantId}/${newId('conv')}.mp3`;
      const store = new LocalObjectStore(dir);
      await store.put(key, new Uint8Array([1, 2, 3, 4]), 'audio/mpeg');
      const id = await recorded(app, tenant.tenantId, agent.id, key);
      expect((await call(app.app, tenant.key, 'GET', `/api/v1/conversations/${id}/recording`)).statusCode).toBe(200);
      expect((await call(app.app, tenant.key, 'DELETE', `/api/v1/conversations/${id}`)).statusCode).toBe(204);
      expect(await store.exists(key)).toBe(false);
      expect((await call(app.app, tenant.key, 'GET', `/api/v1/conversations/${id}/recording`)).statusCode).toBe(404);
    } finally {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('answers 503 and deletes nothing when the store cannot delete the object', async () => {
    // An S3 store whose endpoint refuses connections: the failure is real, at the wire.
    const app = await createTestApp({ env: { RECORDINGS_STORE: 's3', S3_BUCKET: 'recordings', S3_ENDPOINT: 'http://127.0.0.1:9', S3_ACCESS_KEY_ID: 'x', S3_SECRET_ACCESS_KEY: 'y' } });
    try {
      const tenant = await createTenant(app.database);
      const agent = await activeAgent(app.app, tenant.key);
      const id = await recorded(app, tenant.tenantId, agent.id, `${tenant.tenantId}/x.mp3`);
      const res = await call(app.app, tenant.key, 'DELETE', `/api/v1/conversations/${id}`);
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().detail).toMatch(/nothing was deleted/);
      const left = await app.database.pool.query('select recording_key from conversations where id = $1', [id]);
      expect(left.rows).toEqual([{ recording_key: `${tenant.tenantId}/x.mp3` }]);
      expect((await call(app.app, tenant.key, 'GET', `/api/v1/conversations/${id}/messages`)).json().messages).toHaveLength(2);
      expect(await app.database.pool.query('select 1 from deleted_conversation_usage where tenant_id = $1', [tenant.tenantId]).then((r) => r.rowCount)).toBe(0);
    } finally {
      await app.close();
    }
  }, 30_000);
});
