/**
 * Telnyx media-stream serializer: JSON text ↔ typed messages, both directions. Pure
 * functions, no I/O (STYLE.md §3). The gateway uses {@link parseTelnyxMessage} and the
 * outbound builders; the simulated Telnyx caller uses the other half.
 * Wire format: reference/telephony-telnyx.md §2.
 */
import { parseWith, toBase64 } from '../twilio/serializer.js';
import type { OnReject } from '../twilio/serializer.js';
import { TELNYX_INBOUND_EVENTS, TELNYX_MEDIA_FORMAT, telnyxInboundSchema, telnyxOutboundSchema } from './wire.js';
import type { TelnyxInbound, TelnyxMediaFormat, TelnyxOutbound } from './wire.js';

// ---- gateway side ------------------------------------------------------------------

/** One text frame from Telnyx → a typed message, or `null` (never throws); `onReject` learns why. */
export function parseTelnyxMessage(text: string, onReject?: OnReject): TelnyxInbound | null {
  return parseWith(text, telnyxInboundSchema, TELNYX_INBOUND_EVENTS, onReject);
}

/** True for the one format the gateway takes: PCMU (μ-law), 8000 Hz, mono. */
export function isSupportedTelnyxFormat(format: TelnyxMediaFormat): boolean {
  return format.encoding.toUpperCase() === TELNYX_MEDIA_FORMAT.encoding && format.sample_rate === TELNYX_MEDIA_FORMAT.sample_rate && format.channels === TELNYX_MEDIA_FORMAT.channels;
}

/** `media` writer (RTP mode): the documented form, without `stream_id` (§2.2); the fixed part is built once. */
export function telnyxMediaMessage(mulaw: Uint8Array, start?: number, end?: number): string {
  return `{"event":"media","media":{"payload":"${toBase64(mulaw, start, end)}"}}`;
}

/** `mark` placed in Telnyx's playback queue; echoed once the audio before it played. */
export function telnyxMarkMessage(name: string): string {
  return JSON.stringify({ event: 'mark', mark: { name } });
}

/** `clear`: Telnyx drops queued audio and returns the queued marks. */
export function telnyxClearMessage(): string {
  return '{"event":"clear"}';
}

// ---- Telnyx side (the simulated caller) ----------------------------------------------

const OUTBOUND_EVENTS: ReadonlySet<string> = new Set(['media', 'mark', 'clear']);

/** One text frame from the gateway, as the simulated Telnyx reads it (strict: unknown fields are our bug). */
export function parseTelnyxGatewayMessage(text: string, onReject?: OnReject): TelnyxOutbound | null {
  return parseWith(text, telnyxOutboundSchema, OUTBOUND_EVENTS, onReject);
}

export function telnyxConnectedMessage(): string {
  return JSON.stringify({ event: 'connected', version: '1.0.0' });
}

/** Fields of a `start` message. */
export interface TelnyxStartFields {
  sequenceNumber: number;
  streamId: string;
  callControlId: string;
  callSessionId: string;
  userId: string;
  from?: string;
  to?: string;
  clientState?: string;
  customParameters: Record<string, string>;
  mediaFormat?: TelnyxMediaFormat;
}

/** `start`, once after `connected` (§2.1, snake_case). */
export function telnyxStartMessage(f: TelnyxStartFields): string {
  return JSON.stringify({
    event: 'start',
    sequence_number: String(f.sequenceNumber),
    stream_id: f.streamId,
    start: {
      user_id: f.userId,
      call_control_id: f.callControlId,
      call_session_id: f.callSessionId,
      from: f.from,
      to: f.to,
      tags: [],
      client_state: f.clientState ?? null,
      custom_parameters: f.customParameters,
      media_format: f.mediaFormat ?? TELNYX_MEDIA_FORMAT,
    },
  });
}

/** Caller audio: `chunk` counts from 1, `timestamp` in ms since the stream started. */
export function telnyxInboundMediaMessage(f: { sequenceNumber: number; streamId: string; chunk: number; timestampMs: number; mulaw: Uint8Array }): string {
  return `{"event":"media","sequence_number":"${f.sequenceNumber}","stream_id":${JSON.stringify(f.streamId)},"media":{"track":"inbound","chunk":"${f.chunk}","timestamp":"${Math.round(f.timestampMs)}","payload":"${toBase64(f.mulaw)}"}}`;
}

export function telnyxDtmfMessage(f: { sequenceNumber: number; streamId: string; digit: string }): string {
  return JSON.stringify({ event: 'dtmf', sequence_number: String(f.sequenceNumber), stream_id: f.streamId, occurred_at: new Date().toISOString(), dtmf: { digit: f.digit } });
}

export function telnyxMarkEchoMessage(f: { sequenceNumber: number; streamId: string; name: string }): string {
  return JSON.stringify({ event: 'mark', sequence_number: String(f.sequenceNumber), stream_id: f.streamId, mark: { name: f.name } });
}

export function telnyxStopMessage(f: { sequenceNumber: number; streamId: string; userId: string; callControlId: string }): string {
  return JSON.stringify({ event: 'stop', sequence_number: String(f.sequenceNumber), stream_id: f.streamId, stop: { user_id: f.userId, call_control_id: f.callControlId } });
}
