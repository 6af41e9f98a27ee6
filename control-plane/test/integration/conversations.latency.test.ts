import { describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import type { Payload } from '@vap/shared';
import { call } from '../helpers.js';
import { conversationsWorld, endedRecord, message, prepareCall, prepareRequest, publishEnded, publishHeartbeat, seedCall, waitForRow } from './calls.fixtures.js';

const w = conversationsWorld();

type TurnMetrics = Payload<'sessionEnded'>['turnMetrics'][number];

function turn(endpointingMs: number, llmFirstTokenMs: number, ttsFirstByteMs: number, overheadMs: number): TurnMetrics {
  return { turnId: newId('turn'), endpointingMs, sttMs: Math.max(0, endpointingMs - 40), retrievalMs: 0, llmFirstTokenMs, llmFirstPhraseMs: 0, ttsFirstByteMs, overheadMs, totalMs: endpointingMs + llmFirstTokenMs + ttsFirstByteMs + overheadMs };
}

const getLatency = (id: string, key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/conversations/${id}/latency`);

/** Prepares a call over the bus and ends it with `turnMetrics` over the bus, as a gateway does. */
async function callEndedOverBus(turnMetrics: unknown, gatewayId = newId('gw')): Promise<string> {
  const { conversationId } = await prepareCall(w.t.bus, prepareRequest(w.tenant.tenantId, w.agent.id, { gatewayId }));
  const rec = { ...endedRecord(w.tenant.tenantId, w.agent.id, conversationId, [message(0), message(1), message(2), message(3)]), turnMetrics } as Payload<'sessionEnded'>;
  await publishEnded(w.t.bus, rec);
  await waitForRow(w.t.database.pool, conversationId, (row) => expect(row.status).toBe('completed'));
  return conversationId;
}

describe('GET /api/v1/conversations/{conversationId}/latency', () => {
  it('returns each reply’s stage breakdown from the end record, in call order, with its summary', async () => {
    // Totals 900, 1500, 700 ms; the LLM holds most time over the call (300 + 900 + 250).
    const metrics = [turn(400, 300, 120, 80), turn(200, 900, 150, 250), turn(250, 250, 100, 100)];
    const conversationId = await callEndedOverBus(metrics);
    const res = await getLatency(conversationId);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      conversationId,
      turns: metrics,
      summary: { turns: 3, p50TotalMs: 900, p95TotalMs: 1500, maxTotalMs: 1500, slowestStage: 'llmFirstToken' },
    });
  });

  it('summarises many turns with nearest-rank percentiles and names the overhead when it dominates', async () => {
    // 20 turns with totals 100, 200 … 2000 ms: p50 is the 10th (1000), p95 the 19th (1900).
    const metrics = Array.from({ length: 20 }, (_, i) => turn(10, 10, 10, (i + 1) * 100 - 30));
    const conversationId = await callEndedOverBus(metrics);
    const body = (await getLatency(conversationId)).json();
    expect(body.turns.map((t: TurnMetrics) => t.totalMs)).toEqual(metrics.map((m) => m.totalMs));
    expect(body.summary).toEqual({ turns: 20, p50TotalMs: 1000, p95TotalMs: 1900, maxTotalMs: 2000, slowestStage: 'overhead' });
  });

  it('answers an empty breakdown for a call without agent replies', async () => {
    const conversationId = await callEndedOverBus([]);
    expect((await getLatency(conversationId)).json()).toEqual({
      conversationId,
      turns: [],
      summary: { turns: 0, p50TotalMs: null, p95TotalMs: null, maxTotalMs: null, slowestStage: null },
    });
  });

  it('stores the rest of the call when the latency breakdown in its end record is malformed', async () => {
    const conversationId = await callEndedOverBus([{ turnId: 't1', endpointingMs: -5 }]);
    const messages = (await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/messages`)).json();
    expect(messages.messages).toHaveLength(4);
    expect((await getLatency(conversationId)).json()).toMatchObject({ turns: [], summary: { turns: 0 } });
  });

  it('answers 409 while the call is in progress', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const res = await getLatency(conversationId);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/invalid-state$/), detail: expect.stringContaining('still in progress') });
  });

  it('answers 409 for a call its lost gateway never reported, and the breakdown once the late record arrives', async () => {
    const gatewayId = newId('gw');
    const { conversationId } = await prepareCall(w.t.bus, prepareRequest(w.tenant.tenantId, w.agent.id, { gatewayId }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The gateway's heartbeat no longer lists the call (older than 2 intervals of 1 ms): failed as lost.
    await publishHeartbeat(w.t.bus, gatewayId, [], 1);
    await waitForRow(w.t.database.pool, conversationId, (row) => expect(row.end_reason).toBe('gateway_lost'));
    const lost = await getLatency(conversationId);
    expect(lost.statusCode).toBe(409);
    expect(lost.json().detail).toContain('without a report');

    const metrics = [turn(300, 400, 100, 20)];
    await publishEnded(w.t.bus, endedRecord(w.tenant.tenantId, w.agent.id, conversationId, [message(0), message(1)], { turnMetrics: metrics }));
    await waitForRow(w.t.database.pool, conversationId, (row) => expect(row.status).toBe('completed'));
    expect((await getLatency(conversationId)).json()).toMatchObject({ turns: metrics, summary: { turns: 1, maxTotalMs: 820, slowestStage: 'llmFirstToken' } });
  });

  it('keeps the first record’s breakdown when a duplicate end record arrives', async () => {
    const first = [turn(100, 200, 300, 10)];
    const conversationId = await callEndedOverBus(first);
    await w.calls.calls.end(endedRecord(w.tenant.tenantId, w.agent.id, conversationId, [message(0)], { turnMetrics: [turn(1, 1, 1, 1)] }));
    expect((await getLatency(conversationId)).json().turns).toEqual(first);
  });

  it('answers 404 for another tenant’s conversation, an unknown id and a deleted one', async () => {
    const conversationId = await callEndedOverBus([turn(100, 100, 100, 10)]);
    const deleted = await callEndedOverBus([turn(100, 100, 100, 10)]);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/conversations/${deleted}`)).statusCode).toBe(204);
    for (const [key, id] of [
      [w.other.key, conversationId],
      [w.tenant.key, 'conv_00000000000000000000000000'],
      [w.tenant.key, deleted],
    ] as const) {
      const res = await getLatency(id, key);
      expect(res.statusCode, id).toBe(404);
      expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
    }
  });

  it('needs conversations:read (403 without it, 401 without a key)', async () => {
    const conversationId = await callEndedOverBus([turn(100, 100, 100, 10)]);
    const { key: noScope } = await w.tenant.mintKey({ scopes: ['agents:read'] });
    expect((await getLatency(conversationId, noScope)).statusCode).toBe(403);
    expect((await call(w.t.app, null, 'GET', `/api/v1/conversations/${conversationId}/latency`)).statusCode).toBe(401);
    const { key: reader } = await w.tenant.mintKey({ scopes: ['conversations:read'] });
    expect((await getLatency(conversationId, reader)).statusCode).toBe(200);
  });
});
