import { describe, expect, it } from 'vitest';
import { ALAW_SILENCE, MULAW_SILENCE, alawDecode, alawEncode, mulawDecode, mulawDecodeInto, mulawEncode, mulawLevelDbfs } from '../../src/audio/g711.js';
import { levelDbfs, SILENCE_DBFS } from '../../src/audio/pcm.js';

// reference/audio-formats.md, G.711 test vectors (checked against the alawmulaw package).
const MULAW_VECTORS: [pcm: number, code: number, decoded: number][] = [
  [0, 0xff, 0],
  [100, 0xf2, 104],
  [1000, 0xce, 988],
  [-1000, 0x4e, -988],
  [8000, 0xa0, 7932],
  [32767, 0x80, 32124],
  [-32768, 0x00, -32124],
];
const ALAW_VECTORS: [pcm: number, code: number, decoded: number][] = [
  [0, 0xd5, 8],
  [1000, 0xfa, 1008],
  [-1000, 0x7a, -1008],
  [8000, 0x8a, 8064],
  [32767, 0xaa, 32256],
  [-32768, 0x2a, -32256],
];

function everyInt16(): Int16Array {
  const all = new Int16Array(65536);
  for (let i = 0; i < 65536; i++) all[i] = i - 32768;
  return all;
}

describe('μ-law', () => {
  it.each(MULAW_VECTORS)('encodes %i to the reference byte and decodes it back to the reference value', (pcm, code, decoded) => {
    expect(mulawEncode(new Int16Array([pcm]))[0]).toBe(code);
    expect(mulawDecode(new Uint8Array([code]))[0]).toBe(decoded);
  });

  it('keeps the round-trip error within half a quantisation step over the whole int16 range', () => {
    const all = everyInt16();
    const back = mulawDecode(mulawEncode(all));
    const violations: string[] = [];
    let worst = 0;
    for (let i = 0; i < all.length; i++) {
      const s = all[i]!;
      const magnitude = Math.abs(s);
      const error = Math.abs(back[i]! - s);
      worst = Math.max(worst, error);
      // Step in the segment holding |s|+132 is (|s|+132)/16 at most; beyond the clip level, ±32124.
      const bound = magnitude > 32635 ? magnitude - 32124 : (magnitude + 132) / 32;
      if (error > bound || Math.sign(back[i]!) * Math.sign(s) === -1) violations.push(`${s} → ${back[i]}`);
    }
    expect(violations).toEqual([]);
    expect(worst).toBe(32768 - 32124); // only the clipped extreme is off by more than a half step
  });

  it('re-encodes every decoded code to itself except negative zero', () => {
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
    const again = mulawEncode(mulawDecode(codes));
    for (let c = 0; c < 256; c++) expect(again[c]).toBe(c === 0x7f ? MULAW_SILENCE : c);
  });

  it('treats 0xFF as digital silence', () => {
    expect(MULAW_SILENCE).toBe(0xff);
    expect(Array.from(mulawDecode(new Uint8Array(160).fill(MULAW_SILENCE)))).toEqual(new Array(160).fill(0));
  });

  it('decodes into a reused buffer exactly as into a new one, frame after frame', () => {
    const out = new Int16Array(160);
    for (const first of [0, 96, 160]) {
      const frame = Uint8Array.from({ length: 160 }, (_, i) => (first + i) & 0xff);
      expect(mulawDecodeInto(frame, out)).toBe(out);
      expect(out).toEqual(mulawDecode(frame));
    }
    // A view into a larger batch buffer, as a pipeline thread receives it.
    const batch = Uint8Array.from({ length: 480 }, (_, i) => (i * 7) & 0xff);
    expect(mulawDecodeInto(batch.subarray(160, 320), out)).toEqual(mulawDecode(batch.slice(160, 320)));
    expect(() => mulawDecodeInto(new Uint8Array(80), out)).toThrow(RangeError);
  });

  it('encodes a subarray view starting at an offset', () => {
    const backing = new Int16Array([1, 2, 1000, -1000, 5]);
    expect(Array.from(mulawEncode(backing.subarray(2, 4)))).toEqual([0xce, 0x4e]);
  });
});

describe('mulawLevelDbfs', () => {
  it('is exactly the level of the decoded samples, for every code and for random frames of any length', () => {
    for (let code = 0; code < 256; code++) {
      const frame = new Uint8Array(160).fill(code);
      expect(mulawLevelDbfs(frame)).toBe(levelDbfs(mulawDecode(frame)));
    }
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    for (let i = 0; i < 500; i++) {
      const frame = Uint8Array.from({ length: 1 + (next() % 400) }, () => next() & 0xff);
      expect(mulawLevelDbfs(frame)).toBe(levelDbfs(mulawDecode(frame)));
    }
    const speechLike = mulawEncode(Int16Array.from({ length: 160 }, (_, i) => Math.round(8000 * Math.sin(i / 3))));
    expect(mulawLevelDbfs(speechLike)).toBeCloseTo(20 * Math.log10(8000 / Math.SQRT2 / 32768), 1);
  });

  it('gives digital silence and empty input -100 dBFS', () => {
    expect(mulawLevelDbfs(new Uint8Array(160).fill(MULAW_SILENCE))).toBe(SILENCE_DBFS);
    expect(mulawLevelDbfs(new Uint8Array(0))).toBe(SILENCE_DBFS);
  });
});

describe('A-law', () => {
  it.each(ALAW_VECTORS)('encodes %i to the reference byte and decodes it back to the reference value', (pcm, code, decoded) => {
    expect(alawEncode(new Int16Array([pcm]))[0]).toBe(code);
    expect(alawDecode(new Uint8Array([code]))[0]).toBe(decoded);
  });

  it('keeps the round-trip error within half a quantisation step over the whole int16 range', () => {
    const all = everyInt16();
    const back = alawDecode(alawEncode(all));
    const violations: string[] = [];
    for (let i = 0; i < all.length; i++) {
      const s = all[i]!;
      if (Math.abs(back[i]! - s) > Math.max(8, Math.abs(s) / 32)) violations.push(`${s} → ${back[i]}`);
    }
    expect(violations).toEqual([]);
  });

  it('re-encodes every decoded code to itself', () => {
    const codes = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect(Array.from(alawEncode(alawDecode(codes)))).toEqual(Array.from(codes));
  });

  it('uses 0xD5 for silence, the smallest positive level', () => {
    expect(ALAW_SILENCE).toBe(0xd5);
    expect(alawDecode(new Uint8Array([ALAW_SILENCE]))[0]).toBe(8);
  });
});

describe('both companders', () => {
  it('return new arrays of one sample per byte and keep empty input empty', () => {
    const pcm = new Int16Array([0, 1, -1]);
    const mu = mulawEncode(pcm);
    expect(mu).toHaveLength(3);
    expect(mu.buffer).not.toBe(pcm.buffer);
    expect(mulawEncode(new Int16Array(0))).toHaveLength(0);
    expect(alawDecode(new Uint8Array(0))).toHaveLength(0);
  });
});
