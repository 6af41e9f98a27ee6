/**
 * A sandbox phone call, end to end, as a customer's system sees it: a webhook on the
 * agent receives SessionStarted then SessionEnded (after the conversation is stored),
 * signed as the spec says, with the spec's data fields.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { verifyWebhook } from '@vap/shared';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { startCaptureReceiver } from './capture-receiver.js';
import type { CaptureReceiver, CapturedDelivery } from './capture-receiver.js';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Json, Platform } from './platform.js';

interface Delivery extends CapturedDelivery {
  /** The conversation as the API showed it when SessionEnded arrived. */
  conversationAtArrival?: Json;
}

let p: Platform;
let receiver: CaptureReceiver<Delivery>;

beforeAll(async () => {
  receiver = await startCaptureReceiver<Delivery>('/voice-events', async (d) => {
    const event = JSON.parse(d.body) as { type: string; data: { conversationId: string } };
    // A receiver that reacts to SessionEnded by reading the call: it must already be complete.
    if (event.type !== 'SessionEnded') return d;
    return { ...d, conversationAtArrival: (await p.api('GET', `/api/v1/conversations/${event.data.conversationId}`)).body };
  });
  p = await startPlatform('in-process');
  p.providers.simulators.openai!.addReply({ match: 'all for today', reply: 'Thank you for calling. Goodbye!' });
}, 60_000);
afterAll(async () => {
  await p?.close();
  await receiver?.close();
});

describe('webhooks of a sandbox call', () => {
  it('delivers SessionStarted then SessionEnded, signed, with the spec fields, after the call is stored', async () => {
    const { number, agentId } = await p.agentWithNumber();
    const created = await p.api('POST', '/api/v1/webhooks', { agentId, url: receiver.url, events: ['SessionStarted', 'SessionEnded'] });
    expect(created.status).toBe(201);
    const secret = created.body.secret as string;

    const callSid = `CA${randomBytes(16).toString('hex')}`;
    p.providers.simulators.deepgram!.setScript(callSid, ["That's all for today, thanks."]);
    const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
    if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
    await runCallerScript(placed.call, [{ expectAgent: true }, { say: "That's all for today, thanks." }, { expectHangup: true }], { speech: callerSpeechMulaw });

    await expect.poll(() => receiver.received.length, { timeout: 15_000 }).toBe(2);
    const events = receiver.received.map((d) => {
      expect(verifyWebhook(secret, d.headers, d.body)).toMatchObject({ ok: true, deliveryId: JSON.parse(d.body).id });
      return JSON.parse(d.body) as Json;
    });
    expect(events.map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']);
    const [started, ended] = events;
    const conversationId = started.data.conversationId as string;
    const conv = await p.finishedConversation(conversationId);

    for (const e of events) {
      expect(Object.keys(e).sort()).toEqual(['agentId', 'data', 'id', 'tenantId', 'timestamp', 'type']);
      expect(e).toMatchObject({ id: expect.stringMatching(/^evt_/), agentId, tenantId: p.tenant.tenantId });
      expect(new Date(e.timestamp).toISOString()).toBe(e.timestamp);
    }
    expect(Date.parse(started.timestamp)).toBeLessThanOrEqual(Date.parse(ended.timestamp));
    expect(started.data).toEqual({ conversationId, channel: conv.channel, direction: 'inbound', caller: { phoneNumber: '+14155550100', country: 'US' }, metadata: expect.any(Object) });
    expect(ended.data).toEqual({
      conversationId,
      channel: conv.channel,
      direction: 'inbound',
      durationSeconds: conv.durationSeconds,
      endReason: conv.endReason,
      caller: { phoneNumber: '+14155550100', country: 'US' },
      cost: { totalUsd: expect.any(Number), llmUsd: expect.any(Number), ttsUsd: expect.any(Number), sttUsd: expect.any(Number), telephonyUsd: expect.any(Number) },
      metadata: expect.any(Object),
    });
    expect(ended.data.durationSeconds).toBeGreaterThan(0);
    expect(['agent_ended', 'user_ended']).toContain(ended.data.endReason);
    const c = ended.data.cost;
    expect(c.totalUsd).toBeGreaterThan(0);
    expect(c.totalUsd).toBeCloseTo(c.llmUsd + c.ttsUsd + c.sttUsd + c.telephonyUsd, 6);

    // "SessionEnded (session finished and all data available)": the receiver read it complete.
    const seen = receiver.received[1]!.conversationAtArrival;
    expect(seen).toMatchObject({ id: conversationId, status: 'completed', endReason: ended.data.endReason });

    // The delivery log shows both, delivered on the first attempt.
    const log = await p.api('GET', `/api/v1/webhooks/${created.body.id}/deliveries?sortOrder=asc`);
    expect(log.body.data.map((d: Json) => [d.eventType, d.status, d.attemptCount, d.attempts[0].statusCode])).toEqual([
      ['SessionStarted', 'delivered', 1, 204],
      ['SessionEnded', 'delivered', 1, 204],
    ]);
  });
});
