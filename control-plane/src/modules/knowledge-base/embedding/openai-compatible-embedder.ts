/**
 * An `Embedder` over any OpenAI-compatible `POST /v1/embeddings` (reference/llm.md §2 and
 * §3): OpenAI itself, Hugging Face TEI, vLLM, Ollama's `/v1` API, or the OpenAI simulator.
 * Plain `fetch` rather than the OpenAI SDK: the request is one JSON POST, and owning the
 * retry loop lets it honour `Retry-After` and treat every compatible server alike.
 */
import { z } from 'zod';
import { retryAfterMs } from '@vap/shared';
import type { Embedder } from '../types.js';
import { normaliseInPlace } from './vectors.js';

export interface OpenAiCompatibleEmbedderOptions {
  /**
   * API root, e.g. `https://api.openai.com`, `http://tei:8080` or `http://ollama:11434/v1`.
   * Requests go to `{baseUrl}/v1/embeddings`, or `{baseUrl}/embeddings` when it already ends
   * with `/v1` (the form OpenAI SDKs and most server docs give).
   */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; omit for servers without auth. */
  apiKey?: string | undefined;
  model: string;
  /**
   * Vector size. Sent as `dimensions` only when `sendDimensions` is true (text-embedding-3
   * shortening); otherwise it is the size expected back. Unset: known model sizes, else
   * learnt from the first response.
   */
  dimensions?: number | undefined;
  /** Ask the server for `dimensions` (OpenAI text-embedding-3 only). Default: true when `dimensions` is set and the model is a text-embedding-3 model. */
  sendDimensions?: boolean;
  /** Inputs per request. Default 64 (OpenAI allows 2048; self-hosted servers often cap lower, e.g. TEI's 32 by default). */
  batchSize?: number;
  /** Retries after the first attempt, for 408, 429, 5xx, timeouts and network errors. Default 4. */
  maxRetries?: number;
  /** Per-attempt timeout (ms). Default 60 000. */
  timeoutMs?: number;
  /** First backoff (ms), doubled per retry with jitter, capped at 30 s; a `Retry-After` wins when given. Default 500. */
  retryBaseMs?: number;
  /** Prefixes for asymmetric models (e5: `query: `/`passage: `; nomic: `search_query: `/`search_document: `). */
  queryPrefix?: string;
  documentPrefix?: string;
  /** Injected for tests of the backoff; default setTimeout. */
  sleep?: (ms: number) => Promise<void>;
}

/** Sizes of well-known models, so `dimensions` is known before the first request. */
export const KNOWN_EMBEDDING_DIMENSIONS: Readonly<Record<string, number>> = Object.freeze({
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
  'nomic-embed-text': 768,
  'mxbai-embed-large': 1024,
  'all-minilm': 384,
  'BAAI/bge-small-en-v1.5': 384,
  'BAAI/bge-base-en-v1.5': 768,
  'BAAI/bge-large-en-v1.5': 1024,
  'sentence-transformers/all-MiniLM-L6-v2': 384,
});

export type EmbeddingErrorCode = 'http' | 'network' | 'timeout' | 'bad_response' | 'dimension_mismatch';

/** A failed embedding call, after retries. `message` says what and where, never the API key. */
export class EmbeddingError extends Error {
  constructor(
    readonly code: EmbeddingErrorCode,
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options: { cause?: unknown; retryAfterMs?: number | undefined } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'EmbeddingError';
    this.retryAfterMs = options.retryAfterMs;
  }

  /** The wait the server asked for (Retry-After), when it did. */
  readonly retryAfterMs: number | undefined;
}

const ResponseSchema = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.union([z.array(z.number()), z.string()]) })),
});

const MAX_BACKOFF_MS = 30_000;
/** A server asking for longer than this is treated as down, not rate limiting. */
const MAX_RETRY_AFTER_MS = 120_000;
/** How much of a server's error body goes into our error message. */
const MAX_DETAIL_CHARS = 300;

export class OpenAiCompatibleEmbedder implements Embedder {
  readonly model: string;
  private readonly endpoint: string;
  private readonly o: Required<Omit<OpenAiCompatibleEmbedderOptions, 'apiKey' | 'dimensions' | 'baseUrl' | 'model'>> & { apiKey: string | undefined };
  private knownDimensions: number | undefined;
  private readonly sendDimensions: boolean;

  constructor(options: OpenAiCompatibleEmbedderOptions) {
    this.model = options.model;
    this.endpoint = embeddingsUrl(options.baseUrl);
    this.knownDimensions = options.dimensions ?? KNOWN_EMBEDDING_DIMENSIONS[options.model];
    this.sendDimensions = options.sendDimensions ?? (options.dimensions !== undefined && options.model.startsWith('text-embedding-3'));
    this.o = {
      apiKey: options.apiKey,
      batchSize: options.batchSize ?? 64,
      maxRetries: options.maxRetries ?? 4,
      timeoutMs: options.timeoutMs ?? 60_000,
      retryBaseMs: options.retryBaseMs ?? 500,
      queryPrefix: options.queryPrefix ?? '',
      documentPrefix: options.documentPrefix ?? '',
      sendDimensions: this.sendDimensions,
      sleep: options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms))),
    };
    if (!Number.isInteger(this.o.batchSize) || this.o.batchSize < 1 || this.o.batchSize > 2048) throw new RangeError('batchSize must be an integer from 1 to 2048');
    if (!Number.isInteger(this.o.maxRetries) || this.o.maxRetries < 0) throw new RangeError('maxRetries must be a non-negative integer');
  }

  /**
   * Vector size: configured, known for the model, or learnt from the first response. Throws
   * when none of these holds yet; `resolveDimensions()` asks the server once.
   */
  get dimensions(): number {
    if (this.knownDimensions === undefined) throw new Error(`dimensions of ${this.model} are not known yet: call resolveDimensions() or embed() first`);
    return this.knownDimensions;
  }

  /** The vector size, embedding one short text if it is not known yet. */
  async resolveDimensions(): Promise<number> {
    if (this.knownDimensions === undefined) await this.embed(['dimension probe'], 'document');
    return this.dimensions;
  }

  /**
   * Vectors in input order, L2-normalised, in batches of `batchSize` sent one after another.
   * Empty strings are sent as a single space (OpenAI rejects ""). Every vector must have the
   * same size as the model's others, or this throws `dimension_mismatch`.
   */
  async embed(texts: string[], kind: 'document' | 'query'): Promise<Float32Array[]> {
    const prefix = kind === 'query' ? this.o.queryPrefix : this.o.documentPrefix;
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += this.o.batchSize) {
      const batch = texts.slice(i, i + this.o.batchSize).map((t) => `${prefix}${t}` || ' ');
      out.push(...(await this.embedBatch(batch)));
    }
    return out;
  }

  private async embedBatch(input: string[]): Promise<Float32Array[]> {
    const body = JSON.stringify({
      model: this.model,
      input,
      encoding_format: 'float',
      ...(this.sendDimensions && this.knownDimensions !== undefined ? { dimensions: this.knownDimensions } : {}),
    });
    for (let attempt = 0; ; attempt++) {
      try {
        return this.parse(await this.post(body), input.length);
      } catch (err) {
        const e = err instanceof EmbeddingError ? err : new EmbeddingError('network', `embedding request to ${this.endpoint} failed: ${String(err)}`, true, undefined, { cause: err });
        if (!e.retryable || attempt >= this.o.maxRetries) throw e;
        await this.o.sleep(e.retryAfterMs ?? backoffMs(attempt, this.o.retryBaseMs));
      }
    }
  }

  private async post(body: string): Promise<unknown> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.o.apiKey) headers.authorization = `Bearer ${this.o.apiKey}`;
    let res: Response;
    try {
      res = await fetch(this.endpoint, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.o.timeoutMs) });
    } catch (err) {
      const timeout = err instanceof DOMException && err.name === 'TimeoutError';
      throw new EmbeddingError(timeout ? 'timeout' : 'network', `embedding request to ${this.endpoint} ${timeout ? `timed out after ${this.o.timeoutMs} ms` : `failed: ${errorText(err)}`}`, true, undefined, { cause: err });
    }
    const text = await res.text().catch(() => '');
    if (!res.ok) {
      const retryable = res.status === 408 || res.status === 429 || res.status >= 500;
      throw new EmbeddingError('http', `embedding model ${this.model} at ${this.endpoint} answered ${res.status}: ${serverDetail(text)}`, retryable, res.status, { retryAfterMs: parseRetryAfter(res.headers) });
    }
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new EmbeddingError('bad_response', `embedding response from ${this.endpoint} is not JSON`, true, res.status, { cause: err });
    }
  }

  private parse(json: unknown, expected: number): Float32Array[] {
    const parsed = ResponseSchema.safeParse(json);
    if (!parsed.success) throw new EmbeddingError('bad_response', `embedding response from ${this.endpoint} has no data[].embedding: ${z.prettifyError(parsed.error).slice(0, MAX_DETAIL_CHARS)}`, false);
    const items = [...parsed.data.data].sort((a, b) => a.index - b.index);
    if (items.length !== expected || items.some((item, i) => item.index !== i)) {
      throw new EmbeddingError('bad_response', `embedding response from ${this.endpoint} has ${items.length} vectors for ${expected} inputs`, false);
    }
    return items.map((item, i) => {
      const vector = typeof item.embedding === 'string' ? decodeBase64Floats(item.embedding) : Float32Array.from(item.embedding);
      this.knownDimensions ??= vector.length;
      if (vector.length !== this.knownDimensions) {
        throw new EmbeddingError('dimension_mismatch', `embedding model ${this.model} returned a ${vector.length}-dimension vector (input ${i} of the batch) where ${this.knownDimensions} were expected; vectors of different sizes cannot be searched together`, false);
      }
      try {
        return normaliseInPlace(vector);
      } catch (err) {
        throw new EmbeddingError('bad_response', `embedding model ${this.model} returned an unusable vector for input ${i} of the batch (${(err as Error).message})`, false);
      }
    });
  }
}

/** `{baseUrl}/v1/embeddings`, or `{baseUrl}/embeddings` when the base already ends with `/v1`. */
export function embeddingsUrl(baseUrl: string): string {
  const base = baseUrl.replace(/\/+$/, '');
  return /\/v1$/.test(base) ? `${base}/embeddings` : `${base}/v1/embeddings`;
}

/** Exponential backoff with full jitter: uniform in [base·2^attempt / 2, base·2^attempt], capped. */
export function backoffMs(attempt: number, baseMs: number): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, baseMs * 2 ** attempt);
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/**
 * The wait a response asks for: OpenAI's `retry-after-ms`, else `Retry-After` (seconds or an
 * HTTP date, `retryAfterMs`); undefined when absent, unparsable or beyond two minutes.
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get('retry-after-ms');
  const wait = ms !== null && /^\d+(\.\d+)?$/.test(ms.trim()) ? Number(ms) : retryAfterMs(headers.get('retry-after'), now);
  return wait !== undefined && wait <= MAX_RETRY_AFTER_MS ? Math.ceil(wait) : undefined;
}

function decodeBase64Floats(b64: string): Float32Array {
  const buf = Buffer.from(b64, 'base64');
  if (buf.length % 4 !== 0) throw new EmbeddingError('bad_response', 'base64 embedding is not a whole number of float32 values', false);
  const out = new Float32Array(buf.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = buf.readFloatLE(i * 4);
  return out;
}

/** OpenAI's `error.message`, TEI's `error`, or the start of the body. */
function serverDetail(text: string): string {
  let detail = text;
  try {
    const j = JSON.parse(text) as { error?: unknown; message?: unknown };
    if (typeof j.error === 'object' && j.error !== null && typeof (j.error as { message?: unknown }).message === 'string') detail = (j.error as { message: string }).message;
    else if (typeof j.error === 'string') detail = j.error;
    else if (typeof j.message === 'string') detail = j.message;
  } catch {
    // not JSON: keep the text
  }
  detail = detail.replace(/\s+/g, ' ').trim();
  return detail === '' ? '(empty body)' : detail.slice(0, MAX_DETAIL_CHARS);
}

function errorText(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  return err instanceof Error ? err.message : String(err);
}
