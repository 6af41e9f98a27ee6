import { describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { conversationsWorld, message, seedCall, turnFor } from './calls.fixtures.js';

const w = conversationsWorld();

describe('GET /api/v1/conversations/{conversationId}/transcript', () => {
  it('returns the turns with word timing, language and duration', async () => {
    const messages = [message(0, { content: 'Hello there' }), message(1, { content: 'Hi' })];
    const turns = messages.map(turnFor);
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { messages, record: { turns, language: 'en-GB', durationSeconds: 12 } });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/transcript`);
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
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/transcript`);
    expect(res.json()).toEqual({ conversationId, language: null, durationSeconds: null, turns: [] });
  });

  it('answers 404 for another tenant’s conversation', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const res = await call(w.t.app, w.other.key, 'GET', `/api/v1/conversations/${conversationId}/transcript`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
  });
});
