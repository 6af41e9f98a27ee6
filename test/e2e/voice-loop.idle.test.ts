import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript, twilioSid } from '@vap/media-gateway/simulators';
import type { PlayedChunk } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { TWILIO_TOKEN, collectUnhandledRejections, startPlatform } from './platform.js';
import type { Platform } from './platform.js';

// A caller who goes quiet: the agent prompts after silenceDetection.timeoutSeconds, then
// says goodbye and hangs up after maxIdleTimeSeconds more (voice-session.ts, call-timers.ts).

const FIRST = 'Harbour Bistro, how can I help?';
const PROMPT = 'Are you still there?';
const GOODBYE = 'It seems you have stepped away. Goodbye.';
const LINES = { yes: 'Yes, sorry, I am still here.' };
const REPLIES = { yes: 'No problem. What can I do for you?' };
const IDLE = { maxIdleTimeSeconds: 5, silenceDetection: { enabled: true, timeoutSeconds: 5, message: PROMPT }, firstMessage: FIRST };

let p: Platform;
const rejections = collectUnhandledRejections();

beforeAll(async () => {
  p = await startPlatform('in-process');
  p.providers.simulators.openai!.addReply({ match: 'still here', reply: REPLIES.yes });
}, 60_000);
afterEach(() => expect(rejections.reasons).toEqual([]));
afterAll(async () => {
  await p?.close();
  rejections.stop();
  // While collecting, vitest leaves rejections to us: closing must not have caused one either.
  expect(rejections.reasons).toEqual([]);
});

async function dial(lines: string[]): Promise<{ call: TwilioCallerSimulator; callSid: string }> {
  const { number } = await p.agentWithNumber(IDLE);
  const callSid = twilioSid('CA');
  p.providers.simulators.deepgram!.setScript(callSid, lines);
  const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
  if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
  return { call: placed.call, callSid };
}

/** Agent utterances as the caller heard them: audible chunks less than 1.5 s apart are one. */
function utterances(chunks: readonly PlayedChunk[]): { startedAt: number; endedAt: number }[] {
  const out: { startedAt: number; endedAt: number }[] = [];
  for (const c of chunks) {
    const last = out[out.length - 1];
    if (last && c.startedAt - last.endedAt < 1500) last.endedAt = Math.max(last.endedAt, c.endedAt);
    else out.push({ startedAt: c.startedAt, endedAt: c.endedAt });
  }
  return out;
}

async function messagesOf(conversationId: string): Promise<string[]> {
  const { body } = await p.api('GET', `/api/v1/conversations/${conversationId}/messages`);
  return (body.messages as { role: string; content: string }[]).map((m) => `${m.role}: ${m.content}`);
}

describe('a silent caller', () => {
  it('is prompted after 5 s of silence, then told goodbye and hung up on after 5 s more; the call is completed with idle_timeout', async () => {
    const { call, callSid } = await dial([]);

    await runCallerScript(call, [{ expectHangup: true, timeoutMs: 25_000 }], { speech: callerSpeechMulaw });

    const heard = utterances(call.agentAudio);
    expect(heard).toHaveLength(3); // first message, prompt, goodbye
    const [first, prompt, goodbye] = heard as [(typeof heard)[0], (typeof heard)[0], (typeof heard)[0]];
    // Silence counts from the end of the agent's audio; the next audio adds TTS and pacing latency.
    expect(prompt.startedAt - first.endedAt).toBeGreaterThanOrEqual(4900);
    expect(prompt.startedAt - first.endedAt).toBeLessThan(7000);
    expect(goodbye.startedAt - prompt.endedAt).toBeGreaterThanOrEqual(4900);
    expect(goodbye.startedAt - prompt.endedAt).toBeLessThan(7000);

    const conversationId = p.gateway.sessions!.summary(callSid)!.conversationId!;
    const conv = await p.finishedConversation(conversationId);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'idle_timeout' });
    expect(await p.storedError(conversationId)).toBeNull();
    expect(await messagesOf(conversationId)).toEqual([`agent: ${FIRST}`, `agent: ${PROMPT}`, `agent: ${GOODBYE}`]);
    await expect.poll(() => p.events.find((e) => e.type === 'SessionEnded' && e.data['conversationId'] === conversationId)?.data).toMatchObject({ endReason: 'idle_timeout' });
    expect(p.events.filter((e) => e.type === 'Error' && e.data['conversationId'] === conversationId)).toEqual([]);
    await expect.poll(() => p.gatewayActiveCalls()).toBe(0);
  });

  it('keeps the call alive by answering the prompt', async () => {
    const { call, callSid } = await dial([LINES.yes]);

    await runCallerScript(call, [{ expectAgent: true }], { speech: callerSpeechMulaw });
    // The prompt, after 5 s of silence, heard to its end.
    await expect.poll(() => utterances(call.agentAudio).length, { timeout: 10_000 }).toBe(2);
    await expect.poll(() => call.playbackQueuedMs === 0 && performance.now() - call.agentAudio.at(-1)!.endedAt > 500, { timeout: 5000 }).toBe(true);
    const prompt = utterances(call.agentAudio)[1]!;

    const timings = await runCallerScript(call, [{ say: LINES.yes }, { expectAgent: true }, { wait: 1000 }], { speech: callerSpeechMulaw });

    expect(timings[0]?.latencyMs).not.toBeNull();
    // Well past the point where the unanswered prompt would have ended the call (5 s after it).
    expect(performance.now() - prompt.endedAt).toBeGreaterThan(6000);
    const conversationId = p.gateway.sessions!.summary(callSid)!.conversationId!;
    const { body: live } = await p.api('GET', `/api/v1/conversations/${conversationId}`);
    expect(live.status).toBe('in_progress');
    await call.hangup();

    const conv = await p.finishedConversation(conversationId);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'user_ended' });
    expect(await messagesOf(conversationId)).toEqual([`agent: ${FIRST}`, `agent: ${PROMPT}`, `user: ${LINES.yes}`, `agent: ${REPLIES.yes}`]);
    await expect.poll(() => p.gatewayActiveCalls()).toBe(0);
  });
});
