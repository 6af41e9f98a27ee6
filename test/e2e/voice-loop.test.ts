import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { TWILIO_TOKEN, startPlatform } from './platform.js';
import type { Platform } from './platform.js';
import { LINES, REPLIES } from './booking-script.js';

const natsUrl = process.env.TEST_NATS_URL;

// The voice sessions run on the gateway's pipeline thread (the default), and once on its event loop.
describe.each([
  ['in-process', true, '1'],
  ['nats', Boolean(natsUrl), '1'],
  ['in-process', true, '0'],
] as const)('a phone call end to end over the %s bus (PIPELINE_THREADS=%s)', (kind, enabled, pipelineThreads) => {
  let p: Platform;

  beforeAll(async () => {
    if (!enabled) return;
    p = await startPlatform(kind, { PIPELINE_THREADS: pipelineThreads });
    const llm = p.providers.simulators.openai!;
    llm.addReply({ match: 'book a table', reply: REPLIES.book });
    llm.addReply({ match: 'opening hours', reply: REPLIES.hours });
    llm.addReply({ match: 'located', reply: REPLIES.where });
    llm.addReply({ match: '[DTMF] 5', reply: REPLIES.digit });
    llm.addReply({ match: 'Goodbye', reply: REPLIES.bye });
  }, 60_000);
  afterAll(async () => p?.close());

  it.skipIf(!enabled)(
    'answers with the first message, understands the caller, stops when interrupted, takes a key press, hangs up on an end-call phrase, and stores what happened',
    async () => {
      const { number, agentId } = await p.agentWithNumber();
      const callSid = `CA${randomBytes(16).toString('hex')}`;
      p.providers.simulators.deepgram!.setScript(callSid, [LINES.book, LINES.hours, LINES.where, LINES.bye]);

      const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
      expect(placed.rejected).toBe(false);
      if (placed.rejected) return;
      const call = placed.call;
      const timings = await runCallerScript(
        call,
        [
          { expectAgent: true },
          { say: LINES.book },
          { expectAgent: true },
          { say: LINES.hours },
          { sayOverAgent: LINES.where, afterMs: 1500 },
          { expectAgent: true },
          { press: '5' },
          { expectAgent: true },
          { say: LINES.bye },
          { expectHangup: true },
        ],
        { speech: callerSpeechMulaw },
      );

      // The caller heard an answer to each line, and the barge-in cleared the agent's audio.
      const [book, , where, digit, bye] = timings;
      for (const t of [book, where, digit, bye]) expect(t?.latencyMs, t?.said).not.toBeNull();
      expect(call.clears.length).toBeGreaterThanOrEqual(1);
      expect(timings[2]?.bargeInReactionMs).not.toBeNull();

      const summary = p.gateway.sessions!.summary(callSid)!;
      expect(summary.conversationId).toMatch(/^conv_/);
      const conv = await p.finishedConversation(summary.conversationId!);
      expect(conv).toMatchObject({ agentId, channel: 'phone', direction: 'inbound', status: 'completed', caller: { phoneNumber: '+14155550100', country: 'US' } });

      const { body: msgs } = await p.api('GET', `/api/v1/conversations/${conv.id}/messages`);
      const said = msgs.messages.map((m: { role: string; content: string }) => `${m.role}: ${m.content}`);
      expect(said[0]).toBe('agent: Hello! Thanks for calling Harbour Bistro. How can I help?');
      expect(said).toContain(`user: ${LINES.book}`);
      expect(said).toContain(`agent: ${REPLIES.book}`);
      expect(said).toContain(`user: ${LINES.where}`);
      expect(said).toContain(`agent: ${REPLIES.where}`);
      expect(said).toContain('user: [DTMF] 5');
      expect(said).toContain(`agent: ${REPLIES.digit}`);
      expect(said[said.length - 1]).toBe(`agent: ${REPLIES.bye}`);
      // The interrupted answer is stored as far as the caller heard it.
      const cut = msgs.messages.find((m: { role: string; interrupted: boolean }) => m.role === 'agent' && m.interrupted);
      expect(cut).toBeDefined();
      expect(cut.content.length).toBeGreaterThan(0);
      expect(cut.content.length).toBeLessThan(REPLIES.hours.length);
      expect(REPLIES.hours.startsWith(cut.content)).toBe(true);
      for (const m of msgs.messages) expect(m.durationMs).toBeGreaterThan(0);

      const { body: transcript } = await p.api('GET', `/api/v1/conversations/${conv.id}/transcript`);
      const userTurn = transcript.turns.find((t: { speaker: string; text: string }) => t.speaker === 'user' && t.text === LINES.book);
      expect(userTurn.words.length).toBe(LINES.book.split(' ').length);
      expect(userTurn.confidence).toBeGreaterThan(0.5);
      const starts = transcript.turns.map((t: { startTime: number }) => t.startTime);
      expect([...starts].sort((a, b) => a - b)).toEqual(starts);

      const { body: costs } = await p.api('GET', `/api/v1/conversations/${conv.id}/costs`);
      expect(costs.breakdown.llm.inputTokens).toBeGreaterThan(0);
      expect(costs.breakdown.llm.outputTokens).toBeGreaterThan(0);
      expect(costs.breakdown.tts.characters).toBeGreaterThanOrEqual(REPLIES.book.length + REPLIES.where.length);
      expect(costs.breakdown.stt.audioSeconds).toBeGreaterThan(conv.durationSeconds - 3);
      expect(costs.breakdown.telephony.minutes).toBe(Math.max(1, Math.ceil(conv.durationSeconds / 60)));
      const sum = costs.breakdown.llm.cost + costs.breakdown.tts.cost + costs.breakdown.stt.cost + costs.breakdown.telephony.cost;
      expect(costs.total).toBeCloseTo(sum, 5);
      expect(conv.cost.totalUsd).toBeCloseTo(costs.total, 5);

      const types = p.events.filter((e) => e.data['conversationId'] === conv.id).map((e) => e.type);
      expect(types).toContain('SessionStarted');
      expect(types).toContain('SessionEnded');
      expect(summary.turnMetrics.length).toBeGreaterThanOrEqual(3);
    },
    90_000,
  );
});
