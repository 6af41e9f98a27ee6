/**
 * One interface per capability (STYLE.md §4). Adapters translate between these and a
 * provider's SDK; retries, fallbacks and metrics wrap the interfaces, never an adapter.
 * Every method that waits takes an `AbortSignal`: aborting it must end the wait promptly,
 * close the provider's stream and reject with an `AbortError` (never a ProviderError).
 */

/** Connection settings an adapter receives from configuration; it never reads the environment. */
export interface ProviderConnection {
  apiKey: string;
  /** Root of the provider's API (`https://api.deepgram.com`, `http://127.0.0.1:PORT` for a simulator). */
  baseUrl: string;
}

// ---------- speech to text ----------

export interface SttWord {
  word: string;
  /** Milliseconds from the start of the audio sent on this stream. */
  startMs: number;
  endMs: number;
  confidence: number;
}

export type SttEvent =
  /** The provider heard speech begin (Deepgram `SpeechStarted`). */
  | { type: 'speech-started'; atMs: number }
  /** A transcript of one span of audio; `isFinal` fixes it, `speechFinal` means the provider's endpointer fired. */
  | { type: 'transcript'; text: string; isFinal: boolean; speechFinal: boolean; confidence: number; startMs: number; endMs: number; words: SttWord[] }
  /** No words for `utteranceEndMs` after the last one (Deepgram `UtteranceEnd`). */
  | { type: 'utterance-end'; lastWordEndMs: number };

export interface SttStreamOptions {
  encoding: 'mulaw' | 'alaw' | 'linear16';
  sampleRateHz: number;
  model?: string;
  /** BCP 47 tag, e.g. `en-US`. */
  language?: string;
  punctuate?: boolean;
  smartFormat?: boolean;
  profanityFilter?: boolean;
  interimResults: boolean;
  /** Silence that makes the provider mark `speechFinal`. */
  endpointingMs: number;
  /** Gap after the last word before `utterance-end`. */
  utteranceEndMs: number;
  /** Opaque key/values echoed by the provider (Deepgram `extra`); the call id goes here for tracing. */
  tags?: Record<string, string>;
}

/**
 * A live transcription stream. Events arrive through `events` in order; the iterator
 * ends after `close()` and throws a ProviderError if the connection fails.
 */
export interface SttStream {
  /** Raw audio in the declared encoding; any size. Never blocks. */
  send(audio: Uint8Array): void;
  /** Ask for everything buffered to be finalised now (end of the caller's turn). */
  finalize(): void;
  readonly events: AsyncIterable<SttEvent>;
  /** Graceful end: remaining results are flushed, then the stream closes. */
  close(): Promise<void>;
}

export interface SttProvider {
  readonly name: string;
  open(options: SttStreamOptions, signal: AbortSignal): Promise<SttStream>;
}

// ---------- language model ----------

export interface LlmToolCall {
  id: string;
  name: string;
  /** JSON text as the model produced it. */
  arguments: string;
}

export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface LlmTool {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
}

export interface LlmRequest {
  model: string;
  messages: LlmMessage[];
  tools?: LlmTool[];
  temperature?: number;
  maxTokens?: number;
  topP?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /**
   * Structured output: the reply's text is one JSON object matching `schema` (OpenAI
   * `response_format: json_schema`, strict). The schema must follow the strict subset:
   * every object lists all its properties in `required` and sets `additionalProperties: false`.
   * A provider without structured output ignores it; callers validate the reply either way.
   */
  responseFormat?: { name: string; schema: Record<string, unknown> };
}

export type LlmEvent =
  | { type: 'text'; text: string }
  | { type: 'tool-call'; call: LlmToolCall }
  | { type: 'usage'; inputTokens: number; outputTokens: number }
  | { type: 'done'; finishReason: 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'other' };

export interface LlmProvider {
  readonly name: string;
  /** Streams one completion. The iterable throws ProviderError on failure; aborting `signal` cancels the HTTP request. */
  stream(request: LlmRequest, signal: AbortSignal): AsyncIterable<LlmEvent>;
}

// ---------- text to speech ----------

export type TtsOutputFormat = 'ulaw_8000' | 'alaw_8000' | 'pcm_8000' | 'pcm_16000' | 'pcm_24000';

export interface TtsVoiceSettings {
  stability?: number;
  similarityBoost?: number;
  style?: number;
  useSpeakerBoost?: boolean;
  speed?: number;
}

export interface TtsStreamOptions {
  voiceId: string;
  model?: string;
  outputFormat: TtsOutputFormat;
  voiceSettings?: TtsVoiceSettings;
  /** ISO 639-1 language code for models that take one. */
  language?: string;
}

/** Per-character timing of the text a chunk speaks, relative to the start of that chunk. */
export interface TtsAlignment {
  chars: string[];
  startMs: number[];
  durationMs: number[];
}

export type TtsEvent = { type: 'audio'; audio: Uint8Array; alignment: TtsAlignment | null } | { type: 'final' };

/**
 * One synthesis stream (one agent turn). Text goes in as the LLM produces it; audio comes
 * out through `events`, ending with `final` after `end()`. Aborting the signal given to
 * `open` drops the stream at once (barge-in): no more events, the socket is closed.
 */
export interface TtsStream {
  /**
   * A piece of text; end sentences with a space so words are not split. With `flush`, it
   * also generates everything buffered now, as {@link flush} does, in the same message.
   */
  sendText(text: string, opts?: { flush?: boolean }): void;
  /** Generate everything buffered now (end of a sentence the caller should hear soon). */
  flush(): void;
  /** No more text: generate the rest, emit `final`, then close. */
  end(): void;
  readonly events: AsyncIterable<TtsEvent>;
}

export interface TtsProvider {
  readonly name: string;
  open(options: TtsStreamOptions, signal: AbortSignal): Promise<TtsStream>;
  /**
   * The call is over: let go of what outlives one stream (ElevenLabs' multi-context socket);
   * streams still open end silently, later `open()`s reject. Absent where each stream holds
   * its own connection.
   */
  close?(): void;
}
