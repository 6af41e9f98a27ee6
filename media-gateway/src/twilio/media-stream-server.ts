/**
 * Twilio Media Streams WebSocket endpoint, on the gateway's own HTTP server.
 * Handshake and signature rules: reference/telephony-twilio.md §2 and §3.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';
import { validateTwilioSignature } from '@vap/shared';
import { refuseUpgrade as refuse, UpgradeRouter } from '../upgrade-router.js';
import type { OutboundPacer } from './pacer.js';
import { isSupportedMediaFormat, parseTwilioMessage } from './serializer.js';
import { mediaStreamClosed, TwilioLeg } from './twilio-leg.js';

/** Path of the stream URL the control plane puts in `<Stream url>`; its query string never arrives (§1). */
export const TWILIO_MEDIA_STREAM_PATH = '/api/v1/webhooks/twilio/media-stream';

/** Largest message we accept: a media message is ~300 bytes; `start` with many parameters a few kB. */
const MAX_MESSAGE_BYTES = 64 * 1024;

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
}

/** The attached endpoint. */
export interface TwilioMediaStreams {
  /** Legs handed to `onCall` that have not ended. */
  readonly activeLegs: number;
  /** Stop accepting upgrades, close handshaking sockets and hang up every leg (code 1001). */
  close(): Promise<void>;
}

/**
 * Serve Twilio media streams on {@link TWILIO_MEDIA_STREAM_PATH} of `target`: the gateway's
 * {@link UpgradeRouter}, or a bare server (a router of its own is made, which answers any
 * other path 404). With an auth token, an upgrade that carries
 * `X-Twilio-Signature` must be signed over the public URL with the configured ws/wss
 * scheme, with or without the query string the request carried (§2: which one Twilio
 * signs is unconfirmed), or it is refused with 403.
 */
export function attachTwilioMediaStreams(target: Server | UpgradeRouter, opts: TwilioMediaStreamsOptions): TwilioMediaStreams {
  const ownRouter = target instanceof UpgradeRouter ? undefined : new UpgradeRouter(target);
  const router = ownRouter ?? (target as UpgradeRouter);
  const log = opts.logger.child({ provider: 'twilio' });
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 10_000;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const legs = new Set<TwilioLeg>();
  const handshaking = new Set<WebSocket>();
  let closing = false;
  let sandboxLogged = false;

  function signatureOk(req: IncomingMessage): boolean {
    if (!opts.authToken) {
      if (!sandboxLogged) log.warn('no Twilio auth token configured: media stream upgrades are accepted without a signature check (sandbox)');
      sandboxLogged = true;
      return true;
    }
    const signature = req.headers['x-twilio-signature'];
    if (typeof signature !== 'string' || signature === '') {
      log.warn('media stream upgrade without X-Twilio-Signature accepted');
      return true;
    }
    const query = (req.url ?? '').indexOf('?');
    const candidates = [opts.publicUrl + TWILIO_MEDIA_STREAM_PATH];
    if (query >= 0) candidates.push(opts.publicUrl + TWILIO_MEDIA_STREAM_PATH + (req.url ?? '').slice(query));
    return candidates.some((url) => validateTwilioSignature({ authToken: opts.authToken!, url, signature }));
  }

  function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (err) => log.debug({ err }, 'upgrade socket error'));
    if (closing) return refuse(socket, 503);
    if (!signatureOk(req)) {
      mediaStreamClosed.increment('bad-signature');
      log.warn('media stream upgrade with a bad X-Twilio-Signature refused');
      return refuse(socket, 403);
    }
    wss.handleUpgrade(req, socket, head, (ws) => handshake(ws));
  }

  /** Read `connected` then `start`; anything else before `start` is ignored. */
  function handshake(ws: WebSocket): void {
    handshaking.add(ws);
    const timer = setTimeout(() => {
      cleanup();
      mediaStreamClosed.increment('handshake-timeout');
      log.warn({ timeoutMs: handshakeTimeoutMs }, 'media stream sent no start in time');
      ws.close(1008, 'no start');
    }, handshakeTimeoutMs);
    const onMessage = (data: RawData, isBinary: boolean): void => {
      if (isBinary) return;
      const msg = parseTwilioMessage(data.toString(), (reason, detail) => log.debug({ reason, detail }, 'message before start ignored'));
      if (!msg || msg.event !== 'start') return;
      cleanup();
      if (!isSupportedMediaFormat(msg.start.mediaFormat)) {
        mediaStreamClosed.increment('unsupported-format');
        log.warn({ mediaFormat: msg.start.mediaFormat, callSid: msg.start.callSid }, 'media stream format is not μ-law 8 kHz mono');
        ws.close(1003, 'unsupported media format');
        return;
      }
      const leg = new TwilioLeg({ socket: ws, start: msg, pacer: opts.pacer, logger: opts.logger });
      legs.add(leg);
      leg.onEnd(() => legs.delete(leg));
      log.info({ callSid: leg.callSid, streamSid: leg.streamSid }, 'media stream started');
      try {
        opts.onCall(leg);
      } catch (err) {
        log.error({ err, callSid: leg.callSid }, 'call handler threw; hanging up');
        void leg.hangup();
      }
    };
    const onClose = (): void => {
      cleanup();
      mediaStreamClosed.increment('handshake-lost');
      log.warn('media stream closed before start');
    };
    function cleanup(): void {
      clearTimeout(timer);
      handshaking.delete(ws);
      ws.off('message', onMessage);
      ws.off('close', onClose);
    }
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.on('error', (err) => log.debug({ err }, 'media stream socket error'));
  }

  const release = router.add(TWILIO_MEDIA_STREAM_PATH, onUpgrade);

  return {
    get activeLegs() {
      return legs.size;
    },
    async close() {
      closing = true;
      release();
      ownRouter?.close();
      for (const ws of handshaking) ws.terminate();
      await Promise.all([...legs].map((leg) => leg.shutdown()));
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
