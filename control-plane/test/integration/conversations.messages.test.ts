import { describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { conversationsWorld, message, seedCall } from './calls.fixtures.js';

const w = conversationsWorld();

describe('GET /api/v1/conversations/{conversationId}/messages', () => {
  it('lists the messages in conversation order, with interrupted w.agent messages marked', async () => {
    const m = [message(0, { content: 'Hi, this is Ava.' }), message(1, { content: 'Hello' }), message(2, { content: 'How can I', interrupted: true, durationMs: 700 }), message(3, { content: 'Wait' })];
    // The record lists them out of order; the API orders by seq.
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { messages: [m[2]!, m[0]!, m[3]!, m[1]!] });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/messages`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      conversationId,
      messages: m.map((x) => ({ id: x.id, role: x.role, content: x.content, timestamp: x.timestamp, durationMs: x.durationMs, interrupted: x.interrupted })),
    });
  });

  it('lists the messages stored so far while the call is in progress', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const first = message(0);
    await w.calls.calls.recordMessage({ tenantId: w.tenant.tenantId, conversationId, message: first, turn: null });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/messages`);
    expect(res.json().messages.map((x: { id: string }) => x.id)).toEqual([first.id]);
  });

  it('answers 404 for another tenant’s conversation', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const res = await call(w.t.app, w.other.key, 'GET', `/api/v1/conversations/${conversationId}/messages`);
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
  });
});
