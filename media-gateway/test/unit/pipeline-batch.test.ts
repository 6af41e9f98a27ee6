import { describe, expect, it } from 'vitest';
import { Batcher, unpackBatch } from '../../src/pipeline-threads/protocol.js';
import type { Batch } from '../../src/pipeline-threads/protocol.js';

type Msg = { t: string; s: number };

function collect(): { batches: { batch: Batch<Msg>; transfer: ArrayBuffer[] }[]; batcher: Batcher<Msg> } {
  const batches: { batch: Batch<Msg>; transfer: ArrayBuffer[] }[] = [];
  return { batches, batcher: new Batcher<Msg>((batch, transfer) => batches.push({ batch, transfer })) };
}

function read(batch: Batch<Msg>): (string | number[])[] {
  const seen: (string | number[])[] = [];
  unpackBatch(
    batch,
    (s, audio) => seen.push([s, ...audio]),
    (m) => seen.push(`${m.t}:${m.s}`),
  );
  return seen;
}

const tick = () => new Promise((r) => setImmediate(r));

describe('pipeline thread batches', () => {
  it('posts everything sent in one turn of the loop as one batch, audio and messages in the order sent', async () => {
    const { batches, batcher } = collect();
    batcher.audio(1, Uint8Array.of(1, 2, 3));
    batcher.send({ t: 'mark', s: 1 });
    batcher.audio(2, Uint8Array.of(9));
    batcher.audio(1, Uint8Array.of(4, 5));
    batcher.send({ t: 'clear', s: 2 });
    expect(batches).toHaveLength(0);
    await tick();
    expect(batches).toHaveLength(1);
    expect(read(batches[0]!.batch)).toEqual([[1, 1, 2, 3], 'mark:1', [2, 9], [1, 4, 5], 'clear:2']);
    await tick();
    expect(batches).toHaveLength(1);
  });

  it('copies the audio (the sender may reuse its buffer) and transfers the batch buffers instead of cloning them', async () => {
    const { batches, batcher } = collect();
    const frame = new Uint8Array(160).fill(7);
    batcher.audio(3, frame);
    frame.fill(0);
    await tick();
    const { batch, transfer } = batches[0]!;
    expect(read(batch)).toEqual([[3, ...new Array<number>(160).fill(7)]]);
    expect(transfer).toContain(batch.ops.buffer);
    expect(transfer).toContain(batch.bytes!.buffer);
  });

  it('grows past its first buffer without losing or reordering frames, and sends no audio buffer when there is none', async () => {
    const { batches, batcher } = collect();
    for (let i = 0; i < 40; i++) batcher.audio(i, new Uint8Array(160).fill(i));
    await tick();
    const frames = read(batches[0]!.batch) as number[][];
    expect(frames).toHaveLength(40);
    frames.forEach((f, i) => expect(f).toEqual([i, ...new Array<number>(160).fill(i)]));
    batcher.send({ t: 'start', s: 1 });
    await tick();
    expect(batches[1]!.batch.bytes).toBeNull();
    expect(batches[1]!.transfer).toEqual([batches[1]!.batch.ops.buffer]);
    expect(read(batches[1]!.batch)).toEqual(['start:1']);
  });
});
