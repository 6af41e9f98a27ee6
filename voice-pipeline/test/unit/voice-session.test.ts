import { agentConfigSchema } from '@vap/shared';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProviderError } from '../../src/providers/provider-error.js';
import type { RecordedMessage, RecordedTurn } from '../../src/session/call-record.js';
import { VoiceSession } from '../../src/session/voice-session.js';
import { callerAudio, levelVad, settle } from './harness.js';
import { FakeLlm, FakeStt, FakeTransport, FakeTts, llmReply } from './pipeline-fakes.js';

const T0 = Date.parse('2025-03-14T09:00:00.000Z');
const APOLOGY = 'I am sorry, I am having technical difficulties. Please call back later. Goodbye.';

/**
 * A whole session on fakes: the carrier plays audio instantly (marks echo on a microtask),
 * the TTS speaks 10 ms per character, the STT is played by the test, time is fake.
 */
function setup(agentOver: Record<string, unknown> = {}, llm = new FakeLlm(() => ({ events: llmReply('We are open from nine to five.') })), realtime = false) {
  const agent = agentConfigSchema.parse({
    name: 'Front desk',
    persona: { name: 'Ava', role: 'the receptionist of Smile Dental' },
    voice: { provider: 'elevenlabs', voiceId: 'voice-1' },
    llm: { provider: 'openai', model: 'gpt-4o-mini' },
    transcription: { provider: 'deepgram', language: 'en-US' },
    systemPromptTemplate: 'Help {{callerNumber}} book a visit.',
    firstMessageMode: 'wait_for_user',
    ...agentOver,
  });
  const stt = new FakeStt();
  const tts = new FakeTts({ msPerChar: 10 });
  const transport = new FakeTransport(realtime ? { realtime: true } : { autoEcho: true });
  const messages: [RecordedMessage, RecordedTurn][] = [];
  const errors: [ProviderError, boolean][] = [];
  const bargeIns: number[] = [];
  const session = new VoiceSession({
    agent,
    providers: { stt, llm, tts },
    transport,
    call: { callSid: 'CA123', from: '+14155550123', to: '+14155550100', metadata: {} },
    vad: levelVad(),
    logger: pino({ level: 'silent' }),
    onMessage: (m, t) => messages.push([m, t]),
    onError: (e, recoverable) => errors.push([e, recoverable]),
    onBargeIn: (reactionMs) => bargeIns.push(reactionMs),
    startedAtMs: T0,
    now: () => Date.now(),
  });
  /** What each TTS stream was asked to say, in order. */
  const said = () => tts.streams.map((s) => s.text.trim());
  /** The caller says `text`: `voicedMs` of speech, the STT's final (speechFinal), then silence until the turn ends. */
  const speak = async (text: string, voicedMs = 400, interimAtMs: number | null = null) => {
    for (let t = 0; t < voicedMs; t += 20) {
      if (t === interimAtMs) stt.streams[0]!.emit({ type: 'transcript', text, isFinal: false, speechFinal: false, confidence: 0.5, startMs: 0, endMs: t, words: [] });
      session.audio(callerAudio(true));
      await vi.advanceTimersByTimeAsync(20);
    }
    stt.streams[0]!.emit({ type: 'transcript', text, isFinal: true, speechFinal: true, confidence: 0.9, startMs: 0, endMs: voicedMs, words: [] });
    for (let t = 0; t < 100; t += 20) {
      session.audio(callerAudio(false));
      await vi.advanceTimersByTimeAsync(20);
    }
    await flush();
  };
  return { session, agent, stt, llm, tts, transport, messages, errors, bargeIns, said, speak };
}

/** Runs every pending promise chain (provider streams, echoes) without moving time. */
async function flush(): Promise<void> {
  await settle(300);
}

describe('VoiceSession', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: T0 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('speaks the disclosure, then the first message, at start', async () => {
    const { session, said, messages, transport } = setup({
      firstMessageMode: 'assistant_speaks_first',
      firstMessage: 'Hi, this is Ava. How can I help?',
      aiDisclosureMessage: 'This call may be recorded.',
    });
    session.start();
    await flush();
    expect(said()).toEqual(['This call may be recorded.', 'Hi, this is Ava. How can I help?']);
    expect(transport.marks.filter((m) => m.endsWith(':end'))).toHaveLength(2);
    expect(messages.map(([m]) => [m.role, m.content, m.source])).toEqual([
      ['agent', 'This call may be recorded.', 'system'],
      ['agent', 'Hi, this is Ava. How can I help?', 'system'],
    ]);
  });

  it('says nothing at start in wait_for_user mode', async () => {
    const { session, tts, transport, messages } = setup({ firstMessage: 'Hi, this is Ava.' });
    session.start();
    await flush();
    expect(tts.streams).toEqual([]);
    expect(transport.audio).toEqual([]);
    expect(messages).toEqual([]);
  });

  it('answers a caller turn with an LLM reply that is spoken and recorded', async () => {
    const { session, llm, speak, said, transport, messages } = setup();
    session.start();
    await flush();
    await speak('What are your opening hours?');
    expect(llm.calls).toHaveLength(1);
    const [system, user] = llm.calls[0]!.request.messages;
    expect(system!.role).toBe('system');
    expect(system!.content).toContain('Help +14155550123 book a visit.');
    expect(user).toEqual({ role: 'user', content: 'What are your opening hours?' });
    expect(said()).toEqual(['We are open from nine to five.']);
    expect(transport.audioBytes).toBe('We are open from nine to five. '.length * 10 * 8);
    // onMessage sees every message, in order, as the record holds them.
    expect(messages.map(([m]) => [m.seq, m.role, m.content])).toEqual([
      [0, 'user', 'What are your opening hours?'],
      [1, 'agent', 'We are open from nine to five.'],
    ]);
    expect(messages.map(([m]) => m)).toEqual(session.record.messages);
    expect(messages.map(([, t]) => t)).toEqual(session.record.turns);
    expect(session.record.metrics).toHaveLength(1);
    expect(session.record.usage).toMatchObject({ llmInputTokens: 10, llmOutputTokens: 5, ttsCharacters: 'We are open from nine to five.'.length });
  });

  it('streams the caller\'s audio to the STT every 240 ms while nobody speaks, every 100 ms from the onset until the turn is taken', async () => {
    const { session, stt, speak, messages } = setup();
    session.start();
    await flush();
    const quiet = async (ms: number) => {
      for (let t = 0; t < ms; t += 20) {
        session.audio(callerAudio(false));
        await vi.advanceTimersByTimeAsync(20);
      }
    };
    const sizes = () => stt.streams[0]!.sent.map((c) => c.length);
    await quiet(480);
    expect(sizes()).toEqual([1920, 1920]);
    // 400 ms of speech from 500 ms: the onset (60 ms of voice) sends what is held, then every 100 ms
    // of the call's audio; the turn ends 40 ms into the silence, and 240 ms chunks resume (960 ms).
    await speak('What are your opening hours?');
    expect(messages.map(([m]) => m.content)).toEqual(['What are your opening hours?', 'We are open from nine to five.']);
    expect(sizes().slice(2)).toEqual([480, 480, 800, 800, 800, 480]);
    await quiet(240);
    expect(sizes().slice(8)).toEqual([1920]);
    // Every frame up to 1200 ms went once, in order; the one at 1200-1220 ms waits for the next chunk.
    expect(sizes().reduce((a, b) => a + b, 0)).toBe(1200 * 8);
  });

  it('hangs up after a reply that says an end-call phrase', async () => {
    const { session, speak, transport } = setup({ endCallPhrases: ['goodbye'] }, new FakeLlm(() => ({ events: llmReply('You are welcome. Goodbye!') })));
    session.start();
    await speak('That is all, thanks.');
    expect(transport.hangups).toBe(1);
    const outcome = await session.ended;
    expect(outcome).toMatchObject({ status: 'completed', endReason: 'agent_ended', error: null });
    expect(outcome.record.messages.map((m) => m.content)).toEqual(['That is all, thanks.', 'You are welcome. Goodbye!']);
  });

  it('apologises, then hangs up with outcome failed, when the LLM fails for good', async () => {
    const failure = new ProviderError({ provider: 'fake-llm', capability: 'llm', code: 'llm.http_401', message: 'invalid api key', retryable: false, status: 401 });
    const { session, speak, said, transport, errors, messages } = setup({}, new FakeLlm(() => ({ events: [], error: failure })));
    session.start();
    await speak('Hello?');
    expect(errors).toEqual([[failure, false]]);
    expect(said().at(-1)).toBe(APOLOGY);
    expect(messages.map(([m]) => m.content)).toEqual(['Hello?', APOLOGY]);
    // Hung up only after the apology played to its end mark.
    expect(transport.log.slice(-2)).toEqual([{ type: 'mark', name: expect.stringMatching(/:end$/) }, { type: 'hangup' }]);
    expect(transport.hangups).toBe(1);
    const outcome = await session.ended;
    expect(outcome).toMatchObject({ status: 'failed', endReason: 'error', error: { code: 'llm.http_401', message: 'invalid api key' } });
  });

  it('records a caller hang-up before any turn as abandoned', async () => {
    const { session, transport } = setup({ firstMessageMode: 'assistant_speaks_first', firstMessage: 'Hello, Smile Dental.' });
    session.start();
    await flush();
    await vi.advanceTimersByTimeAsync(3000);
    session.transportEnded('hangup');
    const outcome = await session.ended;
    expect(outcome).toMatchObject({ status: 'abandoned', endReason: 'user_ended', durationMs: 3000 });
    expect(outcome.record.messages.map((m) => m.content)).toEqual(['Hello, Smile Dental.']);
    expect(transport.hangups).toBe(0);
  });

  it('records a caller hang-up after a turn as completed', async () => {
    const { session, speak } = setup();
    session.start();
    await speak('Just checking.');
    session.transportEnded('hangup');
    expect(await session.ended).toMatchObject({ status: 'completed', endReason: 'user_ended' });
  });

  it('prompts an idle caller, then says goodbye and ends with idle_timeout', async () => {
    const { session, said, transport } = setup({
      firstMessageMode: 'assistant_speaks_first',
      firstMessage: 'Hello, Smile Dental.',
      silenceDetection: { enabled: true, timeoutSeconds: 5, message: 'Are you still there?' },
      maxIdleTimeSeconds: 10,
    });
    session.start();
    await flush();
    await vi.advanceTimersByTimeAsync(4999);
    expect(said()).toEqual(['Hello, Smile Dental.']);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(said()).toEqual(['Hello, Smile Dental.', 'Are you still there?']);
    await vi.advanceTimersByTimeAsync(9999);
    expect(transport.hangups).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(said().at(-1)).toBe('It seems you have stepped away. Goodbye.');
    expect(transport.hangups).toBe(1);
    const outcome = await session.ended;
    expect(outcome).toMatchObject({ status: 'completed', endReason: 'idle_timeout' });
    expect(outcome.record.messages.map((m) => m.content)).toEqual(['Hello, Smile Dental.', 'Are you still there?', 'It seems you have stepped away. Goodbye.']);
  });

  it('says goodbye and ends with max_duration at the time limit, hanging up once', async () => {
    const { session, said, transport } = setup({ maxDurationSeconds: 30, maxIdleTimeSeconds: 60 });
    session.start();
    await flush();
    await vi.advanceTimersByTimeAsync(29_999);
    expect(said()).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(said()).toEqual(['We have reached the time limit for this call. Thank you for calling, goodbye.']);
    const outcome = await session.ended;
    expect(outcome).toMatchObject({ status: 'completed', endReason: 'max_duration', durationMs: 30_000 });
    expect(transport.log.slice(-2)).toEqual([{ type: 'mark', name: expect.stringMatching(/:end$/) }, { type: 'hangup' }]);
    // The goodbye's safety timer must not hang up a second time.
    await vi.advanceTimersByTimeAsync(20_000);
    expect(transport.hangups).toBe(1);
  });

  it('restarts the idle clock when the caller presses a key with DTMF disabled', async () => {
    const { session, transport, llm } = setup({ maxIdleTimeSeconds: 10 });
    session.start();
    await vi.advanceTimersByTimeAsync(8000);
    session.dtmf('5');
    await vi.advanceTimersByTimeAsync(9999);
    expect(transport.hangups).toBe(0);
    await vi.advanceTimersByTimeAsync(1);
    await flush();
    expect(llm.calls).toEqual([]);
    expect(transport.hangups).toBe(1);
    expect(await session.ended).toMatchObject({ endReason: 'idle_timeout' });
  });

  it('lets the caller barge in on the first message queued behind the disclosure, keeps what was heard, and answers', async () => {
    const first = 'Hi, this is Ava from Smile Dental. How can I help you today?';
    const { session, transport, messages, bargeIns, said, speak } = setup(
      { firstMessageMode: 'assistant_speaks_first', firstMessage: first, aiDisclosureMessage: 'This call may be recorded.' },
      undefined,
      true,
    );
    session.start();
    await flush();
    // The disclosure plays for 270 ms, the first message for 610 ms after it.
    await vi.advanceTimersByTimeAsync(400);
    await speak('Wait a second, I need to reschedule.', 400, 100);
    expect(transport.clears).toBe(1);
    // Medium: 100 ms of voice pause the agent (the reaction is measured there: the 5th voiced
    // frame, 80 ms after the first on the session clock); the interim's meaningful word,
    // just after, confirms the barge-in, which drops the held audio.
    const pause = transport.log.findIndex((e) => e.type === 'pause');
    expect(pause).toBeGreaterThanOrEqual(0);
    expect(transport.log.findIndex((e) => e.type === 'clear')).toBeGreaterThan(pause);
    expect(transport.log.some((e) => e.type === 'resume')).toBe(false);
    expect(bargeIns).toHaveLength(1);
    expect(bargeIns[0]).toBeGreaterThanOrEqual(80);
    expect(bargeIns[0]).toBeLessThanOrEqual(100);
    await vi.advanceTimersByTimeAsync(2000);
    await flush();
    const [disclosure, cut, user, reply] = messages.map(([m]) => m);
    expect([disclosure!.content, disclosure!.interrupted]).toEqual(['This call may be recorded.', false]);
    expect(cut!.interrupted).toBe(true);
    expect(cut!.content.length).toBeGreaterThan(0);
    expect(first.startsWith(cut!.content)).toBe(true);
    expect(cut!.content.length).toBeLessThan(first.length);
    expect([user!.role, user!.content]).toEqual(['user', 'Wait a second, I need to reschedule.']);
    expect([reply!.role, reply!.content, reply!.interrupted]).toEqual(['agent', 'We are open from nine to five.', false]);
    expect(said().at(-1)).toBe('We are open from nine to five.');
    expect(session.record.interruptions).toBe(1);
  });
  it('takes a pause the transport made first over: one barge-in with the transport\'s reaction, confirmed by the word; with no agent audible, the transport is told to play on', async () => {
    const first = 'Hi, this is Ava from Smile Dental. How can I help you today?';
    const { session, transport, bargeIns, stt } = setup({ firstMessageMode: 'assistant_speaks_first', firstMessage: first }, undefined, true);
    // Before the first message's audio: nothing of this session's is heard, so the transport plays on.
    session.transportPaused(70);
    expect(transport.log.filter((e) => e.type === 'pause' || e.type === 'resume')).toEqual([{ type: 'resume' }]);
    session.start();
    await flush();
    await vi.advanceTimersByTimeAsync(200);
    // Four voiced frames reach the session; the transport paused on the fifth, before handing it over.
    for (let i = 0; i < 4; i++) {
      session.audio(callerAudio(true));
      await vi.advanceTimersByTimeAsync(20);
    }
    session.transportPaused(137);
    expect(transport.log.filter((e) => e.type === 'pause' || e.type === 'resume')).toEqual([{ type: 'resume' }, { type: 'pause' }]);
    expect(bargeIns).toEqual([137]);
    for (let i = 0; i < 5; i++) {
      session.audio(callerAudio(true));
      await vi.advanceTimersByTimeAsync(20);
    }
    // The detector's own rule, met on the next frame, does not pause or report again; the word confirms.
    stt.streams[0]!.emit({ type: 'transcript', text: 'Wait', isFinal: false, speechFinal: false, confidence: 0.5, startMs: 0, endMs: 180, words: [] });
    await flush();
    expect(transport.log.filter((e) => e.type === 'pause' || e.type === 'resume')).toEqual([{ type: 'resume' }, { type: 'pause' }]);
    expect(transport.clears).toBe(1);
    expect(bargeIns).toEqual([137]);
    expect(session.record.interruptions).toBe(1);
  });
});
