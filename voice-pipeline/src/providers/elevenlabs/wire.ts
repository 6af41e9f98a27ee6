/**
 * ElevenLabs `stream-input` WebSocket wire format, shared by the adapter (`tts.ts`) and the
 * simulator (`simulator.ts`). Field names are exactly as on the wire (reference/tts.md §1).
 * Parsers ignore unknown fields: ElevenLabs adds fields without notice.
 */
import type { TtsAlignment, TtsVoiceSettings } from '../types.js';

/**
 * The two text-in WebSockets: `multi-stream-input` (one socket a call, a context a turn;
 * the default) and `stream-input` (a socket a turn). README "Configuration":
 * `ELEVENLABS_WEBSOCKET`.
 */
export const ELEVENLABS_WEBSOCKETS = ['multi-stream-input', 'stream-input'] as const;
export type ElevenLabsWebSocket = (typeof ELEVENLABS_WEBSOCKETS)[number];

/** `voice_settings` as sent in the first message. */
export interface WireVoiceSettings {
  stability?: number;
  similarity_boost?: number;
  style?: number;
  use_speaker_boost?: boolean;
  speed?: number;
}

/** First client message: `text` must be exactly one space (reference/tts.md §1.1.1). */
export interface WireInitMessage {
  text: ' ';
  voice_settings?: WireVoiceSettings;
  generation_config?: { chunk_length_schedule?: number[] };
  /** Key in the message: worked examples spell it `xi_api_key`, the schema `xi-api-key` (both accepted by the simulator). */
  xi_api_key?: string;
  'xi-api-key'?: string;
  authorization?: string;
}

/** A text chunk (ends with a space), a keep-alive (`" "`), a flush, or the close (`""`). */
export interface WireTextMessage {
  text: string;
  flush?: boolean;
  try_trigger_generation?: boolean;
}

/**
 * Per-character timing relative to the chunk. The reference spells the durations
 * `charsDurationsMs`; the SDK's AsyncAPI schema and observed traffic use `charDurationsMs`
 * (elevenlabs-docs#76). Readers accept both; the simulator sends `charDurationsMs`.
 */
export interface WireAlignment {
  charStartTimesMs?: number[];
  charDurationsMs?: number[];
  charsDurationsMs?: number[];
  chars?: string[];
}

/** Server → client audio chunk. */
export interface WireAudioMessage {
  audio: string;
  isFinal?: false | null;
  alignment?: WireAlignment | null;
  normalizedAlignment?: WireAlignment | null;
}

/** Server → client error, observed in practice; `code` is the close code that follows (reference/tts.md §1.2). */
export interface WireErrorMessage {
  error: string;
  message?: string;
  code?: number;
}

/** What the adapter makes of one server text frame. */
export type ServerMessage =
  | { kind: 'audio'; audio: Uint8Array; alignment: TtsAlignment | null }
  | { kind: 'final' }
  | { kind: 'error'; error: string; message: string; code: number | undefined }
  | { kind: 'ignored' };

/** Maps our camelCase voice settings to the wire's snake_case, leaving out what is unset. */
export function toWireVoiceSettings(settings: TtsVoiceSettings): WireVoiceSettings {
  const wire: WireVoiceSettings = {};
  if (settings.stability !== undefined) wire.stability = settings.stability;
  if (settings.similarityBoost !== undefined) wire.similarity_boost = settings.similarityBoost;
  if (settings.style !== undefined) wire.style = settings.style;
  if (settings.useSpeakerBoost !== undefined) wire.use_speaker_boost = settings.useSpeakerBoost;
  if (settings.speed !== undefined) wire.speed = settings.speed;
  return wire;
}

/** Our alignment from the wire's (sharing its arrays), or `null` when absent or inconsistent (the three arrays must have equal length). */
export function fromWireAlignment(wire: WireAlignment | null | undefined): TtsAlignment | null {
  if (wire === null || wire === undefined || typeof wire !== 'object') return null;
  const chars = wire.chars;
  const startMs = wire.charStartTimesMs;
  const durationMs = wire.charDurationsMs ?? wire.charsDurationsMs;
  if (!Array.isArray(chars) || !Array.isArray(startMs) || !Array.isArray(durationMs)) return null;
  if (chars.length !== startMs.length || chars.length !== durationMs.length) return null;
  // The arrays of a just-parsed message are the caller's own: no copies (a chunk's
  // alignment lives as long as its turn's playback, #5).
  return { chars: chars as string[], startMs: startMs as number[], durationMs: durationMs as number[] };
}

/**
 * Classifies one server frame. Any message with `error` and no `audio` is fatal for the
 * generation (reference/tts.md §1.2); `isFinal: true` ends the stream; unknown shapes are ignored.
 */
export function parseServerMessage(text: string): ServerMessage {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { kind: 'ignored' };
  }
  if (msg === null || typeof msg !== 'object') return { kind: 'ignored' };
  return classify(msg as Record<string, unknown>);
}

/**
 * {@link parseServerMessage} for `multi-stream-input` (reference/tts.md §1.3): the same
 * classification, plus the context the message is for (`contextId`; one schema spells it
 * `context_id`), `null` when it names none (an error for the whole socket).
 */
export function parseMultiServerMessage(text: string): { message: ServerMessage; contextId: string | null } {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return { message: { kind: 'ignored' }, contextId: null };
  }
  if (msg === null || typeof msg !== 'object') return { message: { kind: 'ignored' }, contextId: null };
  const m = msg as Record<string, unknown>;
  const id = m.contextId ?? m.context_id;
  return { message: classify(m), contextId: typeof id === 'string' ? id : null };
}

function classify(m: Record<string, unknown>): ServerMessage {
  if (typeof m.audio === 'string' && m.audio.length > 0) {
    // A view of the decoded bytes: no second copy.
    const decoded = Buffer.from(m.audio, 'base64');
    const audio = new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength);
    return { kind: 'audio', audio, alignment: fromWireAlignment(m.alignment as WireAlignment | null | undefined) };
  }
  if (m.error !== undefined && m.error !== null) {
    return {
      kind: 'error',
      error: String(m.error),
      message: typeof m.message === 'string' ? m.message : String(m.error),
      code: typeof m.code === 'number' ? m.code : undefined,
    };
  }
  // One schema spells it `is_final` (reference/tts.md §1.3); accept both.
  if (m.isFinal === true || m.is_final === true) return { kind: 'final' };
  return { kind: 'ignored' };
}

/** `/v1/text-to-speech/{voiceId}/stream-input` */
export function streamInputPath(voiceId: string): string {
  return `/v1/text-to-speech/${encodeURIComponent(voiceId)}/stream-input`;
}

/** `/v1/text-to-speech/{voiceId}/multi-stream-input` (reference/tts.md §1.3) */
export function multiStreamInputPath(voiceId: string): string {
  return `/v1/text-to-speech/${encodeURIComponent(voiceId)}/multi-stream-input`;
}

/** Client messages of `multi-stream-input` (reference/tts.md §1.3): every one but `close_socket` names its context. */
export type WireMultiMessage =
  | (Omit<WireInitMessage, 'text'> & { text: ' '; context_id: string })
  | { text: string; context_id: string; flush?: boolean }
  | { context_id: string; close_context: true }
  | { close_socket: true };

/** `http://` → `ws://`, `https://` → `wss://`; a `ws(s)://` base is kept as it is. Trailing slashes are dropped. */
export function toWebSocketBase(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new Error(`unsupported baseUrl protocol ${url.protocol}`);
  return url.toString().replace(/\/+$/, '');
}
