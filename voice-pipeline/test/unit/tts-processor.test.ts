import { afterEach, describe, expect, it, vi } from 'vitest';
import { TTS_LOOKAHEAD_MS, TtsProcessor } from '../../src/processors/tts-processor.js';
import { ProviderError } from '../../src/providers/provider-error.js';
import { frames, Harness, mulawMs, settle } from './harness.js';
import type { FakeTtsOptions } from './pipeline-fakes.js';
import { FakeTts } from './pipeline-fakes.js';

function setup(fake: FakeTtsOptions = {}, lookaheadMs?: number) {
  const tts = new FakeTts(fake);
  let now = 0;
  const processor = new TtsProcessor({ provider: tts, stream: { voiceId: 'v1', outputFormat: 'ulaw_8000' }, clock: () => now, ...(lookaheadMs === undefined ? {} : { lookaheadMs }) });
  const h = new Harness(processor);
  return { tts, h, processor, setNow: (ms: number) => (now = ms) };
}

/** Frames that left downwards as `kind:turnId`. */
const byTurn = (h: Harness) => h.out.down.map((f) => ('turnId' in f ? `${f.kind}:${f.turnId}` : f.kind));

const ttsError = (code: string, retryable: boolean) => new ProviderError({ provider: 'fake-tts', capability: 'tts', code, message: code, retryable });

describe('TtsProcessor', () => {
  it('speaks a turn through one stream: each sentence sent with its flush, end() on llm.done, audio then tts.done', async () => {
    const { tts, h, processor, setNow } = setup();
    h.down(frames.turnStart('t1'));
    await settle();
    expect(tts.streams).toHaveLength(1);
    const s = tts.streams[0]!;
    expect(s.options).toEqual({ voiceId: 'v1', outputFormat: 'ulaw_8000' });
    setNow(100);
    h.down(frames.sentence('t1', 'Hello there.'));
    expect(s.texts).toEqual(['Hello there. ']);
    expect(s.flushes).toBe(1);
    h.down(frames.sentence('t1', 'How can I help?'), frames.llmDone('t1'));
    expect(s.texts).toEqual(['Hello there. ', 'How can I help? ']);
    expect(s.flushes).toBe(2);
    // Each sentence and its flush in one call, so the provider sends one message for both.
    expect(s.flushesWithText).toBe(2);
    expect(s.ended).toBe(true);
    setNow(180);
    const chunk = mulawMs(40);
    s.audio(chunk);
    s.audio(mulawMs(20));
    s.final();
    await settle();
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence', 'tts.sentence', 'tts.audio', 'tts.audio', 'tts.done']);
    expect(h.downOf('tts.audio')[0]).toMatchObject({ turnId: 't1', mulaw: chunk, alignment: null, at: 180 });
    // Characters are counted as sentences go to the provider, as the turn's text joined by single
    // spaces ('Hello there. How can I help?'); first byte measured from the first sentence.
    expect(h.upOf('usage').map((f) => f.usage.ttsCharacters)).toEqual([12, 16]);
    expect(processor.firstByteMs.get('t1')).toBe(80);
  });

  it('sends the sentences that arrived while the stream was opening once it is open', async () => {
    const { tts, h } = setup();
    let open!: () => void;
    tts.openGate = new Promise((r) => (open = r));
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'One sentence here.'), frames.llmDone('t1'));
    await settle();
    expect(tts.streams).toHaveLength(0);
    open();
    await settle();
    const s = tts.streams[0]!;
    expect(s.texts).toEqual(['One sentence here. ']);
    expect(s.flushes).toBe(1);
    expect(s.flushesWithText).toBe(1);
    expect(s.ended).toBe(true);
  });

  it("holds a second turn's frames until the first turn is done, keeping their order", async () => {
    const { tts, h } = setup();
    h.down(frames.turnStart('a'), frames.sentence('a', 'First turn speaks.'), frames.llmDone('a'));
    h.down(frames.turnStart('b'), frames.sentence('b', 'Second turn speaks.'), frames.llmDone('b'));
    await settle();
    const [sa, sb] = tts.streams;
    // The second turn is synthesised in parallel (and finishes first) ...
    sb!.audio(mulawMs(20));
    sb!.final();
    sa!.audio(mulawMs(20));
    await settle();
    // ... but nothing of it comes out while the first is still speaking.
    expect(byTurn(h)).toEqual([
      'agent.turn-start:a',
      'tts.sentence:a',
      'tts.audio:a',
    ]);
    sa!.audio(mulawMs(20));
    sa!.final();
    await settle();
    expect(byTurn(h)).toEqual([
      'agent.turn-start:a',
      'tts.sentence:a',
      'tts.audio:a',
      'tts.audio:a',
      'tts.done:a',
      'agent.turn-start:b',
      'tts.sentence:b',
      'tts.audio:b',
      'tts.done:b',
    ]);
  });

  it('aborts every stream on interrupt and emits nothing more for those turns', async () => {
    const { tts, h } = setup({ honourAbort: false });
    h.down(frames.turnStart('a'), frames.sentence('a', 'First turn speaks.'), frames.turnStart('b'), frames.sentence('b', 'Second turn speaks.'));
    await settle();
    const [sa, sb] = tts.streams;
    sa!.audio(mulawMs(20));
    await settle();
    h.reset().down(frames.interrupt(1000));
    expect(sa!.signal.aborted).toBe(true);
    expect(sb!.signal.aborted).toBe(true);
    expect(h.kinds('down')).toEqual(['interrupt']);
    // A provider slow to stop still delivers: none of it gets through.
    sa!.audio(mulawMs(20));
    sa!.final();
    sb!.audio(mulawMs(20));
    sb!.final();
    h.down(frames.sentence('a', 'Late sentence.'), frames.llmDone('b'));
    await settle();
    expect(h.kinds('down')).toEqual(['interrupt']);
    expect(h.out.up).toEqual([]);
    // The next turn speaks normally.
    h.down(frames.turnStart('c'), frames.sentence('c', 'After the interrupt.'), frames.llmDone('c'));
    await settle();
    tts.streams[2]!.audio(mulawMs(20));
    tts.streams[2]!.final();
    await settle();
    expect(h.kinds('down')).toEqual(['interrupt', 'agent.turn-start', 'tts.sentence', 'tts.audio', 'tts.done']);
  });

  it('gives up a stream still opening when interrupted, without an error', async () => {
    const { tts, h } = setup();
    tts.openGate = new Promise(() => undefined);
    h.down(frames.turnStart('a'), frames.sentence('a', 'Never spoken at all.'));
    await settle();
    h.down(frames.interrupt(10));
    await settle();
    expect(tts.openSignals[0]!.aborted).toBe(true);
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence', 'interrupt']);
    expect(h.upOf('error')).toEqual([]);
  });

  it('reopens once after a retryable failure before any audio and resends the text', async () => {
    const { tts, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello there.'), frames.sentence('t1', 'How can I help?'));
    await settle();
    tts.streams[0]!.fail(ttsError('tts.connection_lost', true));
    await settle();
    expect(tts.streams).toHaveLength(2);
    const errors = h.upOf('error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ fatal: false, error: { code: 'tts.connection_lost' } });
    const s = tts.streams[1]!;
    expect(s.texts).toEqual(['Hello there. ', 'How can I help? ']);
    h.down(frames.llmDone('t1'));
    expect(s.ended).toBe(true);
    s.audio(mulawMs(20));
    s.final();
    await settle();
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence', 'tts.sentence', 'tts.audio', 'tts.done']);
  });

  it('reports a fatal error and ends the turn when the retry fails too', async () => {
    const { tts, h } = setup();
    tts.openErrors.push(ttsError('tts.http_503', true), ttsError('tts.http_503', true));
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello there.'), frames.llmDone('t1'));
    await settle();
    expect(tts.openSignals).toHaveLength(2);
    expect(h.upOf('error').map((f) => [f.error.code, f.fatal])).toEqual([
      ['tts.http_503', false],
      ['tts.http_503', true],
    ]);
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence', 'tts.done']);
  });

  it('does not retry a failure after audio was already produced', async () => {
    const { tts, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello there.'), frames.llmDone('t1'));
    await settle();
    tts.streams[0]!.audio(mulawMs(20));
    await settle();
    tts.streams[0]!.fail(ttsError('tts.connection_lost', true));
    await settle();
    expect(tts.streams).toHaveLength(1);
    expect(h.upOf('error').map((f) => f.fatal)).toEqual([true]);
    expect(h.kinds('down')).toEqual(['agent.turn-start', 'tts.sentence', 'tts.audio', 'tts.done']);
  });

  describe('lookahead: the next sentence waits while the turn\'s audio is far ahead of playback', () => {
    afterEach(() => void vi.useRealTimers());

    /** A turn that has played from t=100 with 3 s of audio given, its second sentence and llm.done in at t=200. */
    async function playing(lookaheadMs: number) {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const t = setup({}, lookaheadMs);
      t.h.down(frames.turnStart('t1'), frames.sentence('t1', 'We are open every day from eleven until ten.'));
      await settle();
      const s = t.tts.streams[0]!;
      t.setNow(100);
      s.audio(mulawMs(3000));
      await settle();
      t.setNow(200);
      t.h.down(frames.sentence('t1', 'On holidays we keep Sunday hours.'), frames.llmDone('t1'));
      return { ...t, s };
    }

    it('is 3 s by default', () => expect(TTS_LOOKAHEAD_MS).toBe(3000));

    it('holds it (not sent, counted or passed on) until the audio is lookaheadMs ahead, then sends it and end()', async () => {
      const { h, s, setNow } = await playing(1000);
      // 3000 ms given, 100 ms played: 2900 ahead.
      expect(s.texts).toEqual(['We are open every day from eleven until ten. ']);
      expect(s.ended).toBe(false);
      expect(h.downOf('tts.sentence').map((f) => f.text)).toEqual(['We are open every day from eleven until ten.']);
      expect(h.upOf('usage').map((f) => f.usage.ttsCharacters)).toEqual([44]);
      // 1 ms before the audio is 1000 ms ahead: still held.
      setNow(2099);
      vi.advanceTimersByTime(1898);
      expect(s.texts).toHaveLength(1);
      setNow(2100);
      vi.advanceTimersByTime(2);
      expect(s.texts).toEqual(['We are open every day from eleven until ten. ', 'On holidays we keep Sunday hours. ']);
      expect(s.flushesWithText).toBe(2);
      expect(s.ended).toBe(true);
      expect(h.downOf('tts.sentence').map((f) => f.text)).toEqual(['We are open every day from eleven until ten.', 'On holidays we keep Sunday hours.']);
      expect(h.upOf('usage').map((f) => f.usage.ttsCharacters)).toEqual([44, 34]);
    });

    it('a barge-in while it is held: it is never sent nor counted', async () => {
      const { h, s, setNow } = await playing(1000);
      h.down(frames.interrupt(700));
      setNow(5000);
      vi.advanceTimersByTime(5000);
      expect(s.texts).toHaveLength(1);
      expect(s.signal.aborted).toBe(true);
      expect(h.upOf('usage')).toHaveLength(1);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('sends it at once when the audio given is less than lookaheadMs ahead', async () => {
      const { s } = await playing(3000);
      expect(s.texts).toHaveLength(2);
      expect(s.ended).toBe(true);
    });

    it("counts the earlier turn's audio still to play before a queued turn's own", async () => {
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const { tts, h, setNow } = setup({}, 1000);
      h.down(frames.turnStart('a'), frames.sentence('a', 'First turn speaks.'));
      h.down(frames.turnStart('b'), frames.sentence('b', 'Second turn speaks.'));
      await settle();
      const [sa, sb] = tts.streams;
      setNow(100);
      sa!.audio(mulawMs(2000)); // plays until 2100
      sb!.audio(mulawMs(500)); // held: plays after a's
      await settle();
      expect(byTurn(h)).toEqual(['agent.turn-start:a', 'tts.sentence:a', 'tts.audio:a']);
      setNow(200);
      h.down(frames.sentence('b', 'It has more to say.'), frames.llmDone('b'));
      // 1900 ms of a's audio still to play, then 500 of b's own: 2400 ahead.
      expect(sb!.texts).toEqual(['Second turn speaks. ']);
      expect(h.upOf('usage').map((f) => f.usage.ttsCharacters)).toEqual([18, 19]);
      vi.advanceTimersByTime(1399);
      expect(sb!.texts).toHaveLength(1);
      setNow(1600); // 500 + 500 ahead
      vi.advanceTimersByTime(1);
      expect(sb!.texts).toEqual(['Second turn speaks. ', 'It has more to say. ']);
      expect(sb!.ended).toBe(true);
    });

    it('after a barge-in, a new turn reckons from its own audio only', async () => {
      const { tts, h, setNow } = await playing(1000);
      h.down(frames.interrupt(300));
      h.down(frames.turnStart('t2'), frames.sentence('t2', 'Sure, which day?'));
      await settle();
      const s2 = tts.streams[1]!;
      setNow(300);
      s2.audio(mulawMs(500));
      await settle();
      h.down(frames.sentence('t2', 'We have slots on Monday.'), frames.llmDone('t2'));
      // 500 ms ahead, not 3000 - 200 of the cut-off turn's as well.
      expect(s2.texts).toEqual(['Sure, which day? ', 'We have slots on Monday. ']);
    });

    it('lookaheadMs 0 sends every sentence as it comes', async () => {
      const { s } = await playing(0);
      expect(s.texts).toHaveLength(2);
      expect(s.ended).toBe(true);
    });
  });

  it('aborts open streams on close', async () => {
    const { tts, h } = setup();
    h.down(frames.turnStart('t1'));
    await settle();
    await h.close();
    expect(tts.streams[0]!.signal.aborted).toBe(true);
  });
});
