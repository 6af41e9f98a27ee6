import { describe, expect, it } from 'vitest';
import { SttProcessor } from '../../src/processors/stt-processor.js';
import { Harness } from './harness.js';
import { FakeStt } from './pipeline-fakes.js';

/** One 20 ms μ-law carrier frame whose bytes all equal `n` (so the order sent is visible). */
function frame(n: number, at: number) {
  return { kind: 'audio.in' as const, mulaw: new Uint8Array(160).fill(n), pcm: new Int16Array(160), at };
}

/** An open processor; `utterance` opens an utterance first (the turn detector heard speech), as most tests need. */
async function opened(stt: FakeStt, sendChunkMs?: number, utterance = true) {
  const proc = new SttProcessor({ provider: stt, stream: { encoding: 'mulaw', sampleRateHz: 8000, interimResults: true, endpointingMs: 300, utteranceEndMs: 1000 }, clock: () => 0, ...(sendChunkMs === undefined ? {} : { sendChunkMs }) });
  const h = new Harness(proc);
  h.down({ kind: 'call.start', at: 0 } as never);
  await new Promise((r) => setTimeout(r, 0));
  if (utterance) proc.setUtteranceOpen(true);
  return { proc, h, stream: stt.streams[0]! };
}

describe('SttProcessor sends caller audio in chunks', () => {
  it('sends five 20 ms frames per chunk by default while an utterance is open, in order and whole', async () => {
    const stt = new FakeStt();
    const { h, stream, proc } = await opened(stt);
    for (let i = 1; i <= 12; i++) h.down(frame(i, i * 20));
    expect(stream.sent.map((c) => c.length)).toEqual([800, 800]);
    expect(stream.sent.flatMap((c) => [0, 1, 2, 3, 4].map((k) => c[k * 160]))).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(proc.audioMs).toBe(200);
    // Frames still travel down unchanged (the turn detector needs every one at once).
    expect(h.downOf('audio.in')).toHaveLength(12);
  });

  it('sends twelve frames (240 ms) per chunk while no utterance is open, and short chunks from the onset to the close', async () => {
    const stt = new FakeStt();
    const { h, stream, proc } = await opened(stt, undefined, false);
    let t = 20;
    const feed = (n: number) => {
      for (let i = 0; i < n; i++, t += 20) h.down(frame(t / 20, t));
    };
    feed(25);
    expect(stream.sent.map((c) => c.length)).toEqual([1920, 1920]);
    // Speech onset: the held frame goes at once, so the STT hears it when the local VAD did.
    proc.setUtteranceOpen(true);
    expect(stream.sent.map((c) => c.length)).toEqual([1920, 1920, 160]);
    expect(stream.sent[2]![0]).toBe(25);
    feed(10);
    expect(stream.sent.map((c) => c.length)).toEqual([1920, 1920, 160, 800, 800]);
    // The turn was taken: back to long chunks; nothing held is sent early.
    feed(3);
    proc.setUtteranceOpen(false);
    expect(stream.sent).toHaveLength(5);
    feed(9);
    expect(stream.sent.map((c) => c.length)).toEqual([1920, 1920, 160, 800, 800, 1920]);
    // Every frame was sent once, in order.
    expect(stream.sent.flatMap((c) => Array.from({ length: c.length / 160 }, (_, k) => c[k * 160]))).toEqual(Array.from({ length: 47 }, (_, i) => i + 1));
    expect(proc.audioMs).toBe(47 * 20);
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
    expect(next!.sent.map((c) => [c.length, c[0]])).toEqual([
      [160, 6],
      [160, 7],
    ]);
  });
});
