import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TelnyxCallerSimulator, runCallerScript, telnyxCallControlId } from '@vap/media-gateway/simulators';
import { telnyxPublicKeyBase64 } from '@vap/shared';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { startPlatform } from './platform.js';
import type { Platform } from './platform.js';
import { LINES, REPLIES } from './booking-script.js';


// Telnyx signs with its key; the control plane verifies with the public half (TELNYX_PUBLIC_KEY).
const telnyxKey = generateKeyPairSync('ed25519').privateKey;

describe('a phone call over Telnyx end to end', () => {
  let p: Platform;

  beforeAll(async () => {
    p = await startPlatform('in-process', { TELNYX_PUBLIC_KEY: telnyxPublicKeyBase64(telnyxKey) });
    const llm = p.providers.simulators.openai!;
    llm.addReply({ match: 'book a table', reply: REPLIES.book });
    llm.addReply({ match: 'opening hours', reply: REPLIES.hours });
    llm.addReply({ match: 'located', reply: REPLIES.where });
    llm.addReply({ match: 'Goodbye', reply: REPLIES.bye });
  }, 60_000);
  afterAll(async () => p?.close());

  it('routes a signed TeXML webhook to the gateway, talks over the Telnyx stream, hangs up and stores the conversation as a Telnyx phone call', async () => {
    const { agentId } = await p.agentWithNumber();
    // The tenant buys a Telnyx number through the API (the control plane's Telnyx number simulator in sandbox) and points it at the agent.
    const found = await p.api('GET', '/api/v1/telephony/numbers/search?country=US&provider=telnyx&areaCode=415&limit=1');
    expect(found.status).toBe(200);
    const number = found.body.numbers[0].phoneNumber as string;
    const bought = await p.api('POST', '/api/v1/telephony/numbers', { phoneNumber: number, provider: 'telnyx', friendlyName: 'E2E front desk' });
    expect(bought.status, JSON.stringify(bought.body)).toBe(201);
    const numberId = bought.body.id as string;
    expect((await p.api('POST', `/api/v1/telephony/numbers/${numberId}/assign/${agentId}`)).status).toBe(200);
    const callControlId = telnyxCallControlId();
    p.providers.simulators.deepgram!.setScript(callControlId, [LINES.book, LINES.hours, LINES.where, LINES.bye]);

    // An unsigned webhook is refused before anything is routed.
    const unsigned = await fetch(`${p.cpUrl}/webhooks/telnyx/voice`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `CallSid=v3:x&To=${encodeURIComponent(number)}` });
    expect(unsigned.status).toBe(403);

    // Frames are swapped now and then, as Telnyx may deliver them (reference §2.1).
    const placed = await TelnyxCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, signingKey: telnyxKey, from: '+14155550123', to: number, callControlId, stream: { swapEvery: 7 } });
    expect(placed.rejected).toBe(false);
    if (placed.rejected) return;
    expect(placed.texml).toContain('bidirectionalMode="rtp"');
    const call = placed.call;
    const timings = await runCallerScript(
      call,
      [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }, { say: LINES.hours }, { sayOverAgent: LINES.where, afterMs: 1500 }, { expectAgent: true }, { say: LINES.bye }, { expectHangup: true }],
      { speech: callerSpeechMulaw },
    );
    for (const t of timings) expect(t.latencyMs, t.said).not.toBeNull();
    // The barge-in reached the caller as Telnyx `clear`, and the agent's long answer stopped.
    expect(call.clears.length).toBeGreaterThanOrEqual(1);
    expect(timings[2]?.bargeInReactionMs).not.toBeNull();
    expect(call.protocolErrors).toEqual([]);
    expect(call.marksEchoed.length).toBeGreaterThan(0);

    const summary = p.gateway.sessions!.summary(callControlId)!;
    expect(summary.conversationId).toMatch(/^conv_/);
    const conv = await p.finishedConversation(summary.conversationId!);
    expect(conv).toMatchObject({ agentId, channel: 'phone', direction: 'inbound', status: 'completed', caller: { phoneNumber: '+14155550123' } });

    const { body: msgs } = await p.api('GET', `/api/v1/conversations/${conv.id}/messages`);
    const said = msgs.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`);
    expect(said[0]).toBe('agent: Hello! Thanks for calling Harbour Bistro. How can I help?');
    expect(said).toContain(`user: ${LINES.book}`);
    expect(said).toContain(`agent: ${REPLIES.book}`);
    expect(said).toContain(`agent: ${REPLIES.where}`);
    const cut = msgs.messages.find((m: { role: string; interrupted: boolean }) => m.role === 'agent' && m.interrupted);
    expect(REPLIES.hours.startsWith(cut.content)).toBe(true);
    expect(cut.content.length).toBeLessThan(REPLIES.hours.length);
    expect(said).toContain(`user: ${LINES.bye}`);
    expect(said[said.length - 1]).toBe(`agent: ${REPLIES.bye}`);

    const { body: transcript } = await p.api('GET', `/api/v1/conversations/${conv.id}/transcript`);
    expect(transcript.turns.map((t: { speaker: string }) => t.speaker)).toEqual(expect.arrayContaining(['user', 'agent']));

    const { body: costs } = await p.api('GET', `/api/v1/conversations/${conv.id}/costs`);
    expect(costs.breakdown.telephony).toMatchObject({ provider: 'telnyx', minutes: Math.max(1, Math.ceil(conv.durationSeconds / 60)) });
    expect(await p.gatewayActiveCalls()).toBe(0);

    // The number's statistics count the call from the stored conversation.
    const { body: stats } = await p.api('GET', `/api/v1/telephony/numbers/${numberId}/stats`);
    expect(stats).toMatchObject({ numberId, phoneNumber: number, inboundCalls: 1, outboundCalls: 0, totalMinutes: Math.max(1, Math.ceil(conv.durationSeconds / 60)) });
    expect(stats.totalCostUsd).toBeCloseTo(costs.total, 6);

    // Released, the number no longer routes: the next call is refused politely.
    expect((await p.api('DELETE', `/api/v1/telephony/numbers/${numberId}`)).status).toBe(204);
    const after = await TelnyxCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, signingKey: telnyxKey, from: '+14155550123', to: number });
    expect(after).toMatchObject({ rejected: true, say: 'Sorry, we cannot take your call right now. Please try again later. Goodbye.' });
  }, 90_000);

  it('hangs up a Telnyx stream the platform did not route (no stream token): the agent never speaks and nothing is stored', async () => {
    // Telnyx streams arrive unsigned: someone who knows the tenant's and an agent's ids opens one straight to the gateway.
    const { agentId } = await p.agentWithNumber();
    const callControlId = telnyxCallControlId();
    const forged = await TelnyxCallerSimulator.connect(`${p.gateway.url.replace('http', 'ws')}/api/v1/webhooks/telnyx/media-stream`, {
      callControlId,
      customParameters: { agentId, tenantId: p.tenant.tenantId, callSid: callControlId, from: '+14155550199', to: '+14155550100', direction: 'inbound' },
    });
    expect(await forged.closed).toBe(1000);
    expect(forged.receivedMedia).toEqual([]);
    expect(p.gateway.sessions!.summary(callControlId)).toMatchObject({ status: 'rejected', conversationId: null });
    const { body } = await p.api('GET', `/api/v1/conversations?agentId=${agentId}`);
    expect(body.total).toBe(0);
  });

  it('apologises and hangs up on a signed call to a number that is not a Telnyx number of any agent', async () => {
    const { number } = await p.agentWithNumber(); // a Twilio number: not reachable through Telnyx
    const placed = await TelnyxCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, signingKey: telnyxKey, from: '+14155550124', to: number });
    expect(placed).toMatchObject({ rejected: true, say: 'Sorry, we cannot take your call right now. Please try again later. Goodbye.' });
  });
});
