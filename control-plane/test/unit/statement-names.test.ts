import { describe, expect, it } from 'vitest';
import { MAX_TEXT_LENGTH, StatementNames } from '../../src/db/statement-names.js';

describe('StatementNames', () => {
  it('names a text from its second use on, and keeps its name', () => {
    const names = new StatementNames();
    expect(names.nameFor('select $1')).toBeUndefined();
    const name = names.nameFor('select $1');
    expect(name).toMatch(/^vap_\d+$/);
    expect(names.nameFor('select $1')).toBe(name);
  });

  it('gives different texts different names', () => {
    const names = new StatementNames(10, 1);
    const a = names.nameFor('select $1');
    const b = names.nameFor('select $1, $2');
    expect(a).toBeDefined();
    expect(b).toBeDefined();
    expect(a).not.toBe(b);
  });

  it('names no more texts than its bound and keeps the names it gave', () => {
    const names = new StatementNames(2, 1);
    const a = names.nameFor('a $1');
    const b = names.nameFor('b $1');
    expect(names.nameFor('c $1')).toBeUndefined();
    expect(names.nameFor('c $1')).toBeUndefined();
    expect(names.size).toBe(2);
    expect([names.nameFor('a $1'), names.nameFor('b $1')]).toEqual([a, b]);
  });

  it('still names a text that turns hot after its count of one-off texts filled', () => {
    const names = new StatementNames(2, 2);
    expect(names.nameFor('one-off a $1')).toBeUndefined();
    expect(names.nameFor('one-off b $1')).toBeUndefined();
    expect(names.nameFor('hot $1')).toBeUndefined();
    expect(names.nameFor('hot $1')).toMatch(/^vap_\d+$/);
  });

  it('never names a text longer than the bound', () => {
    const names = new StatementNames(10, 1);
    const long = `insert into t values ${Array.from({ length: 2000 }, (_, i) => `($${i + 1})`).join(', ')}`;
    expect(long.length).toBeGreaterThan(MAX_TEXT_LENGTH);
    expect(names.nameFor(long)).toBeUndefined();
    expect(names.nameFor(long)).toBeUndefined();
    expect(names.size).toBe(0);
  });
});
