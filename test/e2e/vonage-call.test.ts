import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VonageCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { startPlatform } from './platform.js';
import type { Platform } from './platform.js';
import { LINES, REPLIES } from './booking-script.js';

const SECRET = 'e2e-vonage-signature-secret-0000000000';
const GREETING = 'Hello! Thanks for calling Harbour Bistro. How can I help?';

describe('a phone call over Vonage, end to end', () => {
  let p: Platform;

  beforeAll(async () => {
    p = await startPlatform('in-process', { VONAGE_SIGNATURE_SECRET: SECRET });
    const llm = p.providers.simulators.openai!;
    llm.addReply({ match: 'book a table', reply: REPLIES.book });
    llm.addReply({ match: 'Goodbye', reply: REPLIES.bye });
  }, 60_000);
  afterAll(async () => p?.close());

  it('answers the signed answer webhook with an NCCO, talks over the Vonage WebSocket in L16 16 kHz, hangs up, and stores the call as a Vonage phone call', async () => {
    const { number, agentId } = await p.agentWithNumber();
    // The platform helper provisions Twilio numbers: this one belongs to Vonage.
    await p.cp.database.pool.query(`update phone_numbers set provider = 'vonage' where phone_number = $1`, [number]);
    const uuid = randomUUID();
    p.providers.simulators.deepgram!.setScript(uuid, [LINES.book, LINES.bye]);

    // Vonage sends numbers without '+'.
    const placed = await VonageCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, signatureSecret: SECRET, from: '14155550100', to: number.slice(1), uuid });
    expect(placed.rejected).toBe(false);
    if (placed.rejected) return;
    const call = placed.call;
    expect(call.headers).toMatchObject({ agentId, tenantId: p.tenant.tenantId, callSid: uuid, from: '+14155550100', to: number, direction: 'inbound' });

    const timings = await runCallerScript(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }, { say: LINES.bye }, { expectHangup: true }], { speech: callerSpeechMulaw });
    for (const t of timings) expect(t.latencyMs, t.said).not.toBeNull();
    // The agent hung up: our side closed the socket (1000), so Vonage reports disconnected, then completed.
    expect(await call.closed).toBe(1000);
    expect(await call.eventsPosted).toEqual([
      { status: 'answered', httpStatus: 204 },
      { status: 'disconnected', httpStatus: 204 },
      { status: 'completed', httpStatus: 204 },
    ]);
    expect(call.protocolErrors).toEqual([]);
    expect(call.receivedMedia.length).toBeGreaterThan(50);
    expect(call.receivedMedia.every((f) => f.bytes === 640)).toBe(true);

    const summary = p.gateway.sessions!.summary(uuid)!;
    expect(summary.conversationId).toMatch(/^conv_/);
    const conv = await p.finishedConversation(summary.conversationId!);
    expect(conv).toMatchObject({ agentId, channel: 'phone', direction: 'inbound', status: 'completed', caller: { phoneNumber: '+14155550100', country: 'US' } });

    const { body: transcript } = await p.api('GET', `/api/v1/conversations/${conv.id}/transcript`);
    const turns = transcript.turns.map((t: { speaker: string; text: string }) => `${t.speaker}: ${t.text}`);
    expect(turns).toContain(`agent: ${GREETING}`);
    expect(turns).toContain(`user: ${LINES.book}`);
    expect(turns).toContain(`agent: ${REPLIES.book}`);
    expect(turns).toContain(`user: ${LINES.bye}`);
    expect(turns[turns.length - 1]).toBe(`agent: ${REPLIES.bye}`);

    const { body: costs } = await p.api('GET', `/api/v1/conversations/${conv.id}/costs`);
    expect(costs.breakdown.telephony.provider).toBe('vonage');
    expect(costs.breakdown.telephony.minutes).toBe(Math.max(1, Math.ceil(conv.durationSeconds / 60)));
    expect(costs.breakdown.telephony.cost).toBeCloseTo(0.004 * costs.breakdown.telephony.minutes, 6);
    expect(await p.gatewayActiveCalls()).toBe(0);
  });

  it('apologises in an NCCO for a number that is not routed, refuses an answer webhook signed with another secret and an unsigned WebSocket upgrade', async () => {
    const placed = await VonageCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, signatureSecret: SECRET, from: '14155550100', to: '15550009999' });
    expect(placed).toMatchObject({ rejected: true, say: 'Sorry, we cannot take your call right now. Please try again later. Goodbye.' });
    await expect(VonageCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, signatureSecret: 'another-secret', from: '14155550100', to: '15550009999' })).rejects.toThrow(/HTTP 403/);
    // The gateway shares the secret: a WebSocket upgrade without Vonage's signed JWT is refused.
    const uri = `${p.gateway.url.replace('http', 'ws')}/api/v1/webhooks/vonage/media-stream`;
    await expect(VonageCallerSimulator.connect(uri, { headers: { agentId: 'agt_x', tenantId: 'ten_x', callSid: randomUUID() } })).rejects.toMatchObject({ status: 403 });
  });
});
