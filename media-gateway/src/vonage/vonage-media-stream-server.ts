/**
 * Vonage WebSocket endpoint (NCCO `connect` → `websocket`), on the gateway's own HTTP
 * server. Handshake: reference/telephony-vonage.md §3.1. Upgrade, handshake timeout and
 * shutdown are the carrier-neutral {@link attachMediaStreamEndpoint}'s.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Logger } from 'pino';
import { verifyVonageWebhook, vonageBearerToken } from '@vap/shared';
import type { AdmissionRefusal } from '../admission.js';
import { attachMediaStreamEndpoint } from '../media-stream-endpoint.js';
import type { MediaStreamEndpoint } from '../media-stream-endpoint.js';
import type { OutboundPacer } from '../twilio/pacer.js';
import type { UpgradeRouter } from '../upgrade-router.js';
import { VonageLeg } from './vonage-leg.js';
import { isL16At16k, parseVonageMessage } from './wire.js';
import type { VonageInbound } from './wire.js';

/** Path of the WebSocket URI the control plane puts in the NCCO (`MEDIA_STREAM_PATHS.vonage`). */
export const VONAGE_MEDIA_STREAM_PATH = '/api/v1/webhooks/vonage/media-stream';

export interface VonageMediaStreamsOptions {
  logger: Logger;
  /**
   * The signature secret (VONAGE_SIGNATURE_SECRET). Set: every upgrade must carry the signed
   * JWT Vonage sends for an endpoint with `authorization: {type: 'vonage'}` (403 otherwise).
   * Undefined: upgrades are not checked (sandbox).
   */
  signatureSecret: string | undefined;
  /** The gateway's one outbound pacer. */
  pacer: OutboundPacer;
  /** A call passed its handshake (`websocket:connected`, L16 16 kHz, a `callSid` header). The callee owns the leg from here. */
  onCall: (leg: VonageLeg) => void;
  /** Time allowed between the upgrade and `websocket:connected`, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
  /** Asked before each upgrade: a refusal answers 503 (`admission.ts`). Absent: every call is taken. */
  admit?: () => AdmissionRefusal | null;
}

/** The attached endpoint. */
export type VonageMediaStreams = MediaStreamEndpoint;

/**
 * Serve Vonage WebSocket calls on {@link VONAGE_MEDIA_STREAM_PATH} of `target`: the
 * gateway's {@link UpgradeRouter}, or a bare server (a router of its own is made). The
 * first text frame must be `websocket:connected` with `audio/l16;rate=16000` (what our
 * NCCO asks for) and the NCCO headers, `callSid` among them; anything else closes the
 * socket (1003 for another format, 1008 without a `callSid`). Binary frames before it are
 * ignored. With a signature secret, the upgrade's `Authorization: Bearer <JWT>` (our NCCO asks
 * for `authorization: {type: 'vonage'}`, §2) must be HS256-signed with it and fresh; there is
 * no body, so its `payload_hash` may be absent or the hash of the empty string (unconfirmed).
 */
export function attachVonageMediaStreams(target: Server | UpgradeRouter, opts: VonageMediaStreamsOptions): VonageMediaStreams {
  const log = opts.logger.child({ provider: 'vonage' });

  function signedJwt(secret: string, req: IncomingMessage): true | { refused: string } {
    const check = verifyVonageWebhook({ secret, token: vonageBearerToken(req.headers.authorization), rawBody: '', allowMissingPayloadHash: true });
    return check.ok ? true : { refused: check.reason };
  }

  return attachMediaStreamEndpoint<VonageLeg, VonageInbound>(target, {
    path: VONAGE_MEDIA_STREAM_PATH,
    log,
    authorize: opts.signatureSecret ? signedJwt.bind(null, opts.signatureSecret) : 'no Vonage signature secret configured: WebSocket upgrades are accepted without a check (sandbox)',
    handshakeTimeoutMs: opts.handshakeTimeoutMs,
    ...(opts.admit ? { admit: opts.admit } : {}),
    onCall: opts.onCall,
    parse: parseVonageMessage,
    startEvent: 'websocket:connected',
    handshake: (msg, ws) => {
      if (msg.event !== 'websocket:connected') return null;
      if (!isL16At16k(msg.contentType)) return { unsupported: { contentType: msg.contentType, callSid: msg.headers['callSid'] } };
      // Refused (1008, counted as bad-handshake): the handshake lacks what the NCCO always sends.
      if (!msg.headers['callSid']) return { refused: { headers: Object.keys(msg.headers) }, reason: 'missing callSid header' };
      return { leg: new VonageLeg({ socket: ws, connected: msg, pacer: opts.pacer, logger: opts.logger }) };
    },
  });
}
