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

  it('does not repeat', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId('conv', 1)));
    expect(ids.size).toBe(10_000);
  });
});
