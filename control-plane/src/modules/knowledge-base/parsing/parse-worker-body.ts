/**
 * A knowledge-base parse worker's message loop (loaded by `parse-worker.mjs`): one
 * {@link ParseJob} in, one {@link ParseJobResult} out. Parses run one at a time per worker.
 */
import { parentPort } from 'node:worker_threads';
import { KbParseError } from '../types.js';
import type { ParseJob, ParseJobResult } from './parser-pool.js';
import { parseDocument } from './parse-document.js';

const port = parentPort!;

port.on('message', async ({ id, type, filePath }: ParseJob) => {
  let result: ParseJobResult;
  try {
    result = { id, ok: true, document: await parseDocument(type, filePath) };
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
