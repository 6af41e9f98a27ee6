import { describe, expect, it } from 'vitest';
import { priceCall } from '@vap/shared';
import { call } from '../helpers.js';
import { conversationsWorld, seedCall } from './calls.fixtures.js';

const w = conversationsWorld();

describe('GET /api/v1/conversations/{conversationId}/costs', () => {
  it('returns the priced usage of an ended call', async () => {
    const { conversationId, record } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/costs`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      conversationId,
      currency: 'USD',
      total: 0.297408,
      breakdown: {
        llm: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 12_000, outputTokens: 3_000, cost: 0.0036 },
        tts: { provider: 'elevenlabs', characters: 1_500, cost: 0.27 },
        stt: { provider: 'deepgram', audioSeconds: 95, cost: 0.006808 },
        telephony: { provider: 'twilio', minutes: 2, cost: 0.017 },
      },
    });
    const { currency, total, ...breakdown } = priceCall(record!.usage, 'inbound');
    expect({ currency, total, breakdown }).toEqual({ currency: res.json().currency, total: res.json().total, breakdown: res.json().breakdown });
  });

  it('prices an outbound call at the outbound carrier rate', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { request: { direction: 'outbound' } });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/costs`);
    // 95 s → 2 minutes × 0.014 (Twilio outbound)
    expect(res.json().breakdown.telephony).toEqual({ provider: 'twilio', minutes: 2, cost: 0.028 });
  });

  it('answers 409 invalid-state while the call is in progress', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id, { ended: false });
    const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/conversations/${conversationId}/costs`);
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/invalid-state$/), detail: expect.stringContaining('still in progress') });
  });

  it('answers 404 for another tenant’s conversation and for an unknown id', async () => {
    const { conversationId } = await seedCall(w.t.bus, w.calls, w.tenant.tenantId, w.agent.id);
    for (const [key, id] of [
      [w.other.key, conversationId],
      [w.tenant.key, 'conv_00000000000000000000000000'],
    ] as const) {
      const res = await call(w.t.app, key, 'GET', `/api/v1/conversations/${id}/costs`);
      expect(res.statusCode).toBe(404);
      expect(res.json().type).toMatch(/\/errors\/conversation-not-found$/);
    }
  });
});
