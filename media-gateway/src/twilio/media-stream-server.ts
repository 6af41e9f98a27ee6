/**
 * Twilio Media Streams WebSocket endpoint, on the gateway's own HTTP server.
 * Handshake and signature rules: reference/telephony-twilio.md §2 and §3.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Logger } from 'pino';
import { validateTwilioSignature } from '@vap/shared';
import type { AdmissionRefusal } from '../admission.js';
import { attachMediaStreamEndpoint } from '../media-stream-endpoint.js';
import type { MediaStreamEndpoint } from '../media-stream-endpoint.js';
import type { UpgradeRouter } from '../upgrade-router.js';
import type { OutboundPacer } from './pacer.js';
import { isSupportedMediaFormat, parseTwilioMessage } from './serializer.js';
import { TwilioLeg } from './twilio-leg.js';
import type { TwilioInbound } from './wire.js';

/** Path of the stream URL the control plane puts in `<Stream url>`; its query string never arrives (§1). */
export const TWILIO_MEDIA_STREAM_PATH = '/api/v1/webhooks/twilio/media-stream';

export interface TwilioMediaStreamsOptions {
  /** Public base URL of the gateway as Twilio sees it (`wss://gw.example.com`), no trailing slash. */
  publicUrl: string;
  /** Twilio Auth Token. Undefined: upgrades are not signature-checked (sandbox). */
  authToken: string | undefined;
  logger: Logger;
  /** The gateway's one outbound pacer. */
  pacer: OutboundPacer;
  /** A stream passed its handshake (`connected`, `start`, μ-law 8 kHz mono). The callee owns the leg from here. */
  onCall: (leg: TwilioLeg) => void;
  /** Time allowed between the upgrade and `start`, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
  /** Asked before each upgrade: a refusal answers 503 (`admission.ts`). Absent: every call is taken. */
  admit?: () => AdmissionRefusal | null;
}

/** The attached endpoint. */
export type TwilioMediaStreams = MediaStreamEndpoint;

/**
 * Serve Twilio media streams on {@link TWILIO_MEDIA_STREAM_PATH} of `target`: the gateway's
 * {@link UpgradeRouter}, or a bare server (a router of its own is made, which answers any
 * other path 404). With an auth token, an upgrade that carries
 * `X-Twilio-Signature` must be signed over the public URL with the configured ws/wss
 * scheme, with or without the query string the request carried (§2: which one Twilio
 * signs is unconfirmed), or it is refused with 403. Handshake, timeouts and shutdown are
 * the carrier-neutral {@link attachMediaStreamEndpoint}'s.
 */
export function attachTwilioMediaStreams(target: Server | UpgradeRouter, opts: TwilioMediaStreamsOptions): TwilioMediaStreams {
  const log = opts.logger.child({ provider: 'twilio' });

  function signatureOk(authToken: string, req: IncomingMessage): boolean {
    const signature = req.headers['x-twilio-signature'];
    if (typeof signature !== 'string' || signature === '') {
      log.warn('media stream upgrade without X-Twilio-Signature accepted');
      return true;
    }
    const query = (req.url ?? '').indexOf('?');
    const candidates = [opts.publicUrl + TWILIO_MEDIA_STREAM_PATH];
    if (query >= 0) candidates.push(opts.publicUrl + TWILIO_MEDIA_STREAM_PATH + (req.url ?? '').slice(query));
    return candidates.some((url) => validateTwilioSignature({ authToken, url, signature }));
  }

  return attachMediaStreamEndpoint<TwilioLeg, TwilioInbound>(target, {
    path: TWILIO_MEDIA_STREAM_PATH,
    log,
    authorize: opts.authToken ? signatureOk.bind(null, opts.authToken) : 'no Twilio auth token configured: media stream upgrades are accepted without a signature check (sandbox)',
    handshakeTimeoutMs: opts.handshakeTimeoutMs,
    ...(opts.admit ? { admit: opts.admit } : {}),
    onCall: opts.onCall,
    parse: parseTwilioMessage,
    startEvent: 'start',
    handshake: (msg, ws) => {
      if (msg.event !== 'start') return null;
      if (!isSupportedMediaFormat(msg.start.mediaFormat)) return { unsupported: { mediaFormat: msg.start.mediaFormat, callSid: msg.start.callSid } };
      return { leg: new TwilioLeg({ socket: ws, start: msg, pacer: opts.pacer, logger: opts.logger }) };
    },
  });
}
