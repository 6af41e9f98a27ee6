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

export const mediaFormatSchema = z.looseObject({
  encoding: z.string(),
  sampleRate: z.number(),
  channels: z.number(),
});

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

export const dtmfSchema = z.looseObject({
  event: z.literal('dtmf'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  dtmf: z.looseObject({ track: z.string().optional(), digit: z.string().regex(/^[0-9*#A-D]$/) }),
});

export const inboundMarkSchema = z.looseObject({
  event: z.literal('mark'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  mark: z.looseObject({ name: z.string() }),
});

export const stopSchema = z.looseObject({
  event: z.literal('stop'),
  sequenceNumber: z.string().optional(),
  streamSid: z.string(),
  stop: z.looseObject({ accountSid: z.string().optional(), callSid: z.string().optional() }).optional(),
});

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
export const outboundMediaSchema = z.strictObject({
  event: z.literal('media'),
  streamSid: z.string(),
  media: z.strictObject({ payload: base64 }),
});

export const outboundMarkSchema = z.strictObject({
  event: z.literal('mark'),
  streamSid: z.string(),
  mark: z.strictObject({ name: z.string() }),
});

export const clearSchema = z.strictObject({
  event: z.literal('clear'),
  streamSid: z.string(),
});

export const twilioOutboundSchema = z.discriminatedUnion('event', [outboundMediaSchema, outboundMarkSchema, clearSchema]);

/** A message the gateway sends to Twilio. */
export type TwilioOutbound = z.infer<typeof twilioOutboundSchema>;

/** The only media format Twilio streams use (§2.1 `start.mediaFormat`). */
export const TWILIO_MEDIA_FORMAT = Object.freeze({ encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 });
