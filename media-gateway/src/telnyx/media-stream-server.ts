/**
 * Telnyx media-streaming WebSocket endpoint, on the gateway's own HTTP server
 * (reference/telephony-telnyx.md §2). Telnyx is the client: `connected`, then `start`, then
 * media until `stop`.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { AdmissionRefusal } from '../admission.js';
import { attachMediaStreamEndpoint } from '../media-stream-endpoint.js';
import type { MediaStreamEndpoint } from '../media-stream-endpoint.js';
import type { OutboundPacer } from '../twilio/pacer.js';
import type { UpgradeRouter } from '../upgrade-router.js';
import { isSupportedTelnyxFormat, parseTelnyxMessage } from './serializer.js';
import { TelnyxLeg } from './telnyx-leg.js';
import type { TelnyxInbound } from './wire.js';

/** Path of the stream URL the control plane puts in the TeXML `<Stream url>` (MEDIA_STREAM_PATHS.telnyx). */
export const TELNYX_MEDIA_STREAM_PATH = '/api/v1/webhooks/telnyx/media-stream';

export interface TelnyxMediaStreamsOptions {
  logger: Logger;
  /** The gateway's one outbound pacer. */
  pacer: OutboundPacer;
  /** A stream passed its handshake (`start`, PCMU 8 kHz mono). The callee owns the leg from here. */
  onCall: (leg: TelnyxLeg) => void;
  /** Time allowed between the upgrade and `start`, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
  /** Asked before each upgrade: a refusal answers 503 (`admission.ts`). Absent: every call is taken. */
  admit?: () => AdmissionRefusal | null;
}

/**
 * Serve Telnyx media streams on {@link TELNYX_MEDIA_STREAM_PATH} of `target`. TeXML streams
 * carry no upgrade signature (only Call Control's optional `stream_auth_token` would, §2), so
 * upgrades are not authenticated here: the agent, tenant and `streamToken` come from the
 * `<Parameter>`s the signed voice webhook's answer put in the stream, and the session asks the
 * control plane, which checks the token, before anything is spoken. A `start` in another format than PCMU 8 kHz mono is closed with 1003.
 */
export function attachTelnyxMediaStreams(target: Server | UpgradeRouter, opts: TelnyxMediaStreamsOptions): MediaStreamEndpoint {
  const log = opts.logger.child({ provider: 'telnyx' });
  return attachMediaStreamEndpoint<TelnyxLeg, TelnyxInbound>(target, {
    path: TELNYX_MEDIA_STREAM_PATH,
    log,
    handshakeTimeoutMs: opts.handshakeTimeoutMs,
    ...(opts.admit ? { admit: opts.admit } : {}),
    onCall: opts.onCall,
    parse: parseTelnyxMessage,
    startEvent: 'start',
    handshake: (msg, ws, req) => {
      if (msg.event !== 'start') return null;
      if (!isSupportedTelnyxFormat(msg.start.media_format)) return { unsupported: { mediaFormat: msg.start.media_format, callControlId: msg.start.call_control_id } };
      const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
      return { leg: new TelnyxLeg({ socket: ws, start: msg, query, pacer: opts.pacer, logger: opts.logger }) };
    },
  });
}
