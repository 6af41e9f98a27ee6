import { describe, expect, it } from 'vitest';
import { ChunkReorderer } from '../../src/telnyx/chunk-reorderer.js';

function run(chunks: (string | undefined)[], depth = 3): { out: string[]; r: ChunkReorderer<string> } {
  const out: string[] = [];
  const r = new ChunkReorderer<string>((f) => out.push(f), depth);
  for (const c of chunks) r.push(c, `f${c ?? '?'}`);
  return { out, r };
}

describe('ChunkReorderer', () => {
  it('passes in-order frames straight through, starting at whatever chunk comes first', () => {
    const out: string[] = [];
    const r = new ChunkReorderer<string>((f) => out.push(f));
    r.push('7', 'a');
    expect(out).toEqual(['a']);
    r.push('8', 'b');
    expect(out).toEqual(['a', 'b']);
  });

  it('puts swapped frames back in chunk order', () => {
    expect(run(['1', '3', '2', '4', '6', '5']).out).toEqual(['f1', 'f2', 'f3', 'f4', 'f5', 'f6']);
  });

  it('gives a missing chunk up once depth frames wait, and drops it if it turns up later', () => {
    const { out, r } = run(['1', '3', '4', '5', '6', '2', '7']);
    expect(out).toEqual(['f1', 'f3', 'f4', 'f5', 'f6', 'f7']);
    expect(r.skipped).toBe(1);
    expect(r.dropped).toBe(1);
  });

  it('drops duplicates and passes frames without a usable chunk through', () => {
    const { out, r } = run(['1', '1', undefined, 'x', '2']);
    expect(out).toEqual(['f1', 'f?', 'fx', 'f2']);
    expect(r.dropped).toBe(1);
  });
});
