import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TwilioCallerSimulator, runCallerScript, twilioSid } from '@vap/media-gateway/simulators';
import type { CallerStep } from '@vap/media-gateway/simulators';
import { callerSpeechMulaw } from '@vap/voice-pipeline';
import { TWILIO_TOKEN, collectUnhandledRejections, startPlatform } from './platform.js';
import type { Json, Platform } from './platform.js';

// Provider failures on a whole phone call: the simulators' faults are global, so this file
// owns its platform and resets every fault after each test.

// A short first message keeps each call (real-time audio) brief.
const FIRST = 'Harbour Bistro, how can I help?';
const APOLOGY = 'I am sorry, I am having technical difficulties. Please call back later. Goodbye.';
const LINES = { book: 'Hi, I would like to book a table for two tonight.', hours: 'What are your opening hours?' };
const REPLIES = { book: 'Of course. What time would you like to come?' };

let p: Platform;
const rejections = collectUnhandledRejections();

beforeAll(async () => {
  p = await startPlatform('in-process', { TTS_FIRST_BYTE_TIMEOUT_MS: '800' });
  p.providers.simulators.openai!.addReply({ match: 'book a table', reply: REPLIES.book });
}, 60_000);
afterEach(() => {
  expect(rejections.reasons).toEqual([]);
  p.providers.simulators.openai!.resetFaults();
  p.providers.simulators.deepgram!.resetFaults();
  p.providers.simulators.elevenlabs!.resetFaults();
});
afterAll(async () => {
  await p?.close();
  rejections.stop();
  // While collecting, vitest leaves rejections to us: closing must not have caused one either.
  expect(rejections.reasons).toEqual([]);
});

/** Dials a new agent number with a scripted STT for the call; returns the call and its ids. */
async function dial(lines: string[]): Promise<{ call: TwilioCallerSimulator; callSid: string }> {
  const { number } = await p.agentWithNumber({ firstMessage: FIRST });
  const callSid = twilioSid('CA');
  p.providers.simulators.deepgram!.setScript(callSid, lines);
  const placed = await TwilioCallerSimulator.placeCall({ controlPlaneUrl: p.cpUrl, authToken: TWILIO_TOKEN, from: '+14155550100', to: number, callSid });
  if (placed.rejected) throw new Error(`call rejected: ${placed.say}`);
  return { call: placed.call, callSid };
}

const script = (call: TwilioCallerSimulator, steps: CallerStep[]) => runCallerScript(call, steps, { speech: callerSpeechMulaw });

/** The finished conversation of a call, its messages as `role: content`, and its platform events. */
async function outcome(callSid: string): Promise<{ conv: Json; said: string[]; events: { type: string; data: Json }[] }> {
  const conversationId = p.gateway.sessions!.summary(callSid)!.conversationId!;
  const conv = await p.finishedConversation(conversationId);
  const { body } = await p.api('GET', `/api/v1/conversations/${conversationId}/messages`);
  const said = (body.messages as { role: string; content: string }[]).map((m) => `${m.role}: ${m.content}`);
  // SessionEnded is published after the end record commits: wait for it, not for the row.
  await expect.poll(() => p.events.some((e) => e.type === 'SessionEnded' && e.data['conversationId'] === conversationId)).toBe(true);
  return { conv, said, events: p.events.filter((e) => e.data['conversationId'] === conversationId).map((e) => ({ type: e.type, data: e.data })) };
}

/** No session is left behind: the gateway carries no call once this one ended. */
async function expectNoCallLeft(): Promise<void> {
  await expect.poll(() => p.gatewayActiveCalls()).toBe(0);
  expect(p.gateway.sessions!.activeCalls).toBe(0);
}

describe('an LLM failing on a phone call', () => {
  it('apologises and hangs up when every attempt answers 500, and stores the call as failed with the error code', async () => {
    const llm = p.providers.simulators.openai!;
    llm.setFaults({ failNext: { status: 500, count: 1000 } });
    const before = llm.requests.length;
    const { call, callSid } = await dial([LINES.book]);

    const timings = await script(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }, { expectHangup: true }]);

    expect(timings[0]?.latencyMs).not.toBeNull(); // the apology came after the caller's line
    const { conv, said, events } = await outcome(callSid);
    expect(conv).toMatchObject({ status: 'failed', endReason: 'error' });
    expect(await p.storedError(conv.id)).toMatchObject({ code: 'llm.http_500' });
    expect(said).toEqual([`agent: ${FIRST}`, `user: ${LINES.book}`, `agent: ${APOLOGY}`]);
    // The retry wrapper tried three times, then gave up.
    expect(llm.requests.length - before).toBe(3);
    const errors = events.filter((e) => e.type === 'Error');
    expect(errors).toHaveLength(1);
    expect(errors[0]!.data).toMatchObject({ errorCode: 'llm.http_500', recoverable: false });
    expect(events.map((e) => e.type)).toEqual(['SessionStarted', 'Error', 'SessionEnded']);
    expect(events.at(-1)!.data).toMatchObject({ endReason: 'error' });
    await expectNoCallLeft();
  });

  it('keeps the part of the apology the caller heard before hanging up on it', async () => {
    p.providers.simulators.openai!.setFaults({ failNext: { status: 500, count: 1000 } });
    const { call, callSid } = await dial([LINES.book]);
    const [said] = await script(call, [{ expectAgent: true }, { say: LINES.book }]);
    const heardSince = (t: number) => call.agentAudio.filter((c) => c.startedAt >= t).reduce((ms, c) => ms + c.endedAt - c.startedAt, 0);
    await expect.poll(() => heardSince(said!.speechEndedAt), { timeout: 10_000, interval: 20 }).toBeGreaterThan(2000);
    await call.hangup();

    const { conv, said: messages } = await outcome(callSid);
    // The failure ended the call; the caller only left during its apology.
    expect(conv).toMatchObject({ status: 'failed', endReason: 'error' });
    expect(messages.slice(0, 2)).toEqual([`agent: ${FIRST}`, `user: ${LINES.book}`]);
    const { body } = await p.api('GET', `/api/v1/conversations/${conv.id}/messages`);
    const apology = body.messages[2];
    expect(apology).toMatchObject({ role: 'agent', interrupted: true });
    expect(apology.content.length).toBeGreaterThan(0);
    expect(apology.content.length).toBeLessThan(APOLOGY.length);
    expect(APOLOGY.startsWith(apology.content)).toBe(true);
    await expectNoCallLeft();
  });

  it('retries a single 500 without the caller noticing', async () => {
    const llm = p.providers.simulators.openai!;
    llm.setFaults({ failNext: { status: 500, count: 1 } });
    const before = llm.requests.length;
    const { call, callSid } = await dial([LINES.book]);

    const timings = await script(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }]);
    await call.hangup();

    expect(timings[0]?.latencyMs).not.toBeNull();
    const { conv, said, events } = await outcome(callSid);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'user_ended' });
    expect(await p.storedError(conv.id)).toBeNull();
    expect(said).toEqual([`agent: ${FIRST}`, `user: ${LINES.book}`, `agent: ${REPLIES.book}`]);
    expect(llm.requests.slice(before).map((r) => r.status)).toEqual([500, 200]);
    expect(events.map((e) => e.type)).toEqual(['SessionStarted', 'SessionEnded']);
    await expectNoCallLeft();
  });
});

describe('STT failing on a phone call', () => {
  it('reconnects when the STT socket drops once, and the caller is still understood and answered', async () => {
    const dg = p.providers.simulators.deepgram!;
    // The drop timer starts when a socket opens: 1 s in, the first message is still playing.
    dg.setFaults({ dropAfterMs: 1000 });
    const { call, callSid } = await dial([LINES.book]);
    const sockets = () => dg.connections.filter((c) => c.callKey === callSid);
    const run = script(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }]);
    run.catch(() => undefined); // awaited below; no unhandled rejection meanwhile
    await expect.poll(() => sockets()[0]?.closed, { timeout: 5000, interval: 20 }).toBe(true);
    dg.resetFaults(); // before the reconnect (200 ms later) opens the next socket
    const timings = await run;
    await call.hangup();

    expect(timings[0]?.latencyMs).not.toBeNull();
    expect(sockets()).toHaveLength(2);
    const { conv, said, events } = await outcome(callSid);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'user_ended' });
    expect(said).toEqual([`agent: ${FIRST}`, `user: ${LINES.book}`, `agent: ${REPLIES.book}`]);
    // The drop is reported as a recoverable Error (the socket closed with 1006): the call went on.
    const errors = events.filter((e) => e.type === 'Error').map((e) => e.data);
    expect(errors).toEqual([expect.objectContaining({ errorCode: 'stt.connection_lost', recoverable: true })]);
    expect(events.at(-1)).toMatchObject({ type: 'SessionEnded', data: { endReason: 'user_ended' } });
    await expectNoCallLeft();
  });

  it('apologises and hangs up once the reconnect budget is spent when the STT socket keeps dropping', async () => {
    const dg = p.providers.simulators.deepgram!;
    dg.setFaults({ dropAfterMs: 500 });
    const { call, callSid } = await dial([LINES.book]);

    await script(call, [{ expectHangup: true }]);

    // The first socket and three reconnects, each dropped.
    expect(dg.connections.filter((c) => c.callKey === callSid)).toHaveLength(4);
    const { conv, said, events } = await outcome(callSid);
    expect(conv).toMatchObject({ status: 'failed', endReason: 'error' });
    const stored = await p.storedError(conv.id);
    expect(stored?.code).toBe('stt.connection_lost');
    expect(said.at(-1)).toBe(`agent: ${APOLOGY}`);
    expect(call.heardAgentAudioMs).toBeGreaterThan(3000); // the apology is about 5 s long
    const errors = events.filter((e) => e.type === 'Error').map((e) => e.data);
    expect(errors.map((e) => e['recoverable'])).toEqual([true, true, true, false]);
    expect(errors.at(-1)).toMatchObject({ errorCode: stored!.code });
    expect(events.at(-1)).toMatchObject({ type: 'SessionEnded', data: { endReason: 'error' } });
    await expectNoCallLeft();
  });
});

// The turn detector waits silenceDurationMs + utteranceEndMs (500 + 1000) for the STT's final
// after the caller stops, on the session clock. A final later than that (a slow STT, or a
// gateway behind under overload) must still get the caller answered, once per utterance.
describe('a slow STT on a phone call', () => {
  const words = (text: string) => text.toLowerCase().replace(/[^a-z' ]/g, '').split(' ').filter(Boolean);

  it('answers the interim words when every STT message is 2 s late, and the late final neither repeats the turn nor leaks into the next', async () => {
    p.providers.simulators.deepgram!.setFaults({ firstResultDelayMs: 2000 });
    const { call, callSid } = await dial([LINES.book, LINES.hours]);
    const timings = await script(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }, { say: LINES.hours }, { expectAgent: true }]);
    await call.hangup();

    expect(timings.map((t) => t.latencyMs !== null)).toEqual([true, true]);
    const { conv, said } = await outcome(callSid);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'user_ended' });
    // One user turn per line, each the start of what was said (the interim words that were in).
    const users = said.filter((m) => m.startsWith('user: ')).map((m) => m.slice('user: '.length));
    expect(users).toHaveLength(2);
    for (const [i, line] of [LINES.book, LINES.hours].entries()) {
      const heard = words(users[i]!);
      expect(heard.length, users[i]).toBeGreaterThan(0);
      expect(words(line).slice(0, heard.length), users[i]).toEqual(heard);
    }
    // Stored with the STT's word times and confidence, though no final was in.
    const { body: transcript } = await p.api('GET', `/api/v1/conversations/${String(conv['id'])}/transcript`);
    const stored = (transcript['turns'] as Json[]).filter((t) => t['speaker'] === 'user') as { text: string; confidence: number; words: { word: string; startTime: number; endTime: number }[] }[];
    expect(stored.map((t) => t.text)).toEqual(users);
    let lastEnd = 0;
    for (const t of stored) {
      expect(t.confidence, t.text).toBeGreaterThan(0.5);
      expect(words(t.words.map((w) => w.word).join(' ')), t.text).toEqual(words(t.text));
      for (const w of t.words) {
        expect(w.startTime, t.text).toBeGreaterThanOrEqual(lastEnd);
        expect(w.endTime, t.text).toBeGreaterThan(w.startTime);
        lastEnd = w.endTime;
      }
    }
    expect(said).toHaveLength(5); // first message, then a reply to each turn
    await expectNoCallLeft();
  }, 60_000);

  it('answers the final when the STT sent nothing before the deadline (every message 5 s late)', async () => {
    p.providers.simulators.deepgram!.setFaults({ firstResultDelayMs: 5000 });
    const { call, callSid } = await dial([LINES.book]);
    const timings = await script(call, [{ expectAgent: true }, { say: LINES.book }, { expectAgent: true }]);
    await call.hangup();

    // Speech end → the final (~5.3 s later) → the reply.
    expect(timings[0]?.latencyMs).toBeGreaterThan(5000);
    const { conv, said } = await outcome(callSid);
    expect(conv).toMatchObject({ status: 'completed', endReason: 'user_ended' });
    expect(said).toEqual([`agent: ${FIRST}`, `user: ${LINES.book}`, `agent: ${REPLIES.book}`]);
    await expectNoCallLeft();
  }, 60_000);
});

describe('TTS stalling on a phone call', () => {
  it('gives up after one retry and hangs up without an apology, storing the call as failed', async () => {
    const el = p.providers.simulators.elevenlabs!;
    const { call, callSid } = await dial([LINES.book]);
    await script(call, [{ expectAgent: true }]);
    // From now on the TTS takes text and never answers (the platform's stall limit is 800 ms).
    el.setFaults({ neverRespond: true });
    // A TTS stream is a socket on `stream-input`, a context on `multi-stream-input` (the default): the socket id of each.
    const streams = (): number[] => el.connections.flatMap((c) => (c.endpoint === 'multi-stream-input' ? c.contexts.map(() => c.id) : [c.id]));
    const socketsBefore = el.connections.length;
    const streamsBefore = streams().length;

    const [said] = await script(call, [{ say: LINES.book }, { expectHangup: true }]);
    const hungUpAt = performance.now();

    // Nothing was heard after the caller's line; the line was closed within the two stall limits and the LLM time.
    expect(call.firstAgentAudioAfter(said!.speechEndedAt)).toBeNull();
    expect(hungUpAt - said!.speechEndedAt).toBeLessThan(6000);
    const turnStreams = streams().slice(streamsBefore);
    expect(turnStreams).toHaveLength(2); // the turn's stream and its one retry
    // The retry does not reuse the socket that stalled: on multi-stream-input the turn's context was
    // on the call's socket (opened by the first message), the retry's on a new one.
    expect(turnStreams[1]).not.toBe(turnStreams[0]);
    expect(el.connections.length - socketsBefore).toBe(el.connections[0]!.endpoint === 'multi-stream-input' ? 1 : 2);
    const outcomeOf = await outcome(callSid);
    expect(outcomeOf.conv).toMatchObject({ status: 'failed', endReason: 'error' });
    expect(await p.storedError(outcomeOf.conv.id)).toMatchObject({ code: 'tts.timeout' });
    expect(outcomeOf.said).toEqual([`agent: ${FIRST}`, `user: ${LINES.book}`]);
    const errors = outcomeOf.events.filter((e) => e.type === 'Error').map((e) => e.data);
    expect(errors).toEqual([expect.objectContaining({ errorCode: 'tts.timeout', recoverable: true }), expect.objectContaining({ errorCode: 'tts.timeout', recoverable: false })]);
    expect(outcomeOf.events.at(-1)).toMatchObject({ type: 'SessionEnded', data: { endReason: 'error' } });
    await expectNoCallLeft();
  });
});
