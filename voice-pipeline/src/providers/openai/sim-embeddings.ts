/**
 * The OpenAI simulator's `POST /v1/embeddings` (reference/llm.md §2): request validation the
 * way the API answers it, and the response built from {@link hashEmbedding}, the same
 * algorithm as the control plane's local embedder, so paraphrase search works through it.
 */
import { errorBody, type OpenAiErrorBody } from './sim-script.js';
import { hashEmbedding } from './hash-embedding.js';
import { countTextTokens } from './tokens.js';

/** Native sizes of OpenAI's embedding models; any other model name gets {@link SIM_DEFAULT_EMBEDDING_DIMENSIONS}. */
export const OPENAI_EMBEDDING_DIMENSIONS: Readonly<Record<string, number>> = Object.freeze({
  'text-embedding-3-small': 1536,
  'text-embedding-3-large': 3072,
  'text-embedding-ada-002': 1536,
});

/** Vector size for models the simulator does not know (self-hosted names such as `bge-small-en-v1.5`). */
export const SIM_DEFAULT_EMBEDDING_DIMENSIONS = 384;

/** The API's limits: inputs per request and tokens per input (reference/llm.md §2). */
const MAX_INPUTS = 2048;
const MAX_INPUT_TOKENS = 8192;
/** Upper bound on `dimensions` for models without a native size. */
const MAX_DIMENSIONS = 4096;

export type EmbeddingsOutcome = { status: 200; body: EmbeddingsResponse } | { status: 400; body: OpenAiErrorBody };

export interface EmbeddingsResponse {
  object: 'list';
  data: { object: 'embedding'; index: number; embedding: number[] | string }[];
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
}

const invalid = (param: string | null, message: string, code: string | null = null): EmbeddingsOutcome => ({ status: 400, body: errorBody(message, 'invalid_request_error', param, code) });
/** What the API says for an input it cannot take (empty string, empty array, wrong element types). */
const badInput = (): EmbeddingsOutcome => invalid('input', "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.");

/**
 * Answers one embeddings request body. Token-array inputs are accepted as the API does; the
 * simulator has no tokenizer to decode them, so it embeds the token ids as words.
 * `dimensionsOverride` (a fault) forces the vector size whatever was asked.
 */
export function answerEmbeddings(body: unknown, dimensionsOverride: number | null = null): EmbeddingsOutcome {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return invalid(null, 'Invalid request body: expected a JSON object.');
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string' || b.model === '') return invalid('model', 'you must provide a model parameter');
  if (b.input === undefined) return invalid('input', "Missing required parameter: 'input'.", 'missing_required_parameter');
  const texts = inputTexts(b.input);
  if (texts === null) return badInput();
  if (texts.length > MAX_INPUTS) return invalid('input', `Invalid 'input': array too long. Expected an array with maximum length ${MAX_INPUTS}, but got an array with length ${texts.length} instead.`, 'array_above_max_length');
  const format = b.encoding_format ?? 'float';
  if (format !== 'float' && format !== 'base64') return invalid('encoding_format', `Invalid value: '${String(format)}'. Supported values are: 'float' and 'base64'.`, 'invalid_value');
  const native = OPENAI_EMBEDDING_DIMENSIONS[b.model];
  let dimensions = native ?? SIM_DEFAULT_EMBEDDING_DIMENSIONS;
  if (b.dimensions !== undefined && b.dimensions !== null) {
    if (typeof b.dimensions !== 'number' || !Number.isInteger(b.dimensions)) return invalid('dimensions', "Invalid type for 'dimensions': expected an integer.", 'invalid_type');
    if (b.model === 'text-embedding-ada-002') return invalid(null, 'This model does not support specifying dimensions.');
    const max = native ?? MAX_DIMENSIONS;
    if (b.dimensions < 1 || b.dimensions > max) return invalid('dimensions', `Invalid 'dimensions': integer must be between 1 and ${max}, got ${b.dimensions}.`, 'invalid_value');
    dimensions = b.dimensions;
  }
  let promptTokens = 0;
  for (const text of texts) {
    const tokens = countTextTokens(text);
    if (tokens > MAX_INPUT_TOKENS) {
      return invalid('input', `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, however you requested ${tokens} tokens (${tokens} in your prompt; 0 for the completion). Please reduce your prompt; or completion length.`);
    }
    promptTokens += tokens;
  }
  const size = dimensionsOverride ?? dimensions;
  const data = texts.map((text, index) => {
    const vector = hashEmbedding(text, size);
    return { object: 'embedding' as const, index, embedding: format === 'base64' ? float32Base64(vector) : Array.from(vector) };
  });
  return { status: 200, body: { object: 'list', data, model: b.model, usage: { prompt_tokens: promptTokens, total_tokens: promptTokens } } };
}

/** `input` as texts: a string, an array of strings, a token array, or an array of token arrays; null when malformed or empty. */
function inputTexts(input: unknown): string[] | null {
  const isTokens = (v: unknown): v is number[] => Array.isArray(v) && v.length > 0 && v.every((t) => Number.isInteger(t) && (t as number) >= 0);
  if (typeof input === 'string') return input === '' ? null : [input];
  if (!Array.isArray(input) || input.length === 0) return null;
  if (input.every((v) => typeof v === 'string')) return input.some((v) => v === '') ? null : (input as string[]);
  if (isTokens(input)) return [input.join(' ')];
  if (input.every(isTokens)) return input.map((tokens) => tokens.join(' '));
  return null;
}

/** base64 of the little-endian float32 array (reference/llm.md §2). */
export function float32Base64(vector: Float32Array): string {
  const buf = Buffer.alloc(vector.length * 4);
  vector.forEach((v, i) => buf.writeFloatLE(v, i * 4));
  return buf.toString('base64');
}
