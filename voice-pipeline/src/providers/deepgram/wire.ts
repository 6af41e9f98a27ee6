/**
 * Deepgram live transcription (`/v1/listen`) wire format, shared by the adapter (`stt.ts`)
 * and the simulator (`simulator.ts`). See reference/stt.md §1. Times on the wire are
 * seconds (floats); our code converts to milliseconds at this edge.
 *
 * Parsers ignore unknown fields (zod objects strip them) and unknown message types
 * (reference/README.md: providers add fields without notice).
 */
import { z } from 'zod';
import type { SttStreamOptions } from '../types.js';

// ---------- server → client ----------

export const deepgramWordSchema = z.object({
  word: z.string(),
  start: z.number(),
  end: z.number(),
  confidence: z.number(),
  punctuated_word: z.string().optional(),
  speaker: z.number().optional(),
  language: z.string().optional(),
});
export type DeepgramWord = z.infer<typeof deepgramWordSchema>;

export const deepgramAlternativeSchema = z.object({
  transcript: z.string(),
  confidence: z.number(),
  words: z.array(deepgramWordSchema).default([]),
});

export const deepgramResultsSchema = z.object({
  type: z.literal('Results'),
  channel_index: z.array(z.number()).optional(),
  /** Seconds of audio this result covers. */
  duration: z.number(),
  /** Seconds from the start of the stream. */
  start: z.number(),
  is_final: z.boolean(),
  speech_final: z.boolean().optional(),
  from_finalize: z.boolean().optional(),
  channel: z.object({ alternatives: z.array(deepgramAlternativeSchema) }),
  metadata: z
    .object({
      request_id: z.string().optional(),
      model_uuid: z.string().optional(),
      model_info: z.object({ name: z.string().optional(), version: z.string().optional(), arch: z.string().optional() }).optional(),
    })
    .optional(),
});
export type DeepgramResults = z.infer<typeof deepgramResultsSchema>;

export const deepgramUtteranceEndSchema = z.object({
  type: z.literal('UtteranceEnd'),
  channel: z.array(z.number()).optional(),
  /** Seconds: end of the last word before the gap. */
  last_word_end: z.number(),
});
export type DeepgramUtteranceEnd = z.infer<typeof deepgramUtteranceEndSchema>;

export const deepgramSpeechStartedSchema = z.object({
  type: z.literal('SpeechStarted'),
  channel: z.array(z.number()).optional(),
  /** Seconds: where speech began. */
  timestamp: z.number(),
});
export type DeepgramSpeechStarted = z.infer<typeof deepgramSpeechStartedSchema>;

export const deepgramMetadataSchema = z.object({
  type: z.literal('Metadata'),
  transaction_key: z.string().optional(),
  request_id: z.string(),
  sha256: z.string().optional(),
  created: z.string().optional(),
  /** Seconds of audio received on the stream. */
  duration: z.number().optional(),
  channels: z.number().optional(),
});
export type DeepgramMetadata = z.infer<typeof deepgramMetadataSchema>;

export const deepgramServerMessageSchema = z.discriminatedUnion('type', [
  deepgramResultsSchema,
  deepgramUtteranceEndSchema,
  deepgramSpeechStartedSchema,
  deepgramMetadataSchema,
]);
export type DeepgramServerMessage = z.infer<typeof deepgramServerMessageSchema>;

const KNOWN_SERVER_TYPES = new Set<string>(['Results', 'UtteranceEnd', 'SpeechStarted', 'Metadata']);

export type ParsedServerMessage =
  | { kind: 'message'; message: DeepgramServerMessage }
  /** A type we do not know (Deepgram adds some); callers skip it. */
  | { kind: 'unknown'; type: string | undefined }
  /** A known type whose body does not match; the error says which field. */
  | { kind: 'invalid'; type: string; error: string };

/**
 * Validates one server message, given as JSON text or as the object the SDK already
 * parsed. Never throws: unknown types and malformed bodies are reported, not raised.
 */
export function parseServerMessage(raw: unknown): ParsedServerMessage {
  let value = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw) as unknown;
    } catch {
      return { kind: 'unknown', type: undefined };
    }
  }
  const type = typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string' ? (value as { type: string }).type : undefined;
  if (type === undefined || !KNOWN_SERVER_TYPES.has(type)) return { kind: 'unknown', type };
  const parsed = deepgramServerMessageSchema.safeParse(value);
  if (!parsed.success) return { kind: 'invalid', type, error: parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') };
  return { kind: 'message', message: parsed.data };
}

// ---------- client → server (text frames) ----------

export const deepgramControlMessageSchema = z.object({ type: z.enum(['KeepAlive', 'Finalize', 'CloseStream']) });
export type DeepgramControlMessage = z.infer<typeof deepgramControlMessageSchema>;

// ---------- query parameters ----------

export type DeepgramEncoding = 'linear16' | 'mulaw' | 'alaw';

/** Query of `GET /v1/listen` as the adapter sends it; every value travels as a string. */
export interface DeepgramListenQuery {
  model?: string;
  language?: string;
  encoding: DeepgramEncoding;
  sample_rate: string;
  channels: string;
  interim_results: 'true' | 'false';
  /** Milliseconds, or `false` to disable endpointing. */
  endpointing: string;
  utterance_end_ms?: string;
  vad_events: 'true' | 'false';
  smart_format?: 'true' | 'false';
  punctuate?: 'true' | 'false';
  profanity_filter?: 'true' | 'false';
  /** Repeatable `key:value` pairs echoed back by Deepgram (`extra=call_sid:CA…`). */
  extra?: string[];
}

const bool = (v: boolean): 'true' | 'false' => (v ? 'true' : 'false');

/**
 * Maps our stream options to Deepgram's query. `vad_events` is always on (barge-in needs
 * `SpeechStarted`) and `channels` is always 1 (we transcribe the caller leg only).
 */
export function listenQueryFromOptions(options: SttStreamOptions): DeepgramListenQuery {
  const query: DeepgramListenQuery = {
    encoding: options.encoding,
    sample_rate: String(options.sampleRateHz),
    channels: '1',
    interim_results: bool(options.interimResults),
    endpointing: String(options.endpointingMs),
    vad_events: 'true',
  };
  if (options.model !== undefined) query.model = options.model;
  if (options.language !== undefined) query.language = options.language;
  // reference/stt.md §1.1: utterance_end_ms needs interim_results, so it is only sent with them.
  if (options.interimResults && options.utteranceEndMs > 0) query.utterance_end_ms = String(options.utteranceEndMs);
  if (options.smartFormat !== undefined) query.smart_format = bool(options.smartFormat);
  if (options.punctuate !== undefined) query.punctuate = bool(options.punctuate);
  if (options.profanityFilter !== undefined) query.profanity_filter = bool(options.profanityFilter);
  const tags = Object.entries(options.tags ?? {});
  if (tags.length > 0) query.extra = tags.map(([key, value]) => `${key}:${value}`);
  return query;
}

/** Parses repeated `extra=key:value` parameters into a map (the first `:` splits). */
export function parseExtra(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values) {
    const i = v.indexOf(':');
    if (i > 0) out[v.slice(0, i)] = v.slice(i + 1);
  }
  return out;
}

const boolParam = z.enum(['true', 'false']).transform((v) => v === 'true');

/** The query as the simulator needs it: strings in, typed settings out; 400 on failure. */
export const listenQuerySchema = z.object({
  model: z.string().optional(),
  language: z.string().optional(),
  encoding: z.enum(['linear16', 'mulaw', 'alaw'], { message: 'encoding is required for raw audio (linear16, mulaw or alaw)' }),
  sample_rate: z.coerce.number().int().min(4000).max(96000),
  channels: z.coerce.number().int().min(1).max(8).default(1),
  interim_results: boolParam.default(false),
  /** `false` disables endpointing; Deepgram's default is 10 ms. */
  endpointing: z
    .string()
    .default('10')
    .transform((v, ctx) => {
      if (v === 'false') return false as const;
      if (v === 'true') return 10;
      const n = Number(v);
      if (!Number.isFinite(n) || n < 0) {
        ctx.addIssue({ code: 'custom', message: 'endpointing must be milliseconds or false' });
        return z.NEVER;
      }
      return n;
    }),
  utterance_end_ms: z.coerce.number().int().min(0).optional(),
  vad_events: boolParam.default(false),
  smart_format: boolParam.optional(),
  punctuate: boolParam.optional(),
  profanity_filter: boolParam.optional(),
});
export type ListenSettings = z.infer<typeof listenQuerySchema>;

/** Reads a `URLSearchParams` into `listenQuerySchema` input (last value wins, like Deepgram). */
export function parseListenQuery(params: URLSearchParams): ReturnType<typeof listenQuerySchema.safeParse> {
  const flat: Record<string, string> = {};
  for (const [key, value] of params) flat[key] = value;
  return listenQuerySchema.safeParse(flat);
}
