import { afterAll, describe, expect, it, vi } from 'vitest';
import { KbParserPool, parseInWorker } from '../../src/modules/knowledge-base/parsing/index.js';
import { KbParseError } from '../../src/modules/knowledge-base/types.js';
import { makeEncryptedPdf, makePdf, makeRepeatingDocx, scratchDir } from './fixtures/parsing-files.js';

const scratch = scratchDir();
afterAll(() => scratch.cleanup());

const rejection = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('resolved instead of rejecting');
    },
    (e: unknown) => e,
  );

describe('parseInWorker', () => {
  it('parses a file in a worker thread and returns its sections', async () => {
    const path = scratch.file('menu.pdf', await makePdf([['Fish soup 12.50 EUR'], ['Apple cake 6.25 EUR']]));
    const doc = await parseInWorker('pdf', path, { timeoutMs: 60_000 });
    expect(doc).toEqual({
      type: 'pdf',
      pageCount: 2,
      sections: [
        { text: 'Fish soup 12.50 EUR', pageNumber: 1, context: null },
        { text: 'Apple cake 6.25 EUR', pageNumber: 2, context: null },
      ],
    });
  });

  it('brings a parser failure back as the same KbParseError', async () => {
    const path = scratch.file('locked.pdf', makeEncryptedPdf('secret', 'pw'));
    const err = await rejection(parseInWorker('pdf', path, { timeoutMs: 60_000 }));
    expect(err).toBeInstanceOf(KbParseError);
    expect(err).toMatchObject({ code: 'encrypted', message: expect.stringMatching(/password-protected/) });
  });

  it('a missing file is a KbParseError, not a crash', async () => {
    const err = await rejection(parseInWorker('text', `${scratch.dir}/does-not-exist.txt`, { timeoutMs: 60_000 }));
    expect(err).toBeInstanceOf(KbParseError);
    expect((err as KbParseError).code).toBe('corrupt');
  });

  it('terminates a worker that runs past the timeout (a busy loop that never yields)', async () => {
    const hanging = scratch.file('hanging-worker.mjs', 'for (;;) {}\n');
    const started = Date.now();
    const err = await rejection(parseInWorker('text', hanging, { timeoutMs: 300, workerUrl: new URL(`file://${hanging}`) }));
    expect(err).toBeInstanceOf(KbParseError);
    expect(err).toMatchObject({ code: 'timeout', message: 'Parsing took longer than 300 ms and was stopped.' });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a real parse past its timeout is stopped with "timeout"', async () => {
    const path = scratch.file('big.txt', 'A line of text about the harbour.\n\n'.repeat(200_000));
    // 7 MB of text takes a worker well over 5 ms to read and split; at 50 ms an idle machine
    // sometimes finished first (CI flake).
    const err = await rejection(parseInWorker('text', path, { timeoutMs: 5 }));
    expect(err).toMatchObject({ code: 'timeout' });
  });

  it('a zip bomb exhausts the worker heap, not the process: "too_complex"', async () => {
    // The same builder makes a readable DOCX at small sizes, so the failure below is the size.
    const small = scratch.file('small.docx', makeRepeatingDocx(3, 'harbour'));
    expect((await parseInWorker('docx', small, { timeoutMs: 60_000 })).sections[0]!.text).toBe('harbour\n\nharbour\n\nharbour');
    const bomb = scratch.file('bomb.docx', makeRepeatingDocx(2_500_000));
    const err = await rejection(parseInWorker('docx', bomb, { timeoutMs: 60_000, maxMemoryMb: 96 }));
    expect(err).toBeInstanceOf(KbParseError);
    expect(err).toMatchObject({ code: 'too_complex', message: expect.stringMatching(/too complex/) });
    // The process is fine and the next parse works.
    expect((await parseInWorker('docx', small, { timeoutMs: 60_000 })).sections).toHaveLength(1);
  }, 60_000);

  it('an abort signal stops the parse with its reason', async () => {
    const hanging = scratch.file('hanging-worker-2.mjs', 'for (;;) {}\n');
    const controller = new AbortController();
    const pending = rejection(parseInWorker('text', hanging, { timeoutMs: 60_000, workerUrl: new URL(`file://${hanging}`), signal: controller.signal }));
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    expect(await pending).toMatchObject({ message: 'shutting down' });
  });

  it('a pool runs parses in its workers, replaces a timed-out worker, and stops idle ones', async () => {
    const pool = new KbParserPool({ size: 2, idleMs: 300 });
    try {
      const files = ['a', 'b', 'c'].map((n) => scratch.file(`${n}.md`, `# Part ${n}\n\nText of part ${n}.`));
      const docs = await Promise.all(files.map((f) => parseInWorker('markdown', f, { pool, timeoutMs: 60_000 })));
      expect(docs.map((d) => d.sections[0]!.context)).toEqual(['Part a', 'Part b', 'Part c']);
      expect(pool.workers).toBeLessThanOrEqual(2);
      expect(pool.workers).toBeGreaterThan(0);
      // A parse that cannot finish in 1 ms times out; its worker is replaced for the next one.
      // Several MB of markdown: a few small files parse in under a millisecond on a warm
      // worker, and under load its reply could beat the 1 ms timer (CI saw it once).
      const big = scratch.file('big.md', Array.from({ length: 20_000 }, (_, i) => `## Section ${i}\n\n${'Some text of the section. '.repeat(10)}\n`).join('\n'));
      await expect(pool.parse('markdown', big, { timeoutMs: 1 })).rejects.toMatchObject({ code: 'timeout' });
      expect((await pool.parse('markdown', files[1]!, { timeoutMs: 60_000 })).sections[0]!.text).toBe('Part b\n\nText of part b.');
      expect(pool.pending).toBe(0);
      await vi.waitFor(() => expect(pool.workers).toBe(0), { timeout: 5_000, interval: 100 });
    } finally {
      await pool.close();
    }
    await expect(pool.parse('markdown', 'x.md')).rejects.toThrow('closed');
  }, 120_000);

  it('a worker that exits mid-parse fails that parse as "corrupt" and the pool carries on', async () => {
    const exiting = scratch.file('exiting-worker.mjs', 'process.exit(3);\n');
    const pool = new KbParserPool({ size: 1, workerUrl: new URL(`file://${exiting}`) });
    try {
      await expect(pool.parse('pdf', 'x.pdf', { timeoutMs: 60_000 })).rejects.toMatchObject({ code: 'corrupt', message: expect.stringMatching(/PDF file could not be read \(the parser stopped with code 3\)/) });
      await expect(pool.parse('xlsx', 'y.xlsx', { timeoutMs: 60_000 })).rejects.toMatchObject({ code: 'corrupt' });
      expect(pool.workers).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('aborting a queued parse removes it without touching the running one; close rejects the rest', async () => {
    const hanging = scratch.file('hanging-worker-3.mjs', 'for (;;) {}\n');
    const pool = new KbParserPool({ size: 1, workerUrl: new URL(`file://${hanging}`) });
    const running = rejection(pool.parse('text', 'a.txt', { timeoutMs: 60_000 }));
    const controller = new AbortController();
    const queued = rejection(pool.parse('text', 'b.txt', { timeoutMs: 60_000, signal: controller.signal }));
    expect(pool.pending).toBe(2);
    controller.abort(new Error('user deleted the document'));
    expect(await queued).toMatchObject({ message: 'user deleted the document' });
    expect(pool.pending).toBe(1);
    expect(pool.workers).toBe(1);
    await pool.close();
    expect(await running).toMatchObject({ message: 'the parser pool is closed' });
    expect(pool.workers).toBe(0);
  });
});
