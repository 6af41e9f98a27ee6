import { describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { activeAgent, conversationsWorld, seedCall } from './calls.fixtures.js';

const w = conversationsWorld();

describe('GET /api/v1/conversations/{conversationId}', () => {
  it('returns an in-progress conversation without end, cost or analysis', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      id: conversationId,
      agentId: w.agent.id,
      agentName: w.agent.name,
      channel: 'phone',
      status: 'in_progress',
      direction: 'inbound',
      startedAt: expect.any(String),
      endedAt: null,
      durationSeconds: null,
      endReason: null,
      caller: { phoneNumber: '+14155550123', country: 'US' },
      metadata: { campaign: 'spring' },
      cost: null,
      analysis: null,
      recording: { available: false, durationSeconds: null, format: null, expiresAt: null },
      tags: [],
      outcome: null,
      outcomeNotes: null,
    });
    expect(new Date(body.startedAt).toISOString()).toBe(body.startedAt);
  });

  it('returns an ended conversation with its duration, end reason and cost summary', async () => {
    const { conversationId, record } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'completed',
      endedAt: record!.endedAt,
      durationSeconds: 95,
      endReason: 'user_ended',
      cost: { totalUsd: 0.297408, llmUsd: 0.0036, ttsUsd: 0.27, sttUsd: 0.006808, telephonyUsd: 0.017 },
    });
  });

  it('keeps the conversation after its w.agent is deleted', async () => {
    const doomed = await activeAgent(w.t.app, w.tenant.key);
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, doomed.id);
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/agents/${doomed.id}`)).statusCode).toBe(204);
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ agentId: doomed.id, agentName: doomed.name, status: 'completed' });
  });

  it('answers 404 conversation-not-found for an unknown id and for another tenant’s conversation', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    for (const [key, id] of [
      [w.tenant.key, 'conv_00000000000000000000000000'],
      [w.other.key, conversationId],
    ] as const) {
      const res = await call(w.t.app, key, 'GET', `/api/v1/conversations/${id}`);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/conversation-not-found$/), status: 404, detail: `Conversation ${id} was not found.` });
    }
  });

  it('needs the conversations:read scope', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const agentsOnly = await w.tenant.mintKey({ scopes: ['agents:read'] });
    const res = await call(w.t.app, agentsOnly.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(403);
    expect(res.json().detail).toContain('conversations:read');
    const reader = await w.tenant.mintKey({ scopes: ['conversations:read'] });
    expect((await call(w.t.app, reader.key, 'GET', `/api/v1/conversations/${conversationId}`)).statusCode).toBe(200);
  });
});
