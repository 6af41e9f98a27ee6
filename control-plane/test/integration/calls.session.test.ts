import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SUBJECTS, priceCall } from '@vap/shared';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest, publishEnded, publishMessage, recordEvents, startCalls, turnFor, waitForRow } from './calls.fixtures.js';
import type { SessionMessage } from './calls.fixtures.js';

let t: TestApp;
let tenant: TestTenant;
let agent: { id: string; name: string; version: number };
let calls: CallHandling;
let events: ReturnType<typeof recordEvents>;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  agent = await activeAgent(t.app, tenant.key);
  calls = startCalls(t.database.db, t.bus);
  events = recordEvents(t.bus, tenant.tenantId);
});
afterAll(async () => {
  await events.close();
  await calls.close();
  await t.close();
});

async function newCall(agentId = agent.id): Promise<string> {
  return (await prepareCall(t.bus, prepareRequest(tenant.tenantId, agentId))).conversationId;
}

/** Messages and turns as stored, without ids (two calls are compared by content). */
async function stored(conversationId: string) {
  const m = await t.database.pool.query('select seq, role, content, source, interrupted, duration_ms, timestamp from conversation_messages where conversation_id = $1 order by seq', [conversationId]);
  const tt = await t.database.pool.query('select seq, speaker, text, start_time, end_time, confidence, words from transcript_turns where conversation_id = $1 order by seq', [conversationId]);
  return { messages: m.rows, turns: tt.rows };
}

async function messageCount(conversationId: string): Promise<number> {
  const { rows } = await t.database.pool.query('select count(*)::int as n from conversation_messages where conversation_id = $1', [conversationId]);
  return rows[0].n;
}

/** A conversation: agent greets, caller asks, agent answers and is cut off by the caller. */
function script(): { live: SessionMessage[]; truncated: SessionMessage; final: SessionMessage[] } {
  const m0 = message(0, { source: 'system', content: 'Hello, how can I help?' });
  const m1 = message(1, { content: 'I need my balance' });
  const full = message(2, { content: 'Your balance is 42 dollars and your next statement is due on the fifth' });
  const truncated = { ...full, content: 'Your balance is 42 dollars', interrupted: true, durationMs: 1800 };
  const m3 = message(3, { content: 'Thanks, bye' });
  return { live: [m0, m1, full, m3], truncated, final: [m0, m1, truncated, m3] };
}

describe('live session messages', () => {
  it('stores each message and its transcript turn as it arrives', async () => {
    const id = await newCall();
    const [m0, m1] = [message(0), message(1)];
    await publishMessage(t.bus, tenant.tenantId, id, m0);
    await publishMessage(t.bus, tenant.tenantId, id, m1, null);
    await vi.waitFor(async () => expect(await messageCount(id)).toBe(2));
    const s = await stored(id);
    expect(s.messages.map((m) => [m.seq, m.role, m.content])).toEqual([
      [0, 'agent', m0.content],
      [1, 'user', m1.content],
    ]);
    expect(s.turns).toHaveLength(1);
    expect(s.turns[0]).toMatchObject({ seq: 0, speaker: 'agent', text: m0.content, start_time: '0.000', end_time: '1.500', confidence: '0.9300' });
  });

  it('keeps the truncated version of an interrupted agent message whatever order the two versions arrive in', async () => {
    const id = await newCall();
    const { live, truncated } = script();
    const full = live[2]!;
    // Truncated first, then the stale full version: the full one must not win.
    await publishMessage(t.bus, tenant.tenantId, id, truncated);
    await vi.waitFor(async () => expect(await messageCount(id)).toBe(1));
    await calls.calls.recordMessage({ tenantId: tenant.tenantId, conversationId: id, message: full, turn: turnFor(full) });
    let s = await stored(id);
    expect(s.messages[0]).toMatchObject({ content: truncated.content, interrupted: true, duration_ms: 1800 });
    expect(s.turns.map((x) => x.text)).toEqual([truncated.content]);

    // The usual order (full, then truncated after the barge-in) ends the same way.
    const id2 = await newCall();
    const full2 = { ...full, id: `${full.id}b` };
    await calls.calls.recordMessage({ tenantId: tenant.tenantId, conversationId: id2, message: full2, turn: null });
    await calls.calls.recordMessage({ tenantId: tenant.tenantId, conversationId: id2, message: { ...truncated, id: full2.id }, turn: null });
    s = await stored(id2);
    expect(s.messages[0]).toMatchObject({ content: truncated.content, interrupted: true, duration_ms: 1800 });
  });

  it('drops messages for unknown conversations and for a conversation of another tenant', async () => {
    const id = await newCall();
    const otherTenant = await createTenant(t.database);
    await calls.calls.recordMessage({ tenantId: tenant.tenantId, conversationId: 'conv_00000000000000000000000000', message: message(0), turn: null });
    await calls.calls.recordMessage({ tenantId: otherTenant.tenantId, conversationId: id, message: message(0), turn: null });
    const { rows } = await t.database.pool.query(`select count(*)::int as n from conversation_messages where conversation_id in ($1, 'conv_00000000000000000000000000')`, [id]);
    expect(rows[0].n).toBe(0);
  });
});

describe('end record', () => {
  it('stores the whole record, prices the usage and emits SessionEnded', async () => {
    const id = await newCall();
    const { live, final } = script();
    for (const m of live.slice(0, 2)) await publishMessage(t.bus, tenant.tenantId, id, m);
    await vi.waitFor(async () => expect(await messageCount(id)).toBe(2));
    const rec = endedRecord(tenant.tenantId, agent.id, id, final);
    await publishEnded(t.bus, rec);

    const row = await waitForRow(t.database.pool, id, (r) => expect(r.status).toBe('completed'));
    const expected = priceCall(rec.usage, 'inbound', { sttModel: 'nova-2' });
    expect(row).toMatchObject({ end_reason: 'user_ended', duration_seconds: 95, language: 'en-US', costs: expected, cost_total_usd: String(expected.total), error: null });
    expect((row.ended_at as Date).toISOString()).toBe(rec.endedAt);
    expect(expected.total).toBe(0.297408);

    const s = await stored(id);
    expect(s.messages.map((m) => [m.seq, m.content, m.interrupted])).toEqual(final.map((m) => [m.seq, m.content, m.interrupted]));
    expect(s.turns.map((x) => x.text)).toEqual(final.map((m) => m.content));

    await vi.waitFor(() => expect(events.of(id, 'SessionEnded')).toHaveLength(1));
    expect(events.of(id, 'SessionEnded')[0]).toMatchObject({
      agentId: agent.id,
      tenantId: tenant.tenantId,
      data: {
        conversationId: id,
        channel: 'phone',
        direction: 'inbound',
        durationSeconds: 95,
        endReason: 'user_ended',
        caller: { phoneNumber: '+14155550123', country: 'US' },
        cost: { totalUsd: 0.297408, llmUsd: 0.0036, ttsUsd: 0.27, sttUsd: 0.006808, telephonyUsd: 0.017 },
        metadata: { campaign: 'spring' },
      },
    });
  });

  it('stores the same result when the end record arrives before the live messages', async () => {
    const inOrder = await newCall();
    const reversed = await newCall();
    const a = script();
    const b = script();

    for (const m of [...a.live, a.truncated]) await calls.calls.recordMessage({ tenantId: tenant.tenantId, conversationId: inOrder, message: m, turn: turnFor(m) });
    await calls.calls.end(endedRecord(tenant.tenantId, agent.id, inOrder, a.final));

    await publishEnded(t.bus, endedRecord(tenant.tenantId, agent.id, reversed, b.final));
    await waitForRow(t.database.pool, reversed, (r) => expect(r.status).toBe('completed'));
    // The live messages come late, including the stale full version of the interrupted one.
    for (const m of b.live) await publishMessage(t.bus, tenant.tenantId, reversed, { ...m, content: `${m.content} (late)` });
    await publishMessage(t.bus, tenant.tenantId, reversed, message(9));
    await calls.close();
    calls = startCalls(t.database.db, t.bus);

    expect(await stored(reversed)).toEqual(await stored(inOrder));
    const { rows } = await t.database.pool.query('select id, status, end_reason, duration_seconds, language, costs, cost_total_usd from conversations where id in ($1, $2) order by id', [inOrder, reversed]);
    expect({ ...rows[0], id: undefined }).toEqual({ ...rows[1], id: undefined });
  });

  it('ignores a duplicate end record: nothing changes and SessionEnded is emitted once', async () => {
    const id = await newCall();
    const { final } = script();
    const rec = endedRecord(tenant.tenantId, agent.id, id, final);
    await Promise.all([publishEnded(t.bus, rec), publishEnded(t.bus, rec)]);
    const first = await waitForRow(t.database.pool, id, (r) => expect(r.status).toBe('completed'));
    // A later copy with other content must not overwrite the stored record.
    await calls.calls.end({ ...rec, status: 'failed', endReason: 'error', durationSeconds: 1, messages: [], turns: [] });
    await vi.waitFor(() => expect(events.of(id, 'SessionEnded')).toHaveLength(1));
    await new Promise((r) => setTimeout(r, 50));
    expect(events.of(id, 'SessionEnded')).toHaveLength(1);
    const again = await waitForRow(t.database.pool, id, () => undefined);
    expect(again).toEqual(first);
    expect(await messageCount(id)).toBe(final.length);
  });

  it('stores a failed call with its error, and prices STT by the agent’s transcription model', async () => {
    const medical = await activeAgent(t.app, tenant.key, { transcription: { provider: 'aws', model: 'medical', language: 'en-US' } });
    const id = await newCall(medical.id);
    const rec = endedRecord(tenant.tenantId, medical.id, id, [message(0)], {
      status: 'failed',
      endReason: 'error',
      durationSeconds: 30,
      error: { code: 'llm_unavailable', message: 'The language model did not answer' },
      usage: {
        llm: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 0, outputTokens: 0 },
        tts: { provider: 'elevenlabs', characters: 0 },
        stt: { provider: 'aws', audioSeconds: 30 },
        telephony: { provider: 'twilio', seconds: 30 },
      },
    });
    await publishEnded(t.bus, rec);
    const row = await waitForRow(t.database.pool, id, (r) => expect(r.status).toBe('failed'));
    expect(row.error).toEqual({ code: 'llm_unavailable', message: 'The language model did not answer' });
    // 30 s × 0.075 $/min (AWS medical) = 0.0375; 1 minute of Twilio inbound = 0.0085
    expect(row.costs).toMatchObject({ stt: { provider: 'aws', audioSeconds: 30, cost: 0.0375 }, telephony: { minutes: 1, cost: 0.0085 }, total: 0.046 });
  });

  it('stores a call whose text carries NUL characters or unpaired surrogates (from a tool result, a provider or a carrier), each one as U+FFFD', async () => {
    // Custom parameters a caller's carrier relayed: a NUL in a key, an unpaired surrogate in a value (jsonb refuses both).
    const id = (await prepareCall(t.bus, prepareRequest(tenant.tenantId, agent.id, { metadata: { 'k\u0000': 'v\ud800' } }))).conversationId;
    const m0 = message(0, { content: 'Hello\u0000 there' });
    const m1 = message(1, { content: 'bin\u0000\u0000ary' });
    await publishMessage(t.bus, tenant.tenantId, id, m0);
    await vi.waitFor(async () => expect(await messageCount(id)).toBe(1));
    await publishEnded(t.bus, endedRecord(tenant.tenantId, agent.id, id, [m0, m1]));
    await waitForRow(t.database.pool, id, (r) => expect(r.status).toBe('completed'));
    const s = await stored(id);
    expect(s.messages.map((m) => m.content)).toEqual(['Hello\ufffd there', 'bin\ufffd\ufffdary']);
    expect(s.turns.map((x) => x.text)).toEqual(['Hello\ufffd there', 'bin\ufffd\ufffdary']);
    const { rows } = await t.database.pool.query('select metadata from conversations where id = $1', [id]);
    expect(rows[0].metadata).toEqual({ 'k\ufffd': 'v\ufffd' });
  });

  it('drops an end record for an unknown conversation', async () => {
    await calls.calls.end(endedRecord(tenant.tenantId, agent.id, 'conv_00000000000000000000000000', [message(0)]));
    const { rows } = await t.database.pool.query(`select count(*)::int as n from conversations where id = 'conv_00000000000000000000000000'`);
    expect(rows[0].n).toBe(0);
  });
});

describe('session errors', () => {
  it('relays a gateway error as the platform event Error', async () => {
    const id = await newCall();
    await t.bus.publish('sessionError', SUBJECTS.sessionError.subject(tenant.tenantId, id), {
      conversationId: id,
      tenantId: tenant.tenantId,
      agentId: agent.id,
      errorCode: 'tts_failed',
      errorMessage: 'Speech synthesis failed twice',
      recoverable: false,
      at: new Date().toISOString(),
    });
    await vi.waitFor(() => expect(events.of(id, 'Error')).toHaveLength(1));
    expect(events.of(id, 'Error')[0]).toMatchObject({
      agentId: agent.id,
      tenantId: tenant.tenantId,
      data: { conversationId: id, errorCode: 'tts_failed', errorMessage: 'Speech synthesis failed twice', recoverable: false },
    });
  });
});
