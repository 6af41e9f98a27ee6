/**
 * What the platform answers to a carrier's inbound-call webhook: TwiML (Twilio), TeXML
 * (Telnyx) or an NCCO (Vonage) that connects the call to the media gateway's WebSocket,
 * or a short apology that hangs up. Pure functions, no I/O: the voice webhook and the
 * admin simulator (`simulate-inbound`) both call them, so the simulator's body is the
 * webhook's body by construction.
 */

export type InboundProvider = 'twilio' | 'telnyx' | 'vonage';

/** The routed call, as the gateway will read it back from the stream's parameters. */
export interface InboundCall {
  agentId: string;
  tenantId: string;
  /** The carrier's call id (Twilio `CallSid`). */
  callSid: string;
  from: string;
  to: string;
  /** Arrived over a SIP trunk: the body and stream URL carry `connectionType=sip`. */
  isSipTrunk: boolean;
  /** Proof for call.prepare that this answer routed the stream (stream-token.ts): set for Telnyx, whose streams are unsigned. */
  streamToken?: string;
}

/** A webhook response body and its content type. */
export interface InboundAnswer {
  contentType: 'text/xml' | 'application/json';
  body: string;
}

/** Path of each carrier's media-stream WebSocket on the gateway. */
export const MEDIA_STREAM_PATHS: Record<InboundProvider, string> = {
  twilio: '/api/v1/webhooks/twilio/media-stream',
  telnyx: '/api/v1/webhooks/telnyx/media-stream',
  vonage: '/api/v1/webhooks/vonage/media-stream',
};

/** Said before hanging up when a call cannot be routed (unknown number, no or inactive agent, any failure). */
export const APOLOGY_TEXT = 'Sorry, we cannot take your call right now. Please try again later. Goodbye.';

const XML_PROLOG = '<?xml version="1.0" encoding="UTF-8"?>';

/** Escapes text for an XML attribute value or element content. */
export function xmlEscape(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/**
 * The media-stream URL for a call: `<gatewayBaseUrl>/api/v1/webhooks/<provider>/media-stream
 * ?agentId=…&tenantId=…` (+ `&connectionType=sip`). Twilio drops the query string when it
 * opens the socket (reference/telephony-twilio.md §1), so the same values also travel as
 * stream parameters; the query is for logs and carriers that keep it.
 *
 * @param gatewayBaseUrl the gateway's public base, `wss://host[:port]`, no trailing slash
 */
export function mediaStreamUrl(provider: InboundProvider, gatewayBaseUrl: string, call: InboundCall): string {
  const query = new URLSearchParams({ agentId: call.agentId, tenantId: call.tenantId });
  if (call.isSipTrunk) query.set('connectionType', 'sip');
  return `${gatewayBaseUrl}${MEDIA_STREAM_PATHS[provider]}?${query.toString()}`;
}

/** Name/value pairs handed to the gateway: Twilio/Telnyx `<Parameter>`s, Vonage websocket `headers`. */
export function streamParameters(call: InboundCall): [string, string][] {
  const params: [string, string][] = [
    ['agentId', call.agentId],
    ['tenantId', call.tenantId],
    ['callSid', call.callSid],
    ['from', call.from],
    ['to', call.to],
    ['direction', 'inbound'],
  ];
  if (call.isSipTrunk) params.push(['connectionType', 'sip']);
  if (call.streamToken !== undefined) params.push(['streamToken', call.streamToken]);
  return params;
}

/** Unique per call, so the stream can be stopped by name (`<Stop><Stream name=…>`). */
function streamName(call: InboundCall): string {
  return `call-${call.callSid}`;
}

/**
 * `<Connect><Stream>` (bidirectional) for Twilio TwiML or Telnyx TeXML. Telnyx gets
 * `bidirectionalMode="rtp"` with PCMU at 8 kHz so it plays raw μ-law frames back like
 * Twilio does, instead of its default of MP3 files (reference/telephony-telnyx.md §1).
 */
function connectStreamXml(provider: 'twilio' | 'telnyx', gatewayBaseUrl: string, call: InboundCall): string {
  const url = mediaStreamUrl(provider, gatewayBaseUrl, call);
  const telnyxAttrs = provider === 'telnyx' ? ' bidirectionalMode="rtp" bidirectionalCodec="PCMU" bidirectionalSamplingRate="8000"' : '';
  const params = streamParameters(call)
    .map(([name, value]) => `<Parameter name="${xmlEscape(name)}" value="${xmlEscape(value)}"/>`)
    .join('');
  return `${XML_PROLOG}<Response><Connect><Stream url="${xmlEscape(url)}" name="${xmlEscape(streamName(call))}"${telnyxAttrs}>${params}</Stream></Connect></Response>`;
}

/**
 * Vonage NCCO: one `connect` action to our WebSocket, 16 kHz linear PCM, with the stream
 * parameters as `headers` (echoed in the first WebSocket message; reference/telephony-vonage.md §2),
 * and `authorization: {type: 'vonage'}` so Vonage signs the upgrade with its webhook JWT.
 */
function connectNcco(gatewayBaseUrl: string, call: InboundCall): string {
  const ncco = [
    {
      action: 'connect',
      endpoint: [
        {
          type: 'websocket',
          uri: mediaStreamUrl('vonage', gatewayBaseUrl, call),
          'content-type': 'audio/l16;rate=16000',
          headers: Object.fromEntries(streamParameters(call)),
          authorization: { type: 'vonage' },
        },
      ],
    },
  ];
  return JSON.stringify(ncco);
}

/** The answer that connects `call` to the media gateway at `gatewayBaseUrl`. */
export function connectAnswer(provider: InboundProvider, gatewayBaseUrl: string, call: InboundCall): InboundAnswer {
  if (provider === 'vonage') return { contentType: 'application/json', body: connectNcco(gatewayBaseUrl, call) };
  return { contentType: 'text/xml', body: connectStreamXml(provider, gatewayBaseUrl, call) };
}

/** Says {@link APOLOGY_TEXT} and hangs up. Gives no reason: the caller is not the one to debug it. */
export function apologyAnswer(provider: InboundProvider): InboundAnswer {
  if (provider === 'vonage') return { contentType: 'application/json', body: JSON.stringify([{ action: 'talk', text: APOLOGY_TEXT }]) };
  return { contentType: 'text/xml', body: `${XML_PROLOG}<Response><Say>${xmlEscape(APOLOGY_TEXT)}</Say><Hangup/></Response>` };
}
