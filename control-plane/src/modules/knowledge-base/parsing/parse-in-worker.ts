import type { KbDocumentType, ParsedDocument } from '../types.js';
import type { ChunkOptions } from '../chunking/index.js';
import { KbParserPool, type ChunkedDocument, type KbParserPoolOptions, type ParseOptions } from './parser-pool.js';

export interface ParseInWorkerOptions extends ParseOptions {
  /** The pool to parse in; without one, a worker is started for this parse alone and stopped after it. */
  pool?: KbParserPool;
  /** For the one-off worker only: its heap limit in MB (see {@link KbParserPoolOptions}). */
  maxMemoryMb?: number;
  /** For the one-off worker only: its entry module (tests). */
  workerUrl?: URL;
}

/**
 * Parses a stored upload off the event loop, in `opts.pool` or in a worker of its own,
 * under a wall-clock limit (`timeoutMs`) and a heap limit.
 * @throws KbParseError `corrupt`, `encrypted`, `empty` (from the parser), `timeout`, `too_complex`.
 */
export async function parseInWorker(type: KbDocumentType, filePath: string, opts: ParseInWorkerOptions = {}): Promise<ParsedDocument> {
  const parseOpts: ParseOptions = { timeoutMs: opts.timeoutMs, signal: opts.signal };
  if (opts.pool) return opts.pool.parse(type, filePath, parseOpts);
  const poolOpts: KbParserPoolOptions = { size: 1, maxParsesPerWorker: 1, maxMemoryMb: opts.maxMemoryMb, workerUrl: opts.workerUrl };
  const pool = new KbParserPool(poolOpts);
  try {
    return await pool.parse(type, filePath, parseOpts);
  } finally {
    await pool.close();
  }
}

/**
 * Parses a stored upload and chunks it (`chunkSections` with `opts.chunking`), both off the
 * event loop, in `opts.pool` or in a worker of its own; what the indexing job uses.
 * @throws KbParseError as {@link parseInWorker}.
 */
export async function parseAndChunkInWorker(type: KbDocumentType, filePath: string, opts: ParseInWorkerOptions & { chunking?: ChunkOptions } = {}): Promise<ChunkedDocument> {
  const parseOpts = { timeoutMs: opts.timeoutMs, signal: opts.signal, chunking: opts.chunking };
  if (opts.pool) return opts.pool.parseAndChunk(type, filePath, parseOpts);
  const pool = new KbParserPool({ size: 1, maxParsesPerWorker: 1, maxMemoryMb: opts.maxMemoryMb, workerUrl: opts.workerUrl });
  try {
    return await pool.parseAndChunk(type, filePath, parseOpts);
  } finally {
    await pool.close();
  }
}
