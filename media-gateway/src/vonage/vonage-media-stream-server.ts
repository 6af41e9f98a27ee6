/**
 * Vonage WebSocket endpoint (NCCO `connect` → `websocket`), on the gateway's own HTTP
 * server. Handshake: reference/telephony-vonage.md §3.1.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';
import { verifyVonageWebhook, vonageBearerToken } from '@vap/shared';
import type { OutboundPacer } from '../twilio/pacer.js';
import { mediaStreamClosed } from '../paced-call-leg.js';
import { refuseUpgrade as refuse, UpgradeRouter } from '../upgrade-router.js';
import { VonageLeg } from './vonage-leg.js';
import { isL16At16k, parseVonageMessage } from './wire.js';

/** Path of the WebSocket URI the control plane puts in the NCCO (`MEDIA_STREAM_PATHS.vonage`). */
export const VONAGE_MEDIA_STREAM_PATH = '/api/v1/webhooks/vonage/media-stream';

/** Largest message accepted: an audio frame is 640 bytes, `websocket:connected` with 512 bytes of headers well under 4 kB. */
const MAX_MESSAGE_BYTES = 64 * 1024;

export interface VonageMediaStreamsOptions {
  logger: Logger;
  /**
   * The signature secret (VONAGE_SIGNATURE_SECRET). Set: every upgrade must carry the signed
   * JWT Vonage sends for an endpoint with `authorization: {type: 'vonage'}` (403 otherwise).
   * Undefined: upgrades are not checked (sandbox).
   */
  signatureSecret?: string | undefined;
  /** The gateway's one outbound pacer. */
  pacer: OutboundPacer;
  /** A call passed its handshake (`websocket:connected`, L16 16 kHz, a `callSid` header). The callee owns the leg from here. */
  onCall: (leg: VonageLeg) => void;
  /** Time allowed between the upgrade and `websocket:connected`, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
}

/** The attached endpoint. */
export interface VonageMediaStreams {
  /** Legs handed to `onCall` that have not ended. */
  readonly activeLegs: number;
  /** Stop accepting upgrades, close handshaking sockets and hang up every leg (code 1001). */
  close(): Promise<void>;
}

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
  const ownRouter = target instanceof UpgradeRouter ? undefined : new UpgradeRouter(target);
  const router = ownRouter ?? (target as UpgradeRouter);
  const log = opts.logger.child({ provider: 'vonage' });
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 10_000;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const legs = new Set<VonageLeg>();
  const handshaking = new Set<WebSocket>();
  let closing = false;
  let sandboxLogged = false;

  /** Null when the upgrade may proceed, else why it is refused. */
  function authFailure(req: IncomingMessage): string | null {
    if (!opts.signatureSecret) {
      if (!sandboxLogged) log.warn('no Vonage signature secret configured: WebSocket upgrades are accepted without a check (sandbox)');
      sandboxLogged = true;
      return null;
    }
    const check = verifyVonageWebhook({ secret: opts.signatureSecret, token: vonageBearerToken(req.headers.authorization), rawBody: '', allowMissingPayloadHash: true });
    return check.ok ? null : check.reason;
  }

  function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (err) => log.debug({ err }, 'upgrade socket error'));
    if (closing) return refuse(socket, 503);
    const failure = authFailure(req);
    if (failure) {
      mediaStreamClosed.increment('bad-signature');
      log.warn({ reason: failure }, 'Vonage WebSocket upgrade without a valid signed JWT refused');
      return refuse(socket, 403);
    }
    wss.handleUpgrade(req, socket, head, (ws) => handshake(ws));
  }

  function handshake(ws: WebSocket): void {
    handshaking.add(ws);
    const timer = setTimeout(() => {
      cleanup();
      mediaStreamClosed.increment('handshake-timeout');
      log.warn({ timeoutMs: handshakeTimeoutMs }, 'Vonage socket sent no websocket:connected in time');
      ws.close(1008, 'no websocket:connected');
    }, handshakeTimeoutMs);
    const onMessage = (data: RawData, isBinary: boolean): void => {
      if (isBinary) return;
      const msg = parseVonageMessage(data.toString(), (reason, detail) => log.debug({ reason, detail }, 'message before websocket:connected ignored'));
      if (!msg || msg.event !== 'websocket:connected') return;
      cleanup();
      if (!isL16At16k(msg.contentType)) {
        mediaStreamClosed.increment('unsupported-format');
        log.warn({ contentType: msg.contentType, callSid: msg.headers['callSid'] }, 'Vonage socket format is not audio/l16;rate=16000');
        ws.close(1003, 'unsupported content-type');
        return;
      }
      if (!msg.headers['callSid']) {
        // Counted with the format refusals: the handshake lacks what the NCCO always sends.
        mediaStreamClosed.increment('unsupported-format');
        log.warn({ headers: Object.keys(msg.headers) }, 'Vonage websocket:connected without a callSid header');
        ws.close(1008, 'missing callSid header');
        return;
      }
      const leg = new VonageLeg({ socket: ws, connected: msg, pacer: opts.pacer, logger: opts.logger });
      legs.add(leg);
      leg.onEnd(() => legs.delete(leg));
      log.info({ callSid: leg.callSid }, 'Vonage call stream started');
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
      log.warn('Vonage socket closed before websocket:connected');
    };
    function cleanup(): void {
      clearTimeout(timer);
      handshaking.delete(ws);
      ws.off('message', onMessage);
      ws.off('close', onClose);
    }
    ws.on('message', onMessage);
    ws.on('close', onClose);
    ws.on('error', (err) => log.debug({ err }, 'Vonage socket error'));
  }

  const release = router.add(VONAGE_MEDIA_STREAM_PATH, onUpgrade);

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
