import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, message, seedCall, startCalls, turnFor } from './calls.fixtures.js';

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let agent: { id: string };
let calls: CallHandling;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  other = await createTenant(t.database);
  agent = await activeAgent(t.app, tenant.key);
  calls = startCalls(t.database.db, t.bus);
});
afterAll(async () => {
  await calls.close();
  await t.close();
});

describe('GET /api/v1/conversations/{conversationId}/transcript', () => {
  it('returns the turns with word timing, language and duration', async () => {
    const messages = [message(0, { content: 'Hello there' }), message(1, { content: 'Hi' })];
    const turns = messages.map(turnFor);
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id, { messages, record: { turns, language: 'en-GB', durationSeconds: 12 } });
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/conversations/${conversationId}/transcript`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      conversationId,
      language: 'en-GB',
      durationSeconds: 12,
      turns: turns.map(({ seq: _seq, ...turn }) => turn),
    });
    expect(res.json().turns[0]).toMatchObject({ speaker: 'agent', text: 'Hello there', startTime: 0, endTime: 1.5, confidence: 0.93 });
    expect(res.json().turns[0].words).toEqual([
      { word: 'Hello', startTime: 0, endTime: 0.25, confidence: 0.9 },
      { word: 'there', startTime: 0.3, endTime: 0.55, confidence: 0.9 },
    ]);
  });

  it('has no language or duration while the call is in progress', async () => {
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id, { ended: false });
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/conversations/${conversationId}/transcript`);
    expect(res.json()).toEqual({ conversationId, language: null, durationSeconds: null, turns: [] });
  });

  it('answers 404 for another tenant’s conversation', async () => {
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id);
    const res = await call(t.app, other.key, 'GET', `/api/v1/conversations/${conversationId}/transcript`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
  });
});
