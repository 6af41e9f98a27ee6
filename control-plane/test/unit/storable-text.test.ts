import { describe, expect, it } from 'vitest';
import { storableText, unstorableTextReason } from '../../src/db/storable-text.js';
import { unstorableFields } from '../../src/http/input-guards.js';

const NUL = unstorableTextReason('\u0000')!;
const LONE = unstorableTextReason('\udc00')!;

describe('unstorableTextReason', () => {
  it('names a NUL and an unpaired surrogate (either half), and accepts paired ones', () => {
    expect(NUL).toMatch(/NUL/);
    expect(LONE).toMatch(/surrogate/);
    expect(unstorableTextReason('a\ud800')).toBe(LONE);
    expect(unstorableTextReason('\ud83d\ude00 fine')).toBeNull();
    expect(unstorableTextReason('plain text')).toBeNull();
  });
});

describe('storableText', () => {
  it('returns the very value when it has nothing to replace', () => {
    const value = { a: 'x', b: [1, 'y', { c: null }], d: true, e: '\ud83d\ude00' };
    expect(storableText(value)).toBe(value);
    expect(storableText('plain')).toBe('plain');
  });

  it('replaces each NUL and unpaired surrogate in strings and keys with U+FFFD, copying only the way to them and leaving the input as it was', () => {
    const untouched = { deep: ['kept'] };
    const value = { text: 'a\u0000b\u0000', list: ['ok', 'n\u0000', 'x\ud800y'], ['k\u0000']: 1, untouched };
    const out = storableText(value);
    expect(out).toEqual({ text: 'a\ufffdb\ufffd', list: ['ok', 'n\ufffd', 'x\ufffdy'], ['k\ufffd']: 1, untouched: { deep: ['kept'] } });
    expect(out.untouched).toBe(untouched);
    expect(value).toEqual({ text: 'a\u0000b\u0000', list: ['ok', 'n\u0000', 'x\ud800y'], ['k\u0000']: 1, untouched: { deep: ['kept'] } });
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

describe('unstorableFields', () => {
  it('names each field that cannot be stored in document order, keys included, as dotted paths', () => {
    expect(unstorableFields({ a: 'ok', b: { c: ['x', 'y\u0000'] }, ['d\u0000']: { e: 'z\ud800' } })).toEqual([
      { field: 'b.c.1', message: NUL },
      { field: 'd\\u0000', message: `its key ${NUL}` },
      { field: 'd\\u0000.e', message: LONE },
    ]);
    expect(unstorableFields('\u0000')).toEqual([{ field: '', message: NUL }]);
    expect(unstorableFields({ a: 'clean', n: 1, z: null, smile: '\ud83d\ude00' })).toEqual([]);
  });

  it('walks objects of any prototype, each once, and skips buffers and streams', () => {
    const params = Object.create(null) as Record<string, string>;
    params.id = 'a\u0000';
    expect(unstorableFields(params)).toEqual([{ field: 'id', message: NUL }]);
    const part: Record<string, unknown> = { filename: 'f\u0000.txt', file: { pipe: () => undefined, name: '\u0000' }, data: Buffer.from('\u0000') };
    part.fields = { self: part };
    expect(unstorableFields(part)).toEqual([{ field: 'filename', message: NUL }]);
  });

  it('names a bad key or value of a flat object (path parameters, a query string) as the full walk does', () => {
    expect(unstorableFields({ id: 'agt_1', ['q\ud800']: 'x' })).toEqual([{ field: 'q\\ud800', message: `its key ${LONE}` }]);
    expect(unstorableFields({ id: 'agt_1', q: 'x\ud800', n: 2 })).toEqual([{ field: 'q', message: LONE }]);
    expect(unstorableFields({ id: 'agt_1', tags: ['a', 'b'], n: 2, on: true, none: null })).toEqual([]);
    expect(unstorableFields({})).toEqual([]);
  });

  it('stops at the limit', () => {
    expect(unstorableFields(Array.from({ length: 50 }, () => '\u0000'), 3).map((f) => f.field)).toEqual(['0', '1', '2']);
  });
});
