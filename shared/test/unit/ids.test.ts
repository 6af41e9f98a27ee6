import { describe, expect, it } from 'vitest';
import { isId, newId } from '../../src/ids.js';

describe('newId', () => {
  it('makes prefixed ids that sort by creation time', () => {
    const a = newId('agt', 1_700_000_000_000);
    const b = newId('agt', 1_700_000_000_001);
    expect(a).toMatch(/^agt_[0-9a-z]{26}$/);
    expect(a < b).toBe(true);
    expect(isId('agt', a)).toBe(true);
    expect(isId('key', a)).toBe(false);
    expect(isId('agt', 'agt_short')).toBe(false);
  });

  it('does not repeat, across many refills of its random pool (256 ids each)', () => {
    const list = Array.from({ length: 10_000 }, () => newId('conv', 1));
    expect(new Set(list).size).toBe(10_000);
    // Every symbol turns up in each random position: the bytes are random, not a pool left unfilled or reused from its start.
    // An id is `conv_`, 10 characters of time, then 16 random ones.
    const randomStart = 'conv_'.length + 10;
    expect(list.every((id) => id.length === randomStart + 16)).toBe(true);
    for (let pos = 0; pos < 16; pos++) {
      const symbols = new Set(list.map((id) => id[randomStart + pos]));
      expect(symbols.size, `position ${pos}`).toBe(32);
    }
  });
});
