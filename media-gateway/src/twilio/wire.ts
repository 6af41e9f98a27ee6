/**
 * Twilio Media Streams wire messages (reference/telephony-twilio.md §2), as zod schemas.
 *
 * Loose objects everywhere: Twilio adds fields without notice, so unknown fields are kept
 * and never rejected. Numbers that Twilio sends as strings (`sequenceNumber`, `chunk`,
 * `timestamp`) stay strings here; the serializer decides what to do with them.
 */
import { z } from 'zod';

/** `media.payload` and friends: the raw μ-law bytes in base64. */
const base64 = z.string();

// ---- Twilio → gateway (§2.1) -------------------------------------------------------

/** Always the first message; carries no streamSid. */
export const connectedSchema = z.looseObject({
  event: z.literal('connected'),
  protocol: z.string().optional(),
  version: z.string().optional(),
});

/** `start.mediaFormat`: always μ-law 8000 Hz mono on Twilio. */
export const mediaFormatSchema = z.looseObject({
  encoding: z.string(),
  sampleRate: z.number(),
  channels: z.number(),
});

/** Exactly once, right after `connected`: call identity, `<Parameter>`s and the media format. */
export const startSchema = z.looseObject({
  event: z.literal('start'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string().min(1),
  start: z.looseObject({
    streamSid: z.string().min(1),
    accountSid: z.string(),
    callSid: z.string().min(1),
    tracks: z.array(z.string()).default(['inbound']),
    // `{}` when the TwiML had no <Parameter> children (§1).
    customParameters: z.record(z.string(), z.string()).default({}),
    mediaFormat: mediaFormatSchema,
  }),
});

/** Caller audio: 160 μ-law bytes (20 ms) per message at real time, base64 in `payload`. */
export const inboundMediaSchema = z.looseObject({
  event: z.literal('media'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  media: z.looseObject({
    track: z.string().default('inbound'),
    chunk: z.string().optional(),
    timestamp: z.string().optional(),
    payload: base64,
  }),
});

/** One key press (bidirectional streams only). */
export const dtmfSchema = z.looseObject({
  event: z.literal('dtmf'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  dtmf: z.looseObject({ track: z.string().optional(), digit: z.string().regex(/^[0-9*#A-D]$/) }),
});

/** Echo of a mark we sent: its audio has played, or a `clear` cut it. */
export const inboundMarkSchema = z.looseObject({
  event: z.literal('mark'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  mark: z.looseObject({ name: z.string() }),
});

/** The last message: the call hung up or the stream was stopped; Twilio then closes. */
export const stopSchema = z.looseObject({
  event: z.literal('stop'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  stop: z.looseObject({ accountSid: z.string().optional(), callSid: z.string().optional() }).optional(),
});

/** Any message Twilio sends on a media stream. */
export const twilioInboundSchema = z.discriminatedUnion('event', [connectedSchema, startSchema, inboundMediaSchema, dtmfSchema, inboundMarkSchema, stopSchema]);

/** A message Twilio sends to the gateway. */
export type TwilioInbound = z.infer<typeof twilioInboundSchema>;
export type TwilioStart = z.infer<typeof startSchema>;
export type TwilioMediaFormat = z.infer<typeof mediaFormatSchema>;

/** Event names the gateway understands from Twilio; anything else is ignored. */
export const TWILIO_INBOUND_EVENTS: ReadonlySet<string> = new Set(['connected', 'start', 'media', 'dtmf', 'mark', 'stop']);

// ---- gateway → Twilio (§2.2) -------------------------------------------------------

// Strict objects: Twilio rejects extra fields in what we send (debugger 31951), so the
// simulator, which plays Twilio, is strict too.
/** Agent audio to play: raw μ-law 8 kHz mono, base64, any length. */
export const outboundMediaSchema = z.strictObject({
  event: z.literal('media'),
  streamSid: z.string(),
  media: z.strictObject({ payload: base64 }),
});

/** A named bookmark in Twilio's playback queue. */
export const outboundMarkSchema = z.strictObject({
  event: z.literal('mark'),
  streamSid: z.string(),
  mark: z.strictObject({ name: z.string() }),
});

/** Barge-in: Twilio flushes its playback queue and returns pending marks. */
export const clearSchema = z.strictObject({
  event: z.literal('clear'),
  streamSid: z.string(),
});

/** Any message the gateway may send on a media stream. */
export const twilioOutboundSchema = z.discriminatedUnion('event', [outboundMediaSchema, outboundMarkSchema, clearSchema]);

/** A message the gateway sends to Twilio. */
export type TwilioOutbound = z.infer<typeof twilioOutboundSchema>;

/** The only media format Twilio streams use (§2.1 `start.mediaFormat`). */
export const TWILIO_MEDIA_FORMAT = Object.freeze({ encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 });
