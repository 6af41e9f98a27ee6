/**
 * Twilio Media Streams serializer: JSON text ↔ typed messages, both directions.
 * Pure functions, no I/O (STYLE.md §3). The gateway uses {@link parseTwilioMessage} and the
 * `*Message` builders; the simulated Twilio caller uses the other half.
 * Wire format: reference/telephony-twilio.md §2.
 */
import type { z } from 'zod';
import { TWILIO_INBOUND_EVENTS, TWILIO_MEDIA_FORMAT, twilioInboundSchema, twilioOutboundSchema } from './wire.js';
import type { TwilioInbound, TwilioMediaFormat, TwilioOutbound } from './wire.js';

/** Why a text frame was not turned into a message. `unknown-event` is normal (ignored); the others are the peer's bug. */
export type RejectReason = 'invalid-json' | 'invalid-shape' | 'unknown-event';

/** Called with the reason a message was dropped, for logging; `detail` never contains payload audio. */
export type OnReject = (reason: RejectReason, detail: string) => void;

/**
 * One JSON text frame → a message of `schema`, or `null` (never throws) for invalid JSON, a
 * non-object, a missing or unknown `event` (names in `known`) or a wrong shape; `onReject`
 * learns why. `fast` may accept a well-formed value without the schema. Shared by the
 * carriers' serializers (Twilio, Telnyx).
 */
export function parseWith<T>(text: string, schema: z.ZodType<T>, known: ReadonlySet<string>, onReject?: OnReject, fast?: (value: Record<string, unknown>) => T | null): T | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    onReject?.('invalid-json', `${text.length} chars`);
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    onReject?.('invalid-shape', 'not a JSON object');
    return null;
  }
  const event = (value as { event?: unknown }).event;
  if (typeof event !== 'string') {
    onReject?.('invalid-shape', 'event: missing');
    return null;
  }
  if (!known.has(event)) {
    onReject?.('unknown-event', event.slice(0, 40));
    return null;
  }
  const quick = fast?.(value as Record<string, unknown>);
  if (quick) return quick;
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    onReject?.('invalid-shape', issue ? `${event}.${issue.path.map(String).join('.')}: ${issue.message}` : event);
    return null;
  }
  return parsed.data;
}

// ---- gateway side ------------------------------------------------------------------

/**
 * One text frame from Twilio → a typed message, or `null` (never throws) for invalid JSON,
 * a wrong shape or an event we do not know; `onReject` learns why. Unknown fields are kept.
 */
export function parseTwilioMessage(text: string, onReject?: OnReject): TwilioInbound | null {
  return parseWith(text, twilioInboundSchema, TWILIO_INBOUND_EVENTS, onReject, wellFormedInboundMedia);
}

const optionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';

/**
 * The hot path: 50 `media` messages a second per call. A well-formed one is accepted by
 * direct checks equal to `inboundMediaSchema`'s (unknown fields kept, `track` defaulting to
 * `inbound`), without building zod's copy; anything else (null) goes through the schema,
 * which names what is wrong.
 */
function wellFormedInboundMedia(value: Record<string, unknown>): TwilioInbound | null {
  if (value.event !== 'media' || typeof value.streamSid !== 'string' || !optionalString(value.sequenceNumber)) return null;
  const media = value.media as Record<string, unknown> | null | undefined;
  if (typeof media !== 'object' || media === null || Array.isArray(media)) return null;
  if (typeof media.payload !== 'string' || !optionalString(media.chunk) || !optionalString(media.timestamp)) return null;
  if (media.track === undefined) media.track = 'inbound';
  else if (typeof media.track !== 'string') return null;
  return value as TwilioInbound;
}

/** Characters that make a JSON text need the full parser: escapes, and raw control characters (invalid JSON). */
// eslint-disable-next-line no-control-regex -- matching raw control characters is the point: JSON.parse rejects them
const NEEDS_PARSER = /[\u0000-\u001f\\]/;
const MEDIA_PREFIX = '{"event":"media",';
const QUOTE = 0x22;
const COLON = 0x3a;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** The base64 alphabet (RFC 4648 §4) as byte codes. */
const BASE64_CODES = Uint8Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', (c) => c.charCodeAt(0));
const PAD = 0x3d;

const MEDIA_PREFIX_BYTES = Buffer.from(MEDIA_PREFIX, 'latin1');
const KEY_MEDIA = Buffer.from('media', 'latin1');
const KEY_PAYLOAD = Buffer.from('payload', 'latin1');
const KEY_TRACK = Buffer.from('track', 'latin1');
const KEY_CHUNK = Buffer.from('chunk', 'latin1');
const KEY_TIMESTAMP = Buffer.from('timestamp', 'latin1');
const KEY_STREAM_SID = Buffer.from('streamSid', 'latin1');
const KEY_SEQUENCE_NUMBER = Buffer.from('sequenceNumber', 'latin1');
const KEY_EVENT = Buffer.from('event', 'latin1');
const TRACK_INBOUND = Buffer.from('inbound', 'latin1');
const BACKSLASH = 0x5c;

/** `bytes[start, end)` equals `word`. */
function bytesAre(bytes: Uint8Array, start: number, end: number, word: Uint8Array): boolean {
  if (end - start !== word.length) return false;
  for (let k = 0; k < word.length; k++) if (bytes[start + k] !== word[k]) return false;
  return true;
}

/** No escape, raw control character or non-ASCII byte in `bytes[start, end)`: a JSON string's content that reads the same as bytes and as text. */
function plainAscii(bytes: Uint8Array, start: number, end: number): boolean {
  for (let k = start; k < end; k++) {
    const c = bytes[k]!;
    if (c < 0x20 || c === BACKSLASH || c >= 0x80) return false;
  }
  return true;
}

/** base64 digit of each byte code; -1 for any other byte. */
const BASE64_DIGITS = (() => {
  const digits = new Int8Array(256).fill(-1);
  BASE64_CODES.forEach((code, digit) => (digits[code] = digit));
  return digits;
})();

/**
 * Strict base64 (padded, alphabet only) of `text[start, end)` decoded into a new Buffer, or
 * null for anything else (the message then goes the text way, decoded leniently as Node does).
 */
function decodeStrictBase64(text: Uint8Array, start: number, end: number): Buffer | null {
  const length = end - start;
  if (length % 4 !== 0) return null;
  let pads = 0;
  if (length > 0 && text[end - 1] === PAD) pads = text[end - 2] === PAD ? 2 : 1;
  const out = Buffer.allocUnsafe((length / 4) * 3 - pads);
  let o = 0;
  const whole = pads > 0 ? end - 4 : end;
  for (let i = start; i < whole; i += 4) {
    const a = BASE64_DIGITS[text[i]!]!;
    const b = BASE64_DIGITS[text[i + 1]!]!;
    const c = BASE64_DIGITS[text[i + 2]!]!;
    const d = BASE64_DIGITS[text[i + 3]!]!;
    if ((a | b | c | d) < 0) return null;
    const n = (a << 18) | (b << 12) | (c << 6) | d;
    out[o] = n >>> 16;
    out[o + 1] = (n >>> 8) & 255;
    out[o + 2] = n & 255;
    o += 3;
  }
  if (pads > 0) {
    const a = BASE64_DIGITS[text[whole]!]!;
    const b = BASE64_DIGITS[text[whole + 1]!]!;
    const c = pads === 1 ? BASE64_DIGITS[text[whole + 2]!]! : 0;
    if ((a | b | c) < 0) return null;
    const n = (a << 18) | (b << 12) | (c << 6);
    out[o] = n >>> 16;
    if (pads === 1) out[o + 1] = (n >>> 8) & 255;
  }
  return out;
}

/** {@link readInboundMediaBytes}: a `media` message of another stream (the leg rejects it). */
export const OTHER_STREAM = 'other-stream';
/** {@link readInboundMediaBytes}: a `media` message of a track other than `inbound` (ignored). */
export const OTHER_TRACK = 'other-track';

/**
 * The inbound hot path (50 `media` messages a second per call), over the message's bytes as
 * the socket received them, for the stream `streamSid` (its UTF-8 bytes): no string and no
 * `JSON.parse`. A `media` message in the compact layout Twilio sends (`{"event":"media",`
 * first, no whitespace, every value a string of plain ASCII without escapes except the `media`
 * object, whose values are such strings too, a strict base64 payload) gives the caller's audio
 * decoded, {@link OTHER_STREAM} or {@link OTHER_TRACK}. Anything else, including a duplicate
 * known key, returns null, and the caller parses the text ({@link parseTwilioMessage}), which
 * names the problem. Where it answers, it equals that parse (tests: twilio-serializer-fast.test.ts).
 */
export function readInboundMediaBytes(bytes: Uint8Array, streamSid: Uint8Array): Buffer | typeof OTHER_STREAM | typeof OTHER_TRACK | null {
  if (!bytesAre(bytes, 0, MEDIA_PREFIX_BYTES.length, MEDIA_PREFIX_BYTES)) return null;
  const end = bytes.length;
  let sidMatches = false;
  let payloadStart = -1;
  let payloadEnd = -1;
  let inbound = true; // track defaults to inbound
  let seen = 0; // bits: 1 sequenceNumber, 2 streamSid, 4 media, 8 track, 16 chunk, 32 timestamp, 64 payload
  let nested = false;
  let i = MEDIA_PREFIX_BYTES.length;
  for (;;) {
    if (bytes[i] !== QUOTE) return null;
    const keyEnd = bytes.indexOf(QUOTE, i + 1);
    if (keyEnd < 0 || bytes[keyEnd + 1] !== COLON) return null;
    const keyStart = i + 1;
    if (!plainAscii(bytes, keyStart, keyEnd)) return null;
    let v = keyEnd + 2;
    if (!nested && bytesAre(bytes, keyStart, keyEnd, KEY_MEDIA)) {
      if (seen & 4 || bytes[v] !== OPEN_BRACE) return null;
      seen |= 4;
      nested = true;
      i = v + 1;
      continue;
    }
    if (bytes[v] !== QUOTE) return null;
    const valueEnd = bytes.indexOf(QUOTE, v + 1);
    if (valueEnd < 0) return null;
    v++;
    let bit = 0;
    let isPayload = false;
    if (nested) {
      if (bytesAre(bytes, keyStart, keyEnd, KEY_PAYLOAD)) {
        bit = 64;
        isPayload = true;
        payloadStart = v;
        payloadEnd = valueEnd;
      } else if (bytesAre(bytes, keyStart, keyEnd, KEY_TRACK)) {
        bit = 8;
        inbound = bytesAre(bytes, v, valueEnd, TRACK_INBOUND);
      } else if (bytesAre(bytes, keyStart, keyEnd, KEY_CHUNK)) bit = 16;
      else if (bytesAre(bytes, keyStart, keyEnd, KEY_TIMESTAMP)) bit = 32;
    } else if (bytesAre(bytes, keyStart, keyEnd, KEY_STREAM_SID)) {
      bit = 2;
      sidMatches = bytesAre(bytes, v, valueEnd, streamSid);
    } else if (bytesAre(bytes, keyStart, keyEnd, KEY_SEQUENCE_NUMBER)) bit = 1;
    else if (bytesAre(bytes, keyStart, keyEnd, KEY_EVENT)) return null;
    // The payload is checked as it is decoded (its alphabet is plain ASCII).
    if (!isPayload && !plainAscii(bytes, v, valueEnd)) return null;
    if (seen & bit) return null;
    seen |= bit;
    i = valueEnd + 1;
    let c = bytes[i];
    if (c === COMMA) {
      i++;
      continue;
    }
    if (c !== CLOSE_BRACE) return null;
    if (nested) {
      nested = false;
      c = bytes[++i];
      if (c === COMMA) {
        i++;
        continue;
      }
      if (c !== CLOSE_BRACE) return null;
    }
    if (i !== end - 1 || !(seen & 2) || !(seen & 64)) return null;
    if (sidMatches && inbound) return decodeStrictBase64(bytes, payloadStart, payloadEnd);
    // Not decoded: its bytes are checked as every other value's are.
    if (!plainAscii(bytes, payloadStart, payloadEnd)) return null;
    return sidMatches ? OTHER_TRACK : OTHER_STREAM;
  }
}

/** base64 μ-law bytes of a `media.payload`. Lenient like Node's decoder: junk characters are skipped. */
export function decodeMediaPayload(payload: string): Uint8Array {
  const buf = Buffer.from(payload, 'base64');
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

/**
 * base64 of `bytes[start, end)`. A Buffer is encoded in place (no view is made: the outbound
 * hot path encodes 50 frames a second per call out of the queued chunks); a plain
 * Uint8Array through a Buffer over the same memory.
 */
export function toBase64(bytes: Uint8Array, start = 0, end = bytes.byteLength): string {
  if (Buffer.isBuffer(bytes)) return bytes.toString('base64', start, end);
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('base64');
}

/** True for the one format a Twilio stream may carry: μ-law, 8000 Hz, mono (§2.1). */
export function isSupportedMediaFormat(format: TwilioMediaFormat): boolean {
  return format.encoding === TWILIO_MEDIA_FORMAT.encoding && format.sampleRate === TWILIO_MEDIA_FORMAT.sampleRate && format.channels === TWILIO_MEDIA_FORMAT.channels;
}

/** `media` to play to the caller: raw μ-law 8 kHz mono, no file header (§2.2). */
export function mediaMessage(streamSid: string, mulaw: Uint8Array): string {
  return mediaMessageWriter(streamSid)(mulaw);
}

/**
 * {@link mediaMessage} for one stream, its fixed part built once: 50 frames a second per
 * call, and base64 needs no JSON escaping. The audio is `mulaw[start, end)` (default: all).
 */
export function mediaMessageWriter(streamSid: string): (mulaw: Uint8Array, start?: number, end?: number) => string {
  const head = `{"event":"media","streamSid":${JSON.stringify(streamSid)},"media":{"payload":"`;
  return (mulaw, start, end) => head + toBase64(mulaw, start, end) + '"}}';
}

/** Length of the base64 text of `n` bytes, padding included. */
export function base64Length(n: number): number {
  return Math.ceil(n / 3) * 4;
}

/**
 * Writes the base64 text (padded, as `Buffer#toString('base64')`) of `src[start, end)` into
 * `out` from `offset` as ASCII bytes; returns the offset after it. No string is made: the
 * outbound hot path builds each frame's message as bytes (#5).
 */
export function base64Into(src: Uint8Array, start: number, end: number, out: Uint8Array, offset: number): number {
  let o = offset;
  let i = start;
  for (const whole = end - ((end - start) % 3); i < whole; i += 3) {
    const n = (src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!;
    out[o] = BASE64_CODES[n >>> 18]!;
    out[o + 1] = BASE64_CODES[(n >>> 12) & 63]!;
    out[o + 2] = BASE64_CODES[(n >>> 6) & 63]!;
    out[o + 3] = BASE64_CODES[n & 63]!;
    o += 4;
  }
  const left = end - i;
  if (left > 0) {
    const n = (src[i]! << 16) | (left === 2 ? src[i + 1]! << 8 : 0);
    out[o] = BASE64_CODES[n >>> 18]!;
    out[o + 1] = BASE64_CODES[(n >>> 12) & 63]!;
    out[o + 2] = left === 2 ? BASE64_CODES[(n >>> 6) & 63]! : PAD;
    out[o + 3] = PAD;
    o += 4;
  }
  return o;
}

const MEDIA_TAIL = Buffer.from('"}}', 'latin1');

/**
 * {@link mediaMessageWriter} as the UTF-8 bytes of the same text (send them as a text
 * frame): the hot path's 50 frames a second per call, built without a string per frame
 * (the base64 text, the concatenation and its flattening when the socket writes it).
 */
export function mediaFrameWriter(streamSid: string): (mulaw: Uint8Array, start?: number, end?: number) => Buffer {
  const head = Buffer.from(`{"event":"media","streamSid":${JSON.stringify(streamSid)},"media":{"payload":"`, 'utf8');
  return (mulaw, start = 0, end = mulaw.byteLength) => {
    const out = Buffer.allocUnsafe(head.length + base64Length(end - start) + MEDIA_TAIL.length);
    out.set(head, 0);
    out.set(MEDIA_TAIL, base64Into(mulaw, start, end, out, head.length));
    return out;
  };
}

/** `mark` placed in Twilio's playback queue; echoed back once the audio before it played. */
export function markMessage(streamSid: string, name: string): string {
  return JSON.stringify({ event: 'mark', streamSid, mark: { name } });
}

/** `clear`: Twilio drops its queued audio and returns the pending marks. */
export function clearMessage(streamSid: string): string {
  return JSON.stringify({ event: 'clear', streamSid });
}

// ---- Twilio side (the simulated caller) ----------------------------------------------

const OUTBOUND_EVENTS: ReadonlySet<string> = new Set(['media', 'mark', 'clear']);

/** One text frame from the gateway, as Twilio would read it: strict (extra fields are error 31951). */
export function parseGatewayMessage(text: string, onReject?: OnReject): TwilioOutbound | null {
  return scanGatewayMedia(text) ?? parseWith(text, twilioOutboundSchema, OUTBOUND_EVENTS, onReject);
}

const GATEWAY_MEDIA_PREFIX = '{"event":"media","streamSid":"';
const GATEWAY_MEDIA_MIDDLE = '","media":{"payload":"';
const GATEWAY_MEDIA_END = '"}}';

/**
 * The simulated caller's hot path: a `media` message in exactly the layout
 * {@link mediaMessage} writes, without escapes or control characters, read by `indexOf`;
 * it is what the strict schema would accept. Anything else is `null` (the schema decides).
 */
function scanGatewayMedia(text: string): TwilioOutbound | null {
  if (!text.startsWith(GATEWAY_MEDIA_PREFIX) || !text.endsWith(GATEWAY_MEDIA_END) || NEEDS_PARSER.test(text)) return null;
  const sidEnd = text.indexOf('"', GATEWAY_MEDIA_PREFIX.length);
  if (!text.startsWith(GATEWAY_MEDIA_MIDDLE, sidEnd)) return null;
  const payloadStart = sidEnd + GATEWAY_MEDIA_MIDDLE.length;
  const payloadEnd = text.length - GATEWAY_MEDIA_END.length;
  if (payloadEnd < payloadStart || text.indexOf('"', payloadStart) !== payloadEnd) return null;
  return { event: 'media', streamSid: text.slice(GATEWAY_MEDIA_PREFIX.length, sidEnd), media: { payload: text.slice(payloadStart, payloadEnd) } };
}

/** The first message of a stream. */
export function connectedMessage(): string {
  return JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' });
}

/** Fields of a `start` message (the simulated caller's side). */
export interface StartFields {
  sequenceNumber: number;
  streamSid: string;
  accountSid: string;
  callSid: string;
  customParameters: Record<string, string>;
  tracks?: string[];
  mediaFormat?: TwilioMediaFormat;
}

/** `start`, sent once after `connected`; `tracks` and `mediaFormat` default to Twilio's. */
export function startMessage(f: StartFields): string {
  return JSON.stringify({
    event: 'start',
    sequenceNumber: String(f.sequenceNumber),
    streamSid: f.streamSid,
    start: {
      streamSid: f.streamSid,
      accountSid: f.accountSid,
      callSid: f.callSid,
      tracks: f.tracks ?? ['inbound'],
      customParameters: f.customParameters,
      mediaFormat: f.mediaFormat ?? TWILIO_MEDIA_FORMAT,
    },
  });
}

/** Caller audio: `chunk` counts per track from 1, `timestamp` is ms since the stream started (§2.3). */
export function inboundMediaMessage(f: { sequenceNumber: number; streamSid: string; chunk: number; timestampMs: number; mulaw: Uint8Array; track?: string }): string {
  // Built by concatenation (50 a second per simulated call); the same text JSON.stringify gives.
  const track = f.track === undefined ? '"inbound"' : JSON.stringify(f.track);
  return `{"event":"media","sequenceNumber":"${f.sequenceNumber}","streamSid":${JSON.stringify(f.streamSid)},"media":{"track":${track},"chunk":"${f.chunk}","timestamp":"${Math.round(f.timestampMs)}","payload":"${toBase64(f.mulaw)}"}}`;
}

/** One key press, as Twilio reports it (`track: inbound_track`). */
export function dtmfMessage(f: { sequenceNumber: number; streamSid: string; digit: string }): string {
  return JSON.stringify({ event: 'dtmf', sequenceNumber: String(f.sequenceNumber), streamSid: f.streamSid, dtmf: { track: 'inbound_track', digit: f.digit } });
}

/** Twilio's echo of a mark (played, or cut by a `clear`). */
export function markEchoMessage(f: { sequenceNumber: number; streamSid: string; name: string }): string {
  return JSON.stringify({ event: 'mark', sequenceNumber: String(f.sequenceNumber), streamSid: f.streamSid, mark: { name: f.name } });
}

/** The last message of a stream (the caller hung up). */
export function stopMessage(f: { sequenceNumber: number; streamSid: string; accountSid: string; callSid: string }): string {
  return JSON.stringify({ event: 'stop', sequenceNumber: String(f.sequenceNumber), streamSid: f.streamSid, stop: { accountSid: f.accountSid, callSid: f.callSid } });
}
