/**
 * `parseAndChunkInWorker` / `KbParserPool.parseAndChunk`: the worker parses and chunks, and
 * its chunks are exactly those of `chunkSections(parseDocument(...))` on the calling thread.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { chunkSections } from '../../src/modules/knowledge-base/chunking/index.js';
import { KbParserPool, parseAndChunkInWorker, parseDocument } from '../../src/modules/knowledge-base/parsing/index.js';
import { KbParseError } from '../../src/modules/knowledge-base/types.js';
import { makeEncryptedPdf, makePdf, scratchDir } from './fixtures/parsing-files.js';

const scratch = scratchDir();
afterAll(() => scratch.cleanup());

const prose = Array.from({ length: 120 }, (_, i) => `Paragraph ${i + 1}. The valve V-${1000 + i} is checked every ${1 + (i % 9)} weeks. Replacement parts come from supplier ${i % 17}, who delivers on Tuesdays.`).join('\n\n');

describe('parseAndChunkInWorker', () => {
  it('returns the chunks chunkSections makes of the parsed sections, with type and pageCount', async () => {
    const path = scratch.file('manual.txt', prose);
    const expected = chunkSections((await parseDocument('text', path)).sections);
    expect(expected.length).toBeGreaterThan(3);
    const got = await parseAndChunkInWorker('text', path, { timeoutMs: 60_000 });
    expect(got).toEqual({ type: 'text', pageCount: null, chunks: expected });
  });

  it('passes chunking options to the worker, and keeps PDF pages', async () => {
    const path = scratch.file('two-pages.pdf', await makePdf([[prose.slice(0, 3000)], ['Page two: gift cards never expire.']]));
    const pool = new KbParserPool();
    try {
      const options = { targetTokens: 100, overlapTokens: 10, maxTokens: 120 };
      const got = await pool.parseAndChunk('pdf', path, { timeoutMs: 60_000, chunking: options });
      expect(got.pageCount).toBe(2);
      expect(got.chunks).toEqual(chunkSections((await parseDocument('pdf', path)).sections, options));
      expect(got.chunks.every((c) => c.tokenCount <= 120)).toBe(true);
      expect(got.chunks.at(-1)).toMatchObject({ pageNumber: 2, text: 'Page two: gift cards never expire.' });
      // Plain parses still answer sections through the same worker.
      expect((await pool.parse('pdf', path, { timeoutMs: 60_000 })).sections).toHaveLength(2);
    } finally {
      await pool.close();
    }
  });

  it('brings parse failures back as KbParseError, and refuses bad chunking options before dispatch', async () => {
    const locked = scratch.file('locked.pdf', makeEncryptedPdf('secret', 'pw'));
    const err = await parseAndChunkInWorker('pdf', locked, { timeoutMs: 60_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KbParseError);
    expect(err).toMatchObject({ code: 'encrypted' });
    const pool = new KbParserPool();
    try {
      await expect(pool.parseAndChunk('text', scratch.file('short.txt', 'Hello there.'), { chunking: { targetTokens: 0 } })).rejects.toThrow(RangeError);
      expect(pool.workers).toBe(0);
    } finally {
      await pool.close();
    }
  });
});
