import { describe, expect, it } from 'vitest';
import { concatBytes, concatInt16, levelDbfs, pcm16FromBytesLE, pcm16ToBytesLE } from '../../src/audio/pcm.js';
import { sine } from './audio-signals.js';

describe('pcm16FromBytesLE', () => {
  it('reads little-endian signed samples', () => {
    const pcm = pcm16FromBytesLE(new Uint8Array([0x01, 0x02, 0xff, 0xff, 0x00, 0x80, 0xff, 0x7f]));
    expect(Array.from(pcm)).toEqual([0x0201, -1, -32768, 32767]);
  });

  it('reads bytes that start at an odd offset of their buffer', () => {
    const backing = new Uint8Array([0xaa, 0x01, 0x02, 0xff, 0xff, 0x00, 0x80]);
    const odd = backing.subarray(1);
    expect(odd.byteOffset % 2).toBe(1);
    expect(Array.from(pcm16FromBytesLE(odd))).toEqual([0x0201, -1, -32768]);
  });

  it('reads a Node Buffer slice at an odd offset', () => {
    const buffer = Buffer.from([0, 0x34, 0x12, 0xcc, 0xed]).subarray(1);
    expect(Array.from(pcm16FromBytesLE(buffer))).toEqual([0x1234, -0x1234]);
  });

  it('ignores a trailing odd byte', () => {
    expect(Array.from(pcm16FromBytesLE(new Uint8Array([0x10, 0x00, 0x7f])))).toEqual([16]);
  });
});

describe('pcm16ToBytesLE', () => {
  it('writes the low byte first', () => {
    expect(Array.from(pcm16ToBytesLE(new Int16Array([0x0201, -1, -32768])))).toEqual([0x01, 0x02, 0xff, 0xff, 0x00, 0x80]);
  });

  it('writes only the samples of a subarray view', () => {
    const backing = new Int16Array([9, 0x0102, 9]);
    expect(Array.from(pcm16ToBytesLE(backing.subarray(1, 2)))).toEqual([0x02, 0x01]);
  });

  it('round-trips through pcm16FromBytesLE at any alignment', () => {
    const pcm = sine(440, 8000, 0.05, 30_000);
    const bytes = pcm16ToBytesLE(pcm);
    const shifted = new Uint8Array(bytes.length + 1);
    shifted.set(bytes, 1);
    expect(Array.from(pcm16FromBytesLE(shifted.subarray(1)))).toEqual(Array.from(pcm));
    expect(Array.from(pcm16FromBytesLE(bytes))).toEqual(Array.from(pcm));
  });
});

describe('levelDbfs', () => {
  it('reports -100 for empty input and digital silence', () => {
    expect(levelDbfs(new Int16Array(0))).toBe(-100);
    expect(levelDbfs(new Int16Array(160))).toBe(-100);
  });

  it('reports 0 dBFS for a full-scale square wave and -3 dBFS for a full-scale sine', () => {
    const square = Int16Array.from({ length: 160 }, (_, i) => (i % 2 ? -32768 : 32767));
    expect(levelDbfs(square)).toBeCloseTo(0, 2);
    expect(levelDbfs(sine(1000, 8000, 0.1, 32767))).toBeCloseTo(-3.01, 1);
  });

  it('drops by 6 dB when the amplitude halves', () => {
    const loud = levelDbfs(sine(1000, 8000, 0.1, 16000));
    const quiet = levelDbfs(sine(1000, 8000, 0.1, 8000));
    expect(loud - quiet).toBeCloseTo(6.02, 1);
  });

  it('never reports less than -100', () => {
    const tiny = new Int16Array(100000);
    tiny[0] = 1;
    expect(levelDbfs(tiny)).toBe(-100);
  });
});

describe('concat', () => {
  it('joins sample arrays in order into a new array', () => {
    const a = new Int16Array([1, 2]);
    const joined = concatInt16([a, new Int16Array(0), new Int16Array([3])]);
    expect(Array.from(joined)).toEqual([1, 2, 3]);
    expect(concatInt16([a]).buffer).not.toBe(a.buffer);
    expect(concatInt16([])).toHaveLength(0);
  });

  it('joins byte arrays in order into a new array', () => {
    const backing = new Uint8Array([0, 7, 8, 0]);
    expect(Array.from(concatBytes([new Uint8Array([1]), backing.subarray(1, 3)]))).toEqual([1, 7, 8]);
    expect(concatBytes([])).toHaveLength(0);
  });
});
