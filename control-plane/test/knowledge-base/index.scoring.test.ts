import { describe, expect, it } from 'vitest';
import type pg from 'pg';
import { FallbackVectorCache, decodeBinaryRealArray } from '../../src/modules/knowledge-base/index/fallback-vector-cache.js';
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

describe('FallbackVectorCache', () => {
  it('ranks by exact cosine for any dimension count, within the documents asked for', async () => {
    let seed = 7;
    const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
    const dims = 7; // not a multiple of the scan's 4 accumulators
    const vector = () => Float32Array.from({ length: dims }, rand);
    const cache = new FallbackVectorCache();
    const docs = ['kb_a', 'kb_b', 'kb_c'];
    const all: { chunkId: string; documentId: string; v: Float32Array }[] = [];
    for (const documentId of docs) {
      const vectors = Array.from({ length: 50 }, vector);
      const chunkIds = vectors.map((_, i) => `${documentId}-${i}`);
      cache.put('ten_x', 'm', documentId, 'v1', chunkIds, vectors);
      vectors.forEach((v, i) => all.push({ chunkId: chunkIds[i]!, documentId, v }));
    }
    const q = vector();
    const cosine = (a: Float32Array, b: Float32Array) => {
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < a.length; i++) {
        dot += a[i]! * b[i]!;
        na += a[i]! * a[i]!;
        nb += b[i]! * b[i]!;
      }
      return dot / Math.sqrt(na * nb);
    };
    const noPool = {} as pg.Pool; // every document is cached at its version: nothing to load
    const refs = docs.map((id) => ({ id, version: 'v1' }));
    const hits = await cache.topK(noPool, { tenantId: 'ten_x', model: 'm', dims }, refs, new Set(['kb_a', 'kb_c']), q, 10);
    const expected = all.filter((c) => c.documentId !== 'kb_b').sort((x, y) => cosine(q, y.v) - cosine(q, x.v)).slice(0, 10);
    expect(hits.map((h) => h.chunkId)).toEqual(expected.map((c) => c.chunkId));
    hits.forEach((h, i) => expect(h.similarity).toBeCloseTo(cosine(q, expected[i]!.v), 5));
  });
});
