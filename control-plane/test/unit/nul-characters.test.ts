import { describe, expect, it } from 'vitest';
import { storableText } from '../../src/db/storable-text.js';
import { nulCharacterPaths } from '../../src/http/input-guards.js';

describe('storableText', () => {
  it('returns the very value when it has no NUL', () => {
    const value = { a: 'x', b: [1, 'y', { c: null }], d: true };
    expect(storableText(value)).toBe(value);
    expect(storableText('plain')).toBe('plain');
  });

  it('replaces every NUL in strings and keys with U+FFFD, copying only the way to them and leaving the input as it was', () => {
    const untouched = { deep: ['kept'] };
    const value = { text: 'a\u0000b\u0000', list: ['ok', 'n\u0000'], ['k\u0000']: 1, untouched };
    const out = storableText(value);
    expect(out).toEqual({ text: 'a\ufffdb\ufffd', list: ['ok', 'n\ufffd'], ['k\ufffd']: 1, untouched: { deep: ['kept'] } });
    expect(out.untouched).toBe(untouched);
    expect(value).toEqual({ text: 'a\u0000b\u0000', list: ['ok', 'n\u0000'], ['k\u0000']: 1, untouched: { deep: ['kept'] } });
  });

  it('leaves dates and buffers alone', () => {
    const when = new Date(0);
    const bytes = Buffer.from([0, 1]);
    const out = storableText({ when, bytes, s: '\u0000' });
    expect(out.when).toBe(when);
    expect(out.bytes).toBe(bytes);
    expect(out.s).toBe('\ufffd');
  });
});

describe('nulCharacterPaths', () => {
  it('names each field holding a NUL in document order, keys included, as dotted paths', () => {
    expect(nulCharacterPaths({ a: 'ok', b: { c: ['x', 'y\u0000'] }, ['d\u0000']: { e: 'z\u0000' } })).toEqual(['b.c.1', 'd\\u0000', 'd\\u0000.e']);
    expect(nulCharacterPaths('\u0000')).toEqual(['']);
    expect(nulCharacterPaths({ a: 'clean', n: 1, z: null })).toEqual([]);
  });

  it('walks objects of any prototype, each once, and skips buffers and streams', () => {
    const params = Object.create(null) as Record<string, string>;
    params.id = 'a\u0000';
    expect(nulCharacterPaths(params)).toEqual(['id']);
    const part: Record<string, unknown> = { filename: 'f\u0000.txt', file: { pipe: () => undefined, name: '\u0000' }, data: Buffer.from('\u0000') };
    part.fields = { self: part };
    expect(nulCharacterPaths(part)).toEqual(['filename']);
  });

  it('stops at the limit', () => {
    expect(nulCharacterPaths(Array.from({ length: 50 }, () => '\u0000'), 3)).toEqual(['0', '1', '2']);
  });
});
