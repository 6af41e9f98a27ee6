import { describe, expect, it } from 'vitest';
import { SttProcessor } from '../../src/processors/stt-processor.js';
import { Harness } from './harness.js';
import { FakeStt } from './pipeline-fakes.js';

/** One 20 ms μ-law carrier frame whose bytes all equal `n` (so the order sent is visible). */
function frame(n: number, at: number) {
  return { kind: 'audio.in' as const, mulaw: new Uint8Array(160).fill(n), pcm: new Int16Array(160), at };
}

/** from, from + 1, …, to. */
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
/** The first byte of each 160-byte frame in a chunk: which frames it carries, in order. */
const framesIn = (chunk: Uint8Array) => [...chunk].filter((_, k) => k % 160 === 0);

/** An open processor; `utterance` opens an utterance first (the turn detector heard speech), as most tests need. */
async function opened(stt: FakeStt, sendChunkMs?: number, utterance = true) {
  const proc = new SttProcessor({ provider: stt, stream: { encoding: 'mulaw', sampleRateHz: 8000, interimResults: true, endpointingMs: 300, utteranceEndMs: 1000 }, clock: () => 0, ...(sendChunkMs === undefined ? {} : { sendChunkMs }) });
  const h = new Harness(proc);
  h.down({ kind: 'call.start', at: 0 } as never);
  await new Promise((r) => setTimeout(r, 0));
  if (utterance) proc.setUtteranceOpen(true);
  return { proc, h, stream: stt.streams[0]! };
}

describe('SttProcessor passes transcripts on', () => {
  it('puts interim and final words on the session clock, from when the stream\'s first audio was heard', async () => {
    const stt = new FakeStt();
    const proc = new SttProcessor({ provider: stt, stream: { encoding: 'mulaw', sampleRateHz: 8000, interimResults: true, endpointingMs: 300, utteranceEndMs: 1000 }, clock: () => 0 });
    const h = new Harness(proc);
    h.down({ kind: 'call.start', at: 0 } as never);
    // Audio from 1 s into the call, held while the stream connects: the stream's time 0 is then.
    for (let i = 0; i < 12; i++) h.down(frame(i, 1000 + i * 20));
    await new Promise((r) => setTimeout(r, 0));
    const stream = stt.streams[0]!;
    expect(stream.sent.map(framesIn)).toEqual([range(0, 11)]);
    const word = { word: 'book', startMs: 100, endMs: 300, confidence: 0.6 };
    stream.emit({ type: 'transcript', text: 'book', isFinal: false, speechFinal: false, confidence: 0.6, startMs: 0, endMs: 320, words: [word] });
    stream.emit({ type: 'transcript', text: '', isFinal: false, speechFinal: false, confidence: 0, startMs: 0, endMs: 340, words: [] });
    stream.emit({ type: 'transcript', text: 'Book.', isFinal: true, speechFinal: true, confidence: 0.9, startMs: 0, endMs: 400, words: [{ ...word, confidence: 0.9 }] });
    await new Promise((r) => setTimeout(r, 0));
    const onClock = { word: 'book', startMs: 1100, endMs: 1300 };
    // An empty interim says nothing: it is not passed on.
    expect(h.downOf('transcript.interim')).toEqual([{ kind: 'transcript.interim', text: 'book', words: [{ ...onClock, confidence: 0.6 }], confidence: 0.6, at: 0 }]);
    expect(h.downOf('transcript.final').map((f) => [f.text, f.words, f.confidence, f.startMs, f.endMs])).toEqual([['Book.', [{ ...onClock, confidence: 0.9 }], 0.9, 1000, 1400]]);
  });
});

describe('SttProcessor: a stream open before the caller\'s audio', () => {
  it('counts the stream\'s time from its first frame, not from when it opened', async () => {
    const stt = new FakeStt();
    // Connected at the call's start (0); the carrier's audio begins 1 s later.
    const { h, stream } = await opened(stt);
    for (let i = 0; i < 10; i++) h.down(frame(i, 1000 + i * 20));
    stream.emit({ type: 'transcript', text: 'Book.', isFinal: true, speechFinal: true, confidence: 0.9, startMs: 0, endMs: 200, words: [{ word: 'book', startMs: 100, endMs: 180, confidence: 0.9 }] });
    await new Promise((r) => setTimeout(r, 0));
    expect(h.downOf('transcript.final').map((f) => [f.words, f.startMs, f.endMs])).toEqual([[[{ word: 'book', startMs: 1100, endMs: 1180, confidence: 0.9 }], 1000, 1200]]);
  });
});

describe('SttProcessor sends caller audio in chunks', () => {
  it('sends five 20 ms frames per chunk by default while an utterance is open, in order and whole', async () => {
    const stt = new FakeStt();
    const { h, stream, proc } = await opened(stt);
    for (let i = 1; i <= 12; i++) h.down(frame(i, i * 20));
    expect(stream.sent.map((c) => c.length)).toEqual([800, 800]);
    expect(stream.sent.flatMap((c) => [0, 1, 2, 3, 4].map((k) => c[k * 160]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // Every byte of a chunk is its frames' (a chunk is built in uninitialised memory).
    expect(stream.sent.map((c) => Array.from(c))).toEqual([0, 1].map((n) => Array.from({ length: 800 }, (_, i) => 5 * n + 1 + Math.floor(i / 160))));
    expect(proc.audioMs).toBe(200);
    // Frames still travel down unchanged (the turn detector needs every one at once).
    expect(h.downOf('audio.in')).toHaveLength(12);
  });

  it('sends every 240 ms of audio while no utterance is open, every 100 ms from the onset to the close, on one grid of the call\'s audio', async () => {
    const stt = new FakeStt();
    const { h, stream, proc } = await opened(stt, undefined, false);
    let n = 0;
    const feed = (count: number) => {
      for (let i = 0; i < count; i++) {
        n += 1;
        h.down(frame(n, n * 20));
      }
    };
    /** The frames (by number) each send carried. */
    const sends = () => stream.sent.map(framesIn);
    feed(27);
    expect(sends()).toEqual([range(1, 12), range(13, 24)]);
    // Speech onset at 540 ms: the held frames go at once, so the STT hears them when the local VAD did.
    proc.setUtteranceOpen(true);
    expect(sends()).toEqual([range(1, 12), range(13, 24), range(25, 27)]);
    // Then at every 100 ms of the call's audio (600, 700), not 100 ms after the onset's send.
    feed(8);
    expect(sends().slice(3)).toEqual([range(28, 30), range(31, 35)]);
    // A Finalize sends early; the grid holds (the next send at 800 ms).
    feed(2);
    proc.finalize();
    feed(4);
    expect(sends().slice(5)).toEqual([range(36, 37), range(38, 40)]);
    // The turn was taken: back to the 240 ms grid (960 ms); nothing held is sent early.
    feed(1);
    proc.setUtteranceOpen(false);
    expect(sends()).toHaveLength(7);
    feed(7);
    expect(sends().slice(7)).toEqual([range(41, 48)]);
    expect(sends().flat()).toEqual(range(1, 48));
    expect(proc.audioMs).toBe(48 * 20);
  });

  it('finalize sends the held frame before asking the provider to finalise', async () => {
    const stt = new FakeStt();
    const { h, stream, proc } = await opened(stt);
    h.down(frame(7, 20));
    expect(stream.sent).toHaveLength(0);
    proc.finalize();
    expect(stream.sent.map((c) => c[0])).toEqual([7]);
    expect(stream.finalizes).toBe(1);
    expect(proc.audioMs).toBe(20);
  });

  it('sends every frame on arrival with sendChunkMs 20', async () => {
    const stt = new FakeStt();
    const { h, stream } = await opened(stt, 20);
    for (let i = 1; i <= 3; i++) h.down(frame(i, i * 20));
    expect(stream.sent.map((c) => [c.length, c[0]])).toEqual([
      [160, 1],
      [160, 2],
      [160, 3],
    ]);
  });

  it('held audio is not lost when the stream drops: it is replayed to the next stream', async () => {
    const stt = new FakeStt();
    const { h, stream } = await opened(stt);
    for (let i = 1; i <= 7; i++) h.down(frame(i, i * 20));
    expect(stream.sent).toHaveLength(1);
    // The provider's stream ends unexpectedly: the processor reconnects (first retry after 200 ms).
    stream.channel.end();
    await new Promise((r) => setTimeout(r, 260));
    const next = stt.streams[1];
    expect(next).toBeDefined();
    // Replayed like live audio: held until the chunk they belong to is complete, then sent with it.
    expect(next!.sent).toHaveLength(0);
    for (let i = 8; i <= 10; i++) h.down(frame(i, i * 20));
    expect(next!.sent.map(framesIn)).toEqual([range(6, 10)]);
  });

  it('audio that came while the stream was connecting goes in chunks on the same grid, not a send per frame', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stt = new FakeStt();
    const open = stt.open.bind(stt);
    stt.open = async (options, signal) => {
      await gate;
      return open(options, signal);
    };
    const proc = new SttProcessor({ provider: stt, stream: { encoding: 'mulaw', sampleRateHz: 8000, interimResults: true, endpointingMs: 300, utteranceEndMs: 1000 }, clock: () => 0 });
    const h = new Harness(proc);
    h.down({ kind: 'call.start', at: 0 } as never);
    // 700 ms of the caller's audio while the provider has not answered yet.
    for (let i = 1; i <= 35; i++) h.down(frame(i, i * 20));
    release();
    await new Promise((r) => setTimeout(r, 0));
    const stream = stt.streams[0]!;
    // Two 240 ms chunks (no utterance is open); the last 220 ms wait for the chunk they end.
    expect(stream.sent.map(framesIn)).toEqual([range(1, 12), range(13, 24)]);
    expect(proc.audioMs).toBe(480);
    h.down(frame(36, 36 * 20));
    expect(stream.sent.map(framesIn)).toEqual([range(1, 12), range(13, 24), range(25, 36)]);
    expect(proc.audioMs).toBe(720);
  });
});
