import { describe, expect, it } from 'vitest';
import { AudioOutput } from '../../src/processors/audio-output.js';
import { frames, Harness, mulawMs } from './harness.js';
import { FakeTransport, speech } from './pipeline-fakes.js';

function setup() {
  const transport = new FakeTransport();
  let now = 0;
  const output = new AudioOutput(transport, () => now);
  const h = new Harness(output);
  return { transport, h, output, setNow: (ms: number) => (now = ms) };
}

const concat = (parts: Uint8Array[]) => Uint8Array.from(parts.flatMap((p) => [...p]));

describe('AudioOutput', () => {
  it('forwards audio to the transport with a mark every 100 ms and <turn>:end after tts.done', () => {
    const { transport, h } = setup();
    const audio = mulawMs(250).map((_, i) => i % 256);
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello.'), frames.ttsAudio('t1', audio));
    expect(transport.log).toEqual([
      { type: 'audio', bytes: 800 },
      { type: 'mark', name: 't1:100' },
      { type: 'audio', bytes: 800 },
      { type: 'mark', name: 't1:200' },
      { type: 'audio', bytes: 400 },
    ]);
    // 20 ms chunks: the next mark falls at 300 ms of audio, inside the third chunk.
    for (let i = 0; i < 3; i++) h.down(frames.ttsAudio('t1', mulawMs(20)));
    h.down(frames.ttsDone('t1'));
    expect(transport.marks).toEqual(['t1:100', 't1:200', 't1:300', 't1:end']);
    expect(concat(transport.audio).subarray(0, audio.length)).toEqual(audio);
    expect(transport.audioBytes).toBe(310 * 8);
    // The bottom of the pipeline: nothing leaves downwards.
    expect(h.out.down).toEqual([]);
  });

  it('reports agent.audio-started up at the first audio of a turn only', () => {
    const { h, output, setNow } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello.'));
    expect(h.out.up).toEqual([]);
    setNow(1234);
    h.down(frames.ttsAudio('t1', mulawMs(20)));
    setNow(1300);
    h.down(frames.ttsAudio('t1', mulawMs(20)));
    expect(h.upOf('agent.audio-started')).toEqual([{ kind: 'agent.audio-started', turnId: 't1', at: 1234 }]);
    expect(output.firstAudioAt.get('t1')).toBe(1234);
  });

  it('reports agent.spoken with the full text when the end mark is echoed', () => {
    const { transport, h, setNow } = setup();
    setNow(1000);
    h.down(frames.turnStart('t1', 0, 'system', 'first-message'), frames.sentence('t1', 'Hello there.'), frames.sentence('t1', 'How can I help?'));
    h.down(frames.ttsAudio('t1', mulawMs(250)), frames.ttsDone('t1'));
    transport.echo('t1:200');
    expect(h.upOf('agent.spoken')).toEqual([]);
    setNow(1300);
    transport.echo('t1:end');
    const [spoken] = h.upOf('agent.spoken');
    expect(spoken).toMatchObject({
      turnId: 't1',
      text: 'Hello there. How can I help?',
      heardText: 'Hello there. How can I help?',
      interrupted: false,
      playedMs: 250,
      startedAt: 1000,
      purpose: 'first-message',
      at: 1300,
    });
    expect(spoken!.words.map((w) => w.word)).toEqual(['Hello', 'there.', 'How', 'can', 'I', 'help?']);
    expect(spoken!.words[0]!.startAt).toBe(1000);
    // Reported once: a repeated echo finds nothing.
    transport.echo('t1:end');
    expect(h.upOf('agent.spoken')).toHaveLength(1);
  });

  it('on interrupt clears the carrier and reports the words heard up to the last echoed mark (alignment)', () => {
    const { transport, h, setNow } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello there, how are you today?'));
    // Two chunks; each alignment is relative to the start of its own chunk.
    h.down(frames.ttsAudio('t1', ...speech('Hello there, ', 20)), frames.ttsAudio('t1', ...speech('how are you today?', 20)));
    transport.echo('t1:300'); // 13 chars of the first chunk + "ho": "how" is half heard
    setNow(900);
    h.reset().down(frames.interrupt(900, 'barge-in', 850));
    expect(transport.clears).toBe(1);
    expect(h.kinds('up')).toEqual(['agent.spoken', 'interrupt']);
    const [spoken] = h.upOf('agent.spoken');
    expect(spoken).toMatchObject({ text: 'Hello there, how are you today?', heardText: 'Hello there,', interrupted: true, playedMs: 300, at: 900 });
    // The word timings describe the same words as the heard text.
    expect(spoken!.words.map((w) => [w.word, w.startAt])).toEqual([
      ['Hello', 0],
      ['there,', 120],
    ]);
  });

  it('joins the alignments of pieces synthesised one by one with single spaces in the heard text', () => {
    const { transport, h, setNow } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'I am sorry,'), frames.sentence('t1', 'I am having trouble.'));
    // Each piece went to TTS with a trailing space, and the provider aligned it with a leading one too.
    h.down(frames.ttsAudio('t1', ...speech('I am sorry, ', 20)), frames.ttsAudio('t1', ...speech(' I am having trouble. ', 20)));
    transport.echo('t1:500');
    setNow(900);
    h.reset().down(frames.interrupt(900, 'barge-in', 850));
    const [spoken] = h.upOf('agent.spoken');
    expect(spoken!.heardText).toBe('I am sorry, I am having');
    expect('I am sorry, I am having trouble.'.startsWith(spoken!.heardText)).toBe(true);
  });

  it('on interrupt without alignment estimates the heard words in proportion to the audio played', () => {
    const { transport, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'one two three four five six seven eight'), frames.ttsAudio('t1', mulawMs(400)));
    transport.echo('t1:100'); // a quarter: "one two t" → whole words only
    h.down(frames.interrupt(500));
    const [spoken] = h.upOf('agent.spoken');
    expect(spoken).toMatchObject({ heardText: 'one two', interrupted: true, playedMs: 100 });
    expect(spoken!.words.map((w) => w.word)).toEqual(['one', 'two']);
  });

  it('reports an empty heard text when interrupted before any mark came back', () => {
    const { h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Good morning.'), frames.ttsAudio('t1', mulawMs(300)), frames.interrupt(100));
    expect(h.upOf('agent.spoken')).toMatchObject([{ heardText: '', interrupted: true, playedMs: 0, words: [] }]);
  });

  it('reports nothing on interrupt for a turn that never produced audio', () => {
    const { transport, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Never heard.'), frames.interrupt(100));
    expect(transport.clears).toBe(1);
    expect(h.kinds('up')).toEqual(['interrupt']);
  });

  it('ignores the marks the carrier returns after clear', () => {
    const { transport, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'A long answer.'), frames.ttsAudio('t1', mulawMs(500)), frames.ttsDone('t1'));
    transport.echo('t1:200');
    // FakeTransport.clear() echoes every pending mark, t1:end included, like Twilio.
    h.down(frames.interrupt(300));
    expect(transport.pending).toEqual([]);
    expect(h.upOf('agent.spoken').map((f) => [f.interrupted, f.playedMs])).toEqual([[true, 200]]);
  });

  it('tracks queued turns by their own marks', () => {
    const { transport, h } = setup();
    h.down(frames.turnStart('a'), frames.sentence('a', 'First turn.'), frames.ttsAudio('a', mulawMs(150)), frames.ttsDone('a'));
    h.down(frames.turnStart('b'), frames.sentence('b', 'alpha beta gamma delta'), frames.ttsAudio('b', mulawMs(400)), frames.ttsDone('b'));
    transport.echo('b:200');
    h.down(frames.interrupt(1000));
    expect(h.upOf('agent.spoken').map((f) => [f.turnId, f.interrupted, f.heardText])).toEqual([
      ['a', false, 'First turn.'],
      ['b', true, 'alpha beta'],
    ]);
  });

  it('reports nothing heard for a turn whose synthesis ended without audio', () => {
    // The TTS failed (its tts.done still comes so the turn ends): the end mark returns at once.
    const { transport, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'This was never synthesised.'), frames.ttsDone('t1'));
    transport.echo('t1:end');
    expect(h.upOf('agent.spoken')).toMatchObject([{ turnId: 't1', text: 'This was never synthesised.', heardText: '', interrupted: false, playedMs: 0, words: [] }]);
  });
  it('pauses and resumes the carrier on a tentative barge-in, keeping the turn open until its end mark', () => {
    const { transport, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'Hello there.'), frames.ttsAudio('t1', mulawMs(250)));
    transport.echo('t1:100');
    h.reset().down({ kind: 'agent.pause', at: 500, speechOnsetAt: 420 });
    expect(transport.log.at(-1)).toEqual({ type: 'pause' });
    expect(transport.clears).toBe(0);
    expect(h.kinds('up')).toEqual(['agent.pause']);
    // Audio keeps coming while paused: it goes to the leg, which holds it.
    h.down(frames.ttsAudio('t1', mulawMs(50)), frames.ttsDone('t1'));
    h.down({ kind: 'agent.resume', at: 1100, speechOnsetAt: 420 });
    expect(transport.log.filter((e) => e.type === 'pause' || e.type === 'resume')).toEqual([{ type: 'pause' }, { type: 'resume' }]);
    expect(h.upOf('agent.spoken')).toEqual([]);
    transport.echo('t1:end');
    expect(h.upOf('agent.spoken')).toMatchObject([{ turnId: 't1', heardText: 'Hello there.', interrupted: false, playedMs: 300 }]);
  });

  it('after a pause, an interrupt clears the held audio and reports what was heard before the pause', () => {
    const { transport, h } = setup();
    h.down(frames.turnStart('t1'), frames.sentence('t1', 'one two three four five six seven eight'), frames.ttsAudio('t1', mulawMs(400)));
    transport.echo('t1:200');
    h.down({ kind: 'agent.pause', at: 500, speechOnsetAt: 420 });
    h.reset().down(frames.interrupt(700, 'barge-in', 420));
    expect(transport.clears).toBe(1);
    expect(h.kinds('up')).toEqual(['agent.spoken', 'interrupt']);
    expect(h.upOf('agent.spoken')).toMatchObject([{ heardText: 'one two three four', interrupted: true, playedMs: 200 }]);
  });
});
