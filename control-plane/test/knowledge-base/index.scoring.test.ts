import { describe, expect, it } from 'vitest';
import { decodeBinaryRealArray } from '../../src/modules/knowledge-base/index/fallback-vector-cache.js';
import { TEXT_WEIGHT, excerptOf, hybridScore, termWeight } from '../../src/modules/knowledge-base/index/hybrid-score.js';

describe('hybrid score', () => {
  it('is the cosine similarity when no query term matches', () => {
    for (const v of [0, 0.31, 0.77, 1]) expect(hybridScore(v, 0)).toBeCloseTo(v, 12);
  });

  it('gives a chunk holding every query term at least the text weight, however far its vector', () => {
    expect(hybridScore(0, 1)).toBeCloseTo(TEXT_WEIGHT, 12);
    expect(hybridScore(-0.4, 1)).toBeCloseTo(TEXT_WEIGHT, 12);
    expect(hybridScore(0.5, 1)).toBeGreaterThan(TEXT_WEIGHT);
  });

  it('rises with either signal and stays within 0..1', () => {
    const grid = [0, 0.2, 0.5, 0.8, 1];
    for (const v of grid) {
      for (const t of grid) {
        const s = hybridScore(v, t);
        expect(s).toBeGreaterThanOrEqual(0);
        expect(s).toBeLessThanOrEqual(1);
        expect(s).toBeGreaterThanOrEqual(Math.max(v, TEXT_WEIGHT * t) - 1e-12);
        if (v < 1) expect(hybridScore(v, Math.min(1, t + 0.1))).toBeGreaterThan(s - 1e-12);
      }
    }
  });

  it('weighs a term found in one chunk far above one found in all of them', () => {
    expect(termWeight(100_000, 1)).toBeGreaterThan(10 * termWeight(100_000, 100_000));
    expect(termWeight(10, 10)).toBeCloseTo(Math.log(2), 12);
  });

  it('cuts excerpts at a word boundary', () => {
    const text = 'word '.repeat(200);
    const e = excerptOf(text, 50);
    expect(e.endsWith('word…')).toBe(true);
    expect(e.length).toBeLessThanOrEqual(51);
    expect(excerptOf('  short\n text ')).toBe('short text');
  });
});

describe('decodeBinaryRealArray', () => {
  /** Postgres' array_send of a one-dimensional real[]. */
  function arraySend(values: number[]): Buffer {
    const b = Buffer.alloc(20 + 8 * values.length);
    b.writeInt32BE(1, 0); // ndim
    b.writeInt32BE(0, 4); // no nulls
    b.writeInt32BE(700, 8); // float4
    b.writeInt32BE(values.length, 12);
    b.writeInt32BE(1, 16); // lower bound
    values.forEach((v, i) => {
      b.writeInt32BE(4, 20 + 8 * i);
      b.writeFloatBE(v, 24 + 8 * i);
    });
    return b;
  }

  it('reads the float4 values at the given offset', () => {
    const out = new Float32Array(5);
    decodeBinaryRealArray(arraySend([0.5, -1.25, 3e-7]), out, 2, 3);
    expect(Array.from(out)).toEqual([0, 0, 0.5, -1.25, Math.fround(3e-7)]);
  });

  it('refuses a vector of other dimensions', () => {
    expect(() => decodeBinaryRealArray(arraySend([1, 2]), new Float32Array(3), 0, 3)).toThrow(/2 values, expected 3/);
  });
});
