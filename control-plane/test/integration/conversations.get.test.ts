import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, seedCall, startCalls } from './calls.fixtures.js';

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let agent: { id: string; name: string };
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

describe('GET /api/v1/conversations/{conversationId}', () => {
  it('returns an in-progress conversation without end, cost or analysis', async () => {
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id, { ended: false });
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      id: conversationId,
      agentId: agent.id,
      agentName: agent.name,
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
    });
    expect(new Date(body.startedAt).toISOString()).toBe(body.startedAt);
  });

  it('returns an ended conversation with its duration, end reason and cost summary', async () => {
    const { conversationId, record } = await seedCall(t.bus, calls, tenant.tenantId, agent.id);
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'completed',
      endedAt: record!.endedAt,
      durationSeconds: 95,
      endReason: 'user_ended',
      cost: { totalUsd: 0.297408, llmUsd: 0.0036, ttsUsd: 0.27, sttUsd: 0.006808, telephonyUsd: 0.017 },
    });
  });

  it('keeps the conversation after its agent is deleted', async () => {
    const doomed = await activeAgent(t.app, tenant.key);
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, doomed.id);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${doomed.id}`)).statusCode).toBe(204);
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ agentId: doomed.id, agentName: doomed.name, status: 'completed' });
  });

  it('answers 404 conversation-not-found for an unknown id and for another tenant’s conversation', async () => {
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id, { ended: false });
    for (const [key, id] of [
      [tenant.key, 'conv_00000000000000000000000000'],
      [other.key, conversationId],
    ] as const) {
      const res = await call(t.app, key, 'GET', `/api/v1/conversations/${id}`);
      expect(res.statusCode).toBe(404);
      expect(res.headers['content-type']).toContain('application/problem+json');
      expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/conversation-not-found$/), status: 404, detail: `Conversation ${id} was not found.` });
    }
  });

  it('needs the conversations:read scope', async () => {
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, agent.id, { ended: false });
    const agentsOnly = await tenant.mintKey({ scopes: ['agents:read'] });
    const res = await call(t.app, agentsOnly.key, 'GET', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode).toBe(403);
    expect(res.json().detail).toContain('conversations:read');
    const reader = await tenant.mintKey({ scopes: ['conversations:read'] });
    expect((await call(t.app, reader.key, 'GET', `/api/v1/conversations/${conversationId}`)).statusCode).toBe(200);
  });
});
