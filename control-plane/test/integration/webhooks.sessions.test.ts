/**
 * Session events over the bus become webhook deliveries: what a gateway reports
 * (call.prepare, tool calls, transfers, errors, the end record) reaches a real receiver
 * with the spec's data fields, through the control plane's call handling and the outbox.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUBJECTS, newId } from '@vap/shared';
import { pino } from 'pino';
import { startCallHandling } from '../../src/modules/conversations/call-handlers.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import type { WebhookDispatcher } from '../../src/modules/webhooks/webhook-dispatcher.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest } from './calls.fixtures.js';
import { startDispatcher } from './webhooks.fixtures.js';
import { webhookWorld } from './webhooks.world.js';

const w = webhookWorld();
let handling: CallHandling;
let dispatcher: WebhookDispatcher;
let agentId: string;

beforeAll(async () => {
  agentId = (await activeAgent(w.t.app, w.tenant.key)).id;
  handling = startCallHandling({ db: w.t.database.db, bus: w.t.bus, secrets: new SecretBox(TEST_SECRET_KEY), log: pino({ level: 'silent' }), outbox: w.outbox, watchdog: false, heartbeatSettleMs: 0 });
  dispatcher = startDispatcher(w.t.database);
  w.outbox.onWake(() => dispatcher.wake());
  await dispatcher.start();
});
afterAll(async () => {
  await handling?.close();
  await dispatcher?.stop();
});

type Envelope = { id: string; type: string; agentId: string; tenantId: string; timestamp: string; data: Record<string, unknown> };
const bodies = (path: string): Envelope[] => w.receiver.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body) as Envelope);

describe('session events to webhooks', () => {
  it('delivers every kind a call produces, each with its spec data', async () => {
    await w.webhook('/all', { agentId, events: ['SessionStarted', 'SessionEnded', 'ToolCallCompleted', 'TransferInitiated', 'Error'] });
    const { tenantId } = w.tenant;
    const { conversationId } = await prepareCall(w.t.bus, prepareRequest(tenantId, agentId, { from: '+14155550123' }));
    const at = new Date().toISOString();
    await w.t.bus.publish('sessionEvent', SUBJECTS.sessionEvent.subject(tenantId, conversationId), {
      conversationId,
      tenantId,
      agentId,
      at,
      event: { type: 'ToolCallCompleted', data: { toolName: 'check_availability', toolType: 'rest_api', input: { date: '2026-12-01' }, output: { available: true }, latencyMs: 182, success: true } },
    });
    await w.t.bus.publish('sessionEvent', SUBJECTS.sessionEvent.subject(tenantId, conversationId), {
      conversationId,
      tenantId,
      agentId,
      at,
      event: { type: 'TransferInitiated', data: { transferTo: '+14155550999', transferType: 'warm', reason: 'caller asked for a manager', summaryForAgent: 'Wants a table for 12.' } },
    });
    await w.t.bus.publish('sessionError', SUBJECTS.sessionError.subject(tenantId, conversationId), { conversationId, tenantId, agentId, errorCode: 'tts_failed', errorMessage: 'Speech synthesis failed twice', recoverable: false, at });
    await w.receiver.waitFor(4, '/all', 10_000);
    await handling.calls.end(endedRecord(tenantId, agentId, conversationId, [message(0), message(1)]));
    await w.receiver.waitFor(5, '/all', 10_000);

    const byType = new Map(bodies('/all').map((e) => [e.type, e]));
    expect([...byType.keys()].sort()).toEqual(['Error', 'SessionEnded', 'SessionStarted', 'ToolCallCompleted', 'TransferInitiated']);
    for (const e of byType.values()) expect(e).toMatchObject({ id: expect.stringMatching(/^evt_/), agentId, tenantId });
    expect(byType.get('SessionStarted')!.data).toEqual({ conversationId, channel: 'phone', direction: 'inbound', caller: { phoneNumber: '+14155550123', country: 'US' }, metadata: { campaign: 'spring' } });
    expect(byType.get('ToolCallCompleted')!.data).toEqual({ conversationId, toolName: 'check_availability', toolType: 'rest_api', input: { date: '2026-12-01' }, output: { available: true }, latencyMs: 182, success: true });
    expect(byType.get('ToolCallCompleted')!.timestamp).toBe(at);
    expect(byType.get('TransferInitiated')!.data).toEqual({ conversationId, transferTo: '+14155550999', transferType: 'warm', reason: 'caller asked for a manager', summaryForAgent: 'Wants a table for 12.' });
    expect(byType.get('Error')!.data).toEqual({ conversationId, errorCode: 'tts_failed', errorMessage: 'Speech synthesis failed twice', recoverable: false });
    const ended = byType.get('SessionEnded')!.data;
    expect(ended).toMatchObject({ conversationId, channel: 'phone', direction: 'inbound', endReason: 'user_ended', caller: { phoneNumber: '+14155550123', country: 'US' }, metadata: { campaign: 'spring' } });
    expect(Object.keys(ended.cost as object).sort()).toEqual(['llmUsd', 'sttUsd', 'telephonyUsd', 'totalUsd', 'ttsUsd']);
  });

  it('stages nothing for events of unknown conversations or unsubscribed kinds', async () => {
    await w.webhook('/ended-only', { agentId, events: ['SessionEnded'] });
    const { tenantId } = w.tenant;
    const { conversationId } = await prepareCall(w.t.bus, prepareRequest(tenantId, agentId));
    await w.t.bus.publish('sessionError', SUBJECTS.sessionError.subject(tenantId, conversationId), { conversationId, tenantId, agentId, errorCode: 'x', errorMessage: 'y', recoverable: true, at: new Date().toISOString() });
    const ghost = newId('conv');
    await w.t.bus.publish('sessionEvent', SUBJECTS.sessionEvent.subject(tenantId, ghost), {
      conversationId: ghost,
      tenantId,
      agentId,
      at: new Date().toISOString(),
      event: { type: 'TransferInitiated', data: { transferTo: '+1', transferType: 'cold', reason: 'r', summaryForAgent: 's' } },
    });
    await handling.calls.end(endedRecord(tenantId, agentId, conversationId, [message(0)]));
    await w.receiver.waitFor(1, '/ended-only', 10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(bodies('/ended-only').map((e) => e.type)).toEqual(['SessionEnded']);
    const { rows } = await w.t.database.pool.query<{ n: number }>("select count(*)::int as n from webhook_events where body like $1", [`%${ghost}%`]);
    expect(rows[0]!.n).toBe(0);
  });
});
