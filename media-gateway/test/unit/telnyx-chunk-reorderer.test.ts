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

  it('follows a numbering that starts again instead of dropping every later frame as late', () => {
    // 1000, 1001, then the counter restarts at 1 (or wraps): before, every frame from 1 on was "late".
    const { out, r } = run(['1000', '1001', '1', '2', '4', '3', '5']);
    expect(out).toEqual(['f1000', 'f1001', 'f1', 'f2', 'f3', 'f4', 'f5']);
    expect(r.resyncs).toBe(1);
    expect(r.dropped).toBe(0);
    expect(r.skipped).toBe(0);
  });

  it('jumps forward at once over a gap no late frame could fill, passing on what it held first', () => {
    // 3 waits for 2; then the numbering leaps ahead by far more than the window.
    const { out, r } = run(['1', '3', '5000', '5001']);
    expect(out).toEqual(['f1', 'f3', 'f5000', 'f5001']);
    expect(r.resyncs).toBe(1);
    expect(r.skipped).toBe(0);
  });

  it('still treats a frame within the window as reordering: late ones are dropped, early ones held', () => {
    const { out, r } = run(['100', '101', '60', '103', '102'], 3);
    expect(out).toEqual(['f100', 'f101', 'f102', 'f103']);
    expect(r.dropped).toBe(1);
    expect(r.resyncs).toBe(0);
  });
});
