import { Worker } from 'node:worker_threads';
import { chunkSections, type ChunkOptions } from '../chunking/chunker.js';
import { KbParseError, type KbChunk, type KbDocumentType, type KbParseErrorCode, type ParsedDocument } from '../types.js';

/** A document parsed and chunked in a worker: what indexing needs, without the sections' text. */
export interface ChunkedDocument {
  type: KbDocumentType;
  /** Pages (PDF) or sheets (XLSX) seen; null for other formats. */
  pageCount: number | null;
  /** `chunkSections(sections, chunking)`, in order (empty when the sections held no text). */
  chunks: KbChunk[];
}

/** @internal A parse posted to a worker; with `chunk`, the worker also chunks and answers a {@link ChunkedDocument}. */
export interface ParseJob {
  id: number;
  type: KbDocumentType;
  filePath: string;
  chunk?: ChunkOptions;
}

/** @internal A worker's answer. `detail` is the library's own message, for logs only. */
export type ParseJobResult =
  | { id: number; ok: true; document: ParsedDocument }
  | { id: number; ok: true; chunked: ChunkedDocument }
  | { id: number; ok: false; code: KbParseErrorCode; message: string; detail: string };

/** Default wall-clock limit of one parse, from its dispatch to a worker (worker start included). */
export const DEFAULT_PARSE_TIMEOUT_MS = 120_000;
/** Default wall-clock limit of a parse and its chunking (chunking costs about 1-2 s per MB of text). */
export const DEFAULT_PARSE_AND_CHUNK_TIMEOUT_MS = 300_000;
/** Default V8 old-generation limit of a parse worker: room for a 50 MB upload's text several times over. */
export const DEFAULT_PARSE_MEMORY_MB = 768;

export interface KbParserPoolOptions {
  /** Workers at most (parses running at once); default 1. */
  size?: number;
  /** Each worker's heap limit in MB; a parse that exceeds it (a zip bomb) ends its worker → `too_complex`. */
  maxMemoryMb?: number;
  /** An idle worker is stopped after this many ms (its heap is returned); default 30 s. */
  idleMs?: number;
  /** A worker is replaced after this many parses, so no library's leftovers grow without end; default 50. */
  maxParsesPerWorker?: number;
  /** The worker's entry module; default `parse-worker.mjs` (tests start others). */
  workerUrl?: URL;
}

export interface ParseOptions {
  /** Wall-clock limit in ms from dispatch; past it the worker is terminated → KbParseError `timeout`. */
  timeoutMs?: number;
  /** Removes a queued parse, or terminates the running one, rejecting with the signal's reason. */
  signal?: AbortSignal;
}

interface Pending {
  type: KbDocumentType;
  filePath: string;
  chunk: ChunkOptions | undefined;
  timeoutMs: number;
  signal: AbortSignal | undefined;
  resolve: (doc: ParsedDocument | ChunkedDocument) => void;
  reject: (err: unknown) => void;
  onAbort: () => void;
}

interface Slot {
  worker: Worker;
  job: (Pending & { id: number; timer: NodeJS.Timeout }) | null;
  parses: number;
  idleTimer: NodeJS.Timeout | null;
}

const WORKER_URL = new URL('./parse-worker.mjs', import.meta.url);

/**
 * Parses stored uploads in worker threads, so a big or hostile file never blocks the
 * control plane's event loop and cannot exhaust its memory: each worker runs under
 * `resourceLimits`, and is terminated when a parse runs out of time or is aborted (a new
 * worker then takes the next job). Workers start on demand, are kept between parses
 * (starting one and loading pdf.js or exceljs through tsx costs about a second), stop when
 * idle, and are unref'd while idle so they never keep the process alive. Jobs queue in
 * order beyond `size`.
 */
export class KbParserPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: KbParserPoolOptions = {}) {
    if (opts.size !== undefined && (!Number.isInteger(opts.size) || opts.size < 1)) throw new Error('KbParserPool: size must be a positive integer');
  }

  /** Live workers (busy or idle). */
  get workers(): number {
    return this.slots.length;
  }

  /** Parses queued or running. */
  get pending(): number {
    return this.queue.length + this.slots.filter((s) => s.job).length;
  }

  /**
   * Parses one file in a worker.
   * @throws KbParseError `corrupt`, `encrypted`, `empty` (from the parser), `timeout`, `too_complex`.
   */
  parse(type: KbDocumentType, filePath: string, opts: ParseOptions = {}): Promise<ParsedDocument> {
    return this.submit(type, filePath, undefined, opts.timeoutMs ?? DEFAULT_PARSE_TIMEOUT_MS, opts.signal) as Promise<ParsedDocument>;
  }

  /**
   * Parses one file and chunks its sections (`chunkSections` with `chunking`) in a worker, so
   * neither blocks the event loop; only the chunks come back. The time limit covers both
   * (default {@link DEFAULT_PARSE_AND_CHUNK_TIMEOUT_MS}).
   * @throws KbParseError as {@link parse}; RangeError for invalid chunking options.
   */
  parseAndChunk(type: KbDocumentType, filePath: string, opts: ParseOptions & { chunking?: ChunkOptions } = {}): Promise<ChunkedDocument> {
    try {
      chunkSections([], opts.chunking); // checks the options here: a RangeError, not a "could not be read" from the worker
    } catch (err) {
      return Promise.reject(err);
    }
    return this.submit(type, filePath, opts.chunking ?? {}, opts.timeoutMs ?? DEFAULT_PARSE_AND_CHUNK_TIMEOUT_MS, opts.signal) as Promise<ChunkedDocument>;
  }

  private submit(type: KbDocumentType, filePath: string, chunk: ChunkOptions | undefined, timeoutMs: number, signal: AbortSignal | undefined): Promise<ParsedDocument | ChunkedDocument> {
    if (this.closed) return Promise.reject(new Error('the parser pool is closed'));
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<ParsedDocument | ChunkedDocument>((resolve, reject) => {
      const pending: Pending = {
        type,
        filePath,
        chunk,
        timeoutMs,
        signal,
        resolve,
        reject,
        onAbort: () => this.abort(pending),
      };
      signal?.addEventListener('abort', pending.onAbort, { once: true });
      this.queue.push(pending);
      this.dispatch();
    });
  }

  /** Stops every worker; queued and running parses reject. */
  async close(): Promise<void> {
    this.closed = true;
    const err = new Error('the parser pool is closed');
    for (const p of this.queue.splice(0)) this.finish(p, () => p.reject(err));
    await Promise.all(
      this.slots.splice(0).map((slot) => {
        const job = slot.job;
        slot.job = null;
        if (job) this.finish(job, () => job.reject(err));
        if (slot.idleTimer) clearTimeout(slot.idleTimer);
        return slot.worker.terminate();
      }),
    );
  }

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < (this.opts.size ?? 1)) slot = this.spawn();
      if (!slot) return;
      const pending = this.queue.shift()!;
      const id = this.nextId++;
      const timer = setTimeout(() => {
        const ms = pending.timeoutMs;
        this.failRunning(slot!, new KbParseError('timeout', `Parsing took longer than ${ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`} and was stopped.`));
      }, pending.timeoutMs);
      slot.job = { ...pending, id, timer };
      if (slot.idleTimer) clearTimeout(slot.idleTimer);
      slot.idleTimer = null;
      slot.worker.ref();
      const message: ParseJob = { id, type: pending.type, filePath: pending.filePath, ...(pending.chunk ? { chunk: pending.chunk } : {}) };
      slot.worker.postMessage(message);
    }
  }

  private spawn(): Slot {
    const maxMemoryMb = this.opts.maxMemoryMb ?? DEFAULT_PARSE_MEMORY_MB;
    const worker = new Worker(this.opts.workerUrl ?? WORKER_URL, {
      name: 'kb-parser',
      resourceLimits: { maxOldGenerationSizeMb: maxMemoryMb, maxYoungGenerationSizeMb: Math.min(64, Math.max(8, Math.floor(maxMemoryMb / 8))) },
    });
    const slot: Slot = { worker, job: null, parses: 0, idleTimer: null };
    worker.on('message', (result: ParseJobResult) => {
      const job = slot.job;
      if (!job || job.id !== result.id) return;
      slot.job = null;
      slot.parses++;
      if (result.ok) this.finish(job, () => job.resolve('chunked' in result ? result.chunked : result.document));
      else this.finish(job, () => job.reject(withCause(new KbParseError(result.code, result.message), result.detail)));
      if (slot.parses >= (this.opts.maxParsesPerWorker ?? 50)) this.retire(slot);
      else this.idle(slot);
      this.dispatch();
    });
    worker.on('error', (err: Error & { code?: string }) => {
      const type = slot.job?.type ?? 'document';
      const failure =
        err.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? new KbParseError('too_complex', 'The document is too complex to parse within the memory limit (for example a compressed file that expands enormously).')
          : new KbParseError('corrupt', `The ${type.toUpperCase()} file could not be read.`);
      this.failRunning(slot, withCause(failure, err));
    });
    worker.on('exit', (code) => {
      const type = slot.job?.type ?? 'document';
      this.failRunning(slot, new KbParseError('corrupt', `The ${type.toUpperCase()} file could not be read (the parser stopped with code ${code}).`));
    });
    this.slots.push(slot);
    return slot;
  }

  /** Ends a slot's worker and fails its running job, if the slot is still ours; the next job gets a new worker. */
  private failRunning(slot: Slot, err: unknown): void {
    if (!this.retire(slot)) return;
    const job = slot.job;
    slot.job = null;
    if (job) this.finish(job, () => job.reject(err));
    this.dispatch();
  }

  /** Removes and terminates a slot's worker; false when it was already gone. */
  private retire(slot: Slot): boolean {
    const index = this.slots.indexOf(slot);
    if (index < 0) return false;
    this.slots.splice(index, 1);
    if (slot.idleTimer) clearTimeout(slot.idleTimer);
    void slot.worker.terminate();
    return true;
  }

  private idle(slot: Slot): void {
    slot.worker.unref();
    slot.idleTimer = setTimeout(() => {
      if (!slot.job) this.retire(slot);
    }, this.opts.idleMs ?? 30_000);
    slot.idleTimer.unref();
  }

  private abort(pending: Pending): void {
    const queued = this.queue.indexOf(pending);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      this.finish(pending, () => pending.reject(pending.signal!.reason));
      return;
    }
    const slot = this.slots.find((s) => s.job?.onAbort === pending.onAbort);
    if (slot) this.failRunning(slot, pending.signal!.reason);
  }

  private finish(job: Pending & { timer?: NodeJS.Timeout }, settle: () => void): void {
    if (job.timer) clearTimeout(job.timer);
    job.signal?.removeEventListener('abort', job.onAbort);
    settle();
  }
}

function withCause<E extends Error>(err: E, cause: unknown): E {
  (err as { cause?: unknown }).cause = cause;
  return err;
}
