/**
 * A knowledge-base parse worker's message loop (loaded by `parse-worker.mjs`): one
 * {@link ParseJob} in, one {@link ParseJobResult} out. Parses run one at a time per worker.
 * A job with `chunk` is also chunked here (chunking a large text takes seconds of CPU that
 * must not run on the control plane's event loop), and only its chunks are sent back.
 */
import { parentPort } from 'node:worker_threads';
import { chunkSections } from '../chunking/chunker.js';
import { KbParseError } from '../types.js';
import type { ParseJob, ParseJobResult } from './parser-pool.js';
import { parseDocument } from './parse-document.js';

const port = parentPort!;

port.on('message', async ({ id, type, filePath, chunk }: ParseJob) => {
  let result: ParseJobResult;
  try {
    const document = await parseDocument(type, filePath);
    result = chunk ? { id, ok: true, chunked: { type: document.type, pageCount: document.pageCount, chunks: chunkSections(document.sections, chunk) } } : { id, ok: true, document };
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause ?? err;
    const detail = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    result =
      err instanceof KbParseError
        ? { id, ok: false, code: err.code, message: err.message, detail }
        : { id, ok: false, code: 'corrupt', message: `The ${type.toUpperCase()} file could not be read.`, detail };
  }
  port.postMessage(result);
});
