/**
 * Telnyx media-streaming WebSocket messages (reference/telephony-telnyx.md §2), as zod
 * schemas. Field names are snake_case. Loose objects on what Telnyx sends (it adds fields,
 * and several inner shapes are unconfirmed); strict ones on what we send, so the simulator,
 * which plays Telnyx, catches anything we add by mistake.
 */
import { z } from 'zod';

/** Telnyx sends counters as decimal strings; numbers are accepted too. */
const counter = z.union([z.string(), z.number()]).transform(String);

// ---- Telnyx → gateway (§2.1) ---------------------------------------------------------

/** First message; with a `stream_auth_token` it repeats the token inside `connected`. */
export const telnyxConnectedSchema = z.looseObject({ event: z.literal('connected'), version: z.string().optional() });

/** `start.media_format`: what Telnyx streams to us (PCMU 8 kHz mono for the TeXML we answer). */
export const telnyxMediaFormatSchema = z.looseObject({
  encoding: z.string(),
  sample_rate: z.coerce.number(),
  channels: z.coerce.number().default(1),
});

/**
 * `custom_parameters`: an object of strings as §2.1 shows; the `[{name, value}]` list of the
 * `streaming_start` command (§3) is accepted too, since the TeXML wiring is unconfirmed.
 */
const customParameters = z
  .union([z.record(z.string(), z.string()), z.array(z.looseObject({ name: z.string(), value: z.string() }))])
  .transform((v) => (Array.isArray(v) ? Object.fromEntries(v.map((p) => [p.name, p.value])) : v));

/** Once, after `connected`: call identity, our `<Parameter>`s and the media format. */
export const telnyxStartSchema = z.looseObject({
  event: z.literal('start'),
  sequence_number: counter.optional(),
  stream_id: z.string().min(1),
  start: z.looseObject({
    call_control_id: z.string().min(1),
    user_id: z.string().optional(),
    call_session_id: z.string().optional(),
    from: z.string().optional(),
    to: z.string().optional(),
    client_state: z.string().nullish(),
    custom_parameters: customParameters.nullish().transform((v) => v ?? {}),
    media_format: telnyxMediaFormatSchema,
  }),
});

/** Caller audio: base64 of one RTP payload (normally 20 ms), `track` `inbound` or `outbound`. */
export const telnyxInboundMediaSchema = z.looseObject({
  event: z.literal('media'),
  sequence_number: counter.optional(),
  stream_id: z.string().optional(),
  media: z.looseObject({
    track: z.string().default('inbound'),
    chunk: counter.optional(),
    timestamp: counter.optional(),
    payload: z.string(),
  }),
});

const dtmfDigitString = z.string().regex(/^[0-9*#A-D]$/);
const dtmfDigit = z.looseObject({ digit: dtmfDigitString });

/**
 * A key press. The inner shape is unconfirmed (§2.1): the digit is read from `dtmf.digit` as
 * documented, else from `payload.digit` (the shape of Telnyx's other event bodies). `payload`
 * may also be a wrapper without a digit: a valid `dtmf.digit` is enough ({@link telnyxDtmfDigit}).
 */
export const telnyxDtmfSchema = z
  .looseObject({ event: z.literal('dtmf'), stream_id: z.string().optional(), dtmf: dtmfDigit.optional(), payload: z.looseObject({ digit: z.unknown().optional() }).optional() })
  .refine((m) => telnyxDtmfDigit(m) !== undefined, { message: 'a digit is required', path: ['dtmf', 'digit'] });

/** The key of a `dtmf` message: `dtmf.digit`, else a valid `payload.digit`. */
export function telnyxDtmfDigit(m: { dtmf?: { digit: string } | undefined; payload?: { digit?: unknown } | undefined }): string | undefined {
  return m.dtmf?.digit ?? dtmfDigitString.safeParse(m.payload?.digit).data;
}

/** Echo of a mark we sent: played, or returned by a `clear`. */
export const telnyxInboundMarkSchema = z.looseObject({ event: z.literal('mark'), stream_id: z.string().optional(), mark: z.looseObject({ name: z.string() }) });

/** Telnyx reports a problem with what we sent (inner shape unconfirmed). */
export const telnyxErrorSchema = z.looseObject({ event: z.literal('error'), stream_id: z.string().optional(), payload: z.looseObject({}).optional() });

/** The last message: the call hung up or the stream stopped. */
export const telnyxStopSchema = z.looseObject({ event: z.literal('stop'), stream_id: z.string().optional(), stop: z.looseObject({}).optional() });

/** Any message Telnyx sends on a media stream. */
export const telnyxInboundSchema = z.discriminatedUnion('event', [
  telnyxConnectedSchema,
  telnyxStartSchema,
  telnyxInboundMediaSchema,
  telnyxDtmfSchema,
  telnyxInboundMarkSchema,
  telnyxErrorSchema,
  telnyxStopSchema,
]);

export type TelnyxInbound = z.infer<typeof telnyxInboundSchema>;
export type TelnyxStart = z.infer<typeof telnyxStartSchema>;
export type TelnyxMediaFormat = z.infer<typeof telnyxMediaFormatSchema>;

/** Event names the gateway understands from Telnyx; anything else is ignored. */
export const TELNYX_INBOUND_EVENTS: ReadonlySet<string> = new Set(['connected', 'start', 'media', 'dtmf', 'mark', 'error', 'stop']);

// ---- gateway → Telnyx (§2.2, RTP mode) ----------------------------------------------

/** `stream_id` on what we send is optional either way (§2.2, unconfirmed): the simulator accepts both. */
const streamId = z.string().optional();

/** Agent audio: raw PCMU 8 kHz, base64, 20 ms up to 30 s per message. */
export const telnyxOutboundMediaSchema = z.strictObject({ event: z.literal('media'), stream_id: streamId, media: z.strictObject({ payload: z.string() }) });
export const telnyxOutboundMarkSchema = z.strictObject({ event: z.literal('mark'), stream_id: streamId, mark: z.strictObject({ name: z.string() }) });
/** Barge-in: Telnyx stops playback, drops its queue and returns the queued marks. */
export const telnyxClearSchema = z.strictObject({ event: z.literal('clear'), stream_id: streamId });

/** Any message the gateway may send. */
export const telnyxOutboundSchema = z.discriminatedUnion('event', [telnyxOutboundMediaSchema, telnyxOutboundMarkSchema, telnyxClearSchema]);
export type TelnyxOutbound = z.infer<typeof telnyxOutboundSchema>;

/** The format the TeXML we answer asks for both ways (`bidirectionalCodec="PCMU"`, 8000 Hz). */
export const TELNYX_MEDIA_FORMAT = Object.freeze({ encoding: 'PCMU', sample_rate: 8000, channels: 1 });
