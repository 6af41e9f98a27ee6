import { describe, expect, it } from 'vitest';
import { Framer, FRAME_MS, MULAW_FRAME_BYTES } from '../../src/audio/framer.js';
import { MULAW_SILENCE } from '../../src/audio/g711.js';
import { concatBytes } from '../../src/audio/pcm.js';
import { chunks } from './audio-signals.js';

const ramp = (n: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => i % 251);

describe('Framer', () => {
  it('defines 20 ms frames of 160 μ-law bytes', () => {
    expect(FRAME_MS).toBe(20);
    expect(MULAW_FRAME_BYTES).toBe((8000 * FRAME_MS) / 1000);
  });

  it('splits and joins arbitrary pushes into whole frames in order', () => {
    const input = ramp(160 * 37 + 55);
    const framer = new Framer(MULAW_FRAME_BYTES);
    const frames = chunks(input, 500).flatMap((c) => framer.push(c));
    expect(frames).toHaveLength(37);
    for (const f of frames) expect(f).toHaveLength(160);
    expect(framer.bufferedBytes).toBe(55);
    expect(Array.from(concatBytes(frames))).toEqual(Array.from(input.subarray(0, 160 * 37)));
  });

  it('returns nothing until a frame completes, then several frames from one large push', () => {
    const framer = new Framer(4);
    expect(framer.push(new Uint8Array([1, 2, 3]))).toEqual([]);
    expect(framer.bufferedBytes).toBe(3);
    const frames = framer.push(new Uint8Array([4, 5, 6, 7, 8, 9, 10, 11, 12, 13]));
    expect(frames.map((f) => Array.from(f))).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
      [9, 10, 11, 12],
    ]);
    expect(framer.bufferedBytes).toBe(1);
    expect(framer.push(new Uint8Array(0))).toEqual([]);
  });

  it('pads the remainder to a whole frame on flush with the given byte', () => {
    const framer = new Framer(MULAW_FRAME_BYTES);
    framer.push(ramp(200));
    const last = framer.flush(MULAW_SILENCE);
    expect(last).toHaveLength(160);
    expect(Array.from(last!.subarray(0, 40))).toEqual(Array.from(ramp(200).subarray(160)));
    expect(last!.subarray(40).every((b) => b === 0xff)).toBe(true);
    expect(framer.bufferedBytes).toBe(0);
    expect(framer.flush(MULAW_SILENCE)).toBeNull();
  });

  it('returns the short remainder unpadded when flushed without a pad byte', () => {
    const framer = new Framer(320);
    framer.push(new Uint8Array([1, 2, 3]));
    expect(Array.from(framer.flush()!)).toEqual([1, 2, 3]);
    expect(framer.flush()).toBeNull();
  });

  it('hands out copies that later pushes and input mutation cannot change', () => {
    const framer = new Framer(4);
    const input = new Uint8Array([1, 2, 3, 4, 5, 6]);
    const [first] = framer.push(input);
    input.fill(0);
    const [second] = framer.push(new Uint8Array([9, 9]));
    expect(Array.from(first!)).toEqual([1, 2, 3, 4]);
    expect(Array.from(second!)).toEqual([5, 6, 9, 9]);
    framer.push(new Uint8Array([8, 8, 8]));
    expect(Array.from(second!)).toEqual([5, 6, 9, 9]);
    expect(first!.buffer).not.toBe(input.buffer);
  });

  it('drops buffered bytes on reset', () => {
    const framer = new Framer(4);
    framer.push(new Uint8Array([1, 2, 3]));
    framer.reset();
    expect(framer.bufferedBytes).toBe(0);
    expect(framer.push(new Uint8Array([4, 5, 6, 7])).map((f) => Array.from(f))).toEqual([[4, 5, 6, 7]]);
  });

  it('rejects frame sizes that are not positive integers', () => {
    expect(() => new Framer(0)).toThrow(RangeError);
    expect(() => new Framer(1.5)).toThrow(RangeError);
  });
});
