/**
 * A carrier's media-stream WebSocket endpoint on one path of the gateway's
 * {@link UpgradeRouter}: upgrade (after the carrier's own check), read the handshake until
 * the carrier's `start`, hand the leg to `onCall`, and hang every leg up on close. The
 * carrier (Twilio, Telnyx, Vonage) supplies the upgrade check and turns its `start` into a leg.
 * Every refusal and lost handshake is counted in `svc.telephony.media_stream_closed`.
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { WebSocketServer } from 'ws';
import type { RawData, WebSocket } from 'ws';
import { REFUSAL_WORDS, REFUSED_RETRY_AFTER_S, refusalProblem } from './admission.js';
import type { AdmissionRefusal } from './admission.js';
import { mediaStreamClosed } from './paced-call-leg.js';
import type { PacedCallLeg } from './paced-call-leg.js';
import { refuseUpgrade, UpgradeRouter } from './upgrade-router.js';

/** Largest message accepted: a media message is ~300 bytes; `start` with many parameters a few kB. */
const MAX_MESSAGE_BYTES = 64 * 1024;

/**
 * What a text frame received before the leg exists amounts to: the leg; `unsupported`, a
 * start in a media format the gateway cannot take (closed 1003, counted as
 * `unsupported-format`); `refused`, a start that lacks what the carrier always sends (closed
 * 1008 with `reason`, counted as `bad-handshake`); or null, nothing yet. The fields are logged.
 */
export type HandshakeStep<L> = { leg: L } | { unsupported: Record<string, unknown> } | { refused: Record<string, unknown>; reason: string } | null;

export interface MediaStreamEndpointOptions<L extends PacedCallLeg, M> {
  /** The path this endpoint claims (the query string is ignored by the router). */
  path: string;
  /** Bound to the carrier (`provider`). */
  log: Logger;
  /**
   * False, or why, refuses the upgrade with 403 (counted as `bad-signature`). A string: the
   * carrier's credentials are not configured (sandbox), every upgrade is accepted, and the
   * string is logged as a warning once, at the first upgrade. Absent: the carrier signs
   * nothing (Telnyx), every upgrade is accepted.
   */
  authorize?: ((req: IncomingMessage) => boolean | { refused: string }) | string;
  /** The carrier's reader of a text frame: the message, or null after `onReject` said why. */
  parse: (text: string, onReject: (reason: string, detail: string) => void) => M | null;
  /**
   * The `event` of the carrier's start message. A frame with this event that `parse` refuses is
   * refused at once (1008 `invalid start`, counted as `bad-handshake`, the field at fault in the
   * warning) rather than left silent until the handshake timeout and logged as if no start had
   * come; any other frame `parse` refuses is logged at debug and ignored.
   */
  startEvent: string;
  /**
   * A message read before the leg exists: its start → the new leg; a start the gateway cannot
   * take → `unsupported` or `refused` (see {@link HandshakeStep}); anything else → null
   * (ignored, the handshake goes on).
   */
  handshake: (message: M, ws: WebSocket, req: IncomingMessage) => HandshakeStep<L>;
  /** A stream passed its handshake. The callee owns the leg from here. */
  onCall: (leg: L) => void;
  /** Time allowed between the upgrade and `start`, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
  /**
   * Asked before each upgrade (after the carrier's check): a refusal answers 503 with
   * `Retry-After`, counted with its reason (`admission.ts`). Absent: every call is taken.
   */
  admit?: () => AdmissionRefusal | null;
}

/** The `event` of a JSON text frame, if it has a string one (only read for frames already rejected). */
function eventOf(text: string): string | undefined {
  try {
    const value: unknown = JSON.parse(text);
    const event = typeof value === 'object' && value !== null ? (value as { event?: unknown }).event : undefined;
    return typeof event === 'string' ? event : undefined;
  } catch {
    return undefined;
  }
}

/** The attached endpoint. */
export interface MediaStreamEndpoint {
  /** Legs handed to `onCall` that have not ended. */
  readonly activeLegs: number;
  /** Streams upgraded and still waiting for their `start`. */
  readonly pendingLegs: number;
  /** Stop accepting upgrades, close handshaking sockets and hang up every leg (code 1001). */
  close(): Promise<void>;
}

/**
 * Serve a carrier's media streams on `opts.path` of `target`: the gateway's
 * {@link UpgradeRouter}, or a bare server (a router of its own is made, which answers any
 * other path 404).
 */
export function attachMediaStreamEndpoint<L extends PacedCallLeg, M>(target: Server | UpgradeRouter, opts: MediaStreamEndpointOptions<L, M>): MediaStreamEndpoint {
  const ownRouter = target instanceof UpgradeRouter ? undefined : new UpgradeRouter(target);
  const router = ownRouter ?? (target as UpgradeRouter);
  const log = opts.log;
  const handshakeTimeoutMs = opts.handshakeTimeoutMs ?? 10_000;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const legs = new Set<L>();
  const handshaking = new Set<WebSocket>();
  let closing = false;
  let uncheckedLogged = false;

  function onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', (err) => log.debug({ err }, 'upgrade socket error'));
    if (closing) return refuseUpgrade(socket, 503);
    let verdict: boolean | { refused: string } = true;
    if (typeof opts.authorize === 'function') verdict = opts.authorize(req);
    else if (opts.authorize !== undefined && !uncheckedLogged) {
      log.warn(opts.authorize);
      uncheckedLogged = true;
    }
    if (verdict !== true) {
      mediaStreamClosed.increment('bad-signature');
      log.warn(verdict === false ? {} : { reason: verdict.refused }, 'media stream upgrade refused: bad signature or credentials');
      return refuseUpgrade(socket, 403);
    }
    const refusal = opts.admit?.();
    if (refusal) {
      mediaStreamClosed.increment(refusal.reason);
      log.warn(refusal, `media stream refused: gateway ${REFUSAL_WORDS[refusal.reason]}`);
      return refuseUpgrade(socket, 503, { 'Retry-After': String(REFUSED_RETRY_AFTER_S) }, refusalProblem(refusal));
    }
    wss.handleUpgrade(req, socket, head, (ws) => handshake(ws, req));
  }

  /** One text frame before the leg exists, as a {@link HandshakeStep} (see `parse` and `startEvent`). */
  function readHandshakeStep(text: string, ws: WebSocket, req: IncomingMessage): HandshakeStep<L> {
    let rejected: string | undefined;
    const message = opts.parse(text, (reason, detail) => {
      rejected = detail;
      log.debug({ reason, detail }, 'message before start ignored');
    });
    if (message !== null) return opts.handshake(message, ws, req);
    if (rejected !== undefined && eventOf(text) === opts.startEvent) return { refused: { detail: rejected }, reason: 'invalid start' };
    return null;
  }

  /** Read messages until `start`; anything else before it is ignored. */
  function handshake(ws: WebSocket, req: IncomingMessage): void {
    handshaking.add(ws);
    const timer = setTimeout(() => {
      cleanup();
      mediaStreamClosed.increment('handshake-timeout');
      log.warn({ timeoutMs: handshakeTimeoutMs }, 'media stream sent no start in time');
      ws.close(1008, 'no start');
    }, handshakeTimeoutMs);
    const onMessage = (data: RawData, isBinary: boolean): void => {
      if (isBinary) return;
      const step = readHandshakeStep(data.toString(), ws, req);
      if (!step) return;
      cleanup();
      if ('unsupported' in step) {
        mediaStreamClosed.increment('unsupported-format');
        log.warn(step.unsupported, 'media stream format is not supported');
        ws.close(1003, 'unsupported media format');
        return;
      }
      if ('refused' in step) {
        mediaStreamClosed.increment('bad-handshake');
        log.warn(step.refused, `media stream refused: ${step.reason}`);
        ws.close(1008, step.reason);
        return;
      }
      const leg = step.leg;
      legs.add(leg);
      leg.onEnd(() => legs.delete(leg));
      log.info({ callSid: leg.callSid }, 'media stream started');
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

  const release = router.add(opts.path, onUpgrade);

  return {
    get activeLegs() {
      return legs.size;
    },
    get pendingLegs() {
      return handshaking.size;
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
