/**
 * One Vonage WebSocket call (NCCO `connect` → `websocket`) as a {@link CallLeg}.
 * Wire protocol: reference/telephony-vonage.md §3. Pacing, pause/resume, listeners and the
 * close handshake are the carrier-neutral {@link PacedCallLeg}'s; this file converts the
 * audio and reads Vonage's messages.
 *
 * Vonage's socket carries raw audio and no playback acknowledgements we rely on, so the leg
 * is built without carrier marks ({@link LegWire.marks} null):
 * - a **mark** is reported once the audio before it has played at real time, by the
 *   {@link LocalMarkPlayout} model;
 * - **clear** drops what is queued here and the marks not yet played (never reported).
 *   Audio already sent is not recalled: the shared pacer keeps at most ~3 frames (60 ms)
 *   ahead of real time, so that is what the caller still hears after a barge-in. Vonage
 *   documents a `{"action":"clear"}` command, but its shape is unconfirmed (§3.2), so it is
 *   not sent and {@link onCleared} never fires;
 * - **pause** holds the queue; on **resume** the frames Vonage already had are not sent twice.
 */
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { CallLeg } from '../call-leg.js';
import type { LegWire } from '../paced-call-leg.js';
import { PacedCallLeg } from '../paced-call-leg.js';
import type { LegEndReason } from '../paced-call-leg.js';
import type { OutboundPacer } from '../twilio/pacer.js';
import { L16ToMulaw, MulawToL16 } from './l16-converter.js';
import { parseVonageMessage } from './wire.js';
import type { VonageConnected } from './wire.js';

/** What the Vonage endpoint hands a new leg. */
export interface VonageLegOptions {
  /** The accepted socket, after `websocket:connected` was read from it. */
  socket: WebSocket;
  connected: VonageConnected;
  pacer: OutboundPacer;
  logger: Logger;
}

/**
 * A Vonage call after `websocket:connected`: caller audio (L16 16 kHz → μ-law 8 kHz) and
 * DTMF in, paced agent audio (μ-law 8 kHz → 640-byte binary L16 16 kHz frames) out.
 * `parameters` are the NCCO headers; `callSid` is their `callSid` (Vonage's call `uuid`,
 * as the control plane put it there).
 */
export class VonageLeg extends PacedCallLeg implements CallLeg {
  readonly provider = 'vonage' as const;
  private readonly fromVonage = new L16ToMulaw();

  constructor(opts: VonageLegOptions) {
    const parameters = { ...opts.connected.headers };
    const callSid = parameters['callSid'] ?? '';
    const toVonage = new MulawToL16();
    const wire: LegWire = { media: (bytes, start, end) => toVonage.convert(bytes.subarray(start, end)), marks: null, onClear: () => toVonage.reset() };
    super({ socket: opts.socket, pacer: opts.pacer, log: opts.logger.child({ provider: 'vonage', callSid }), callSid, parameters, wire });
  }

  /** Vonage closes the socket when the caller hangs up (§3.3) and sends no `stop`; 1006 is a lost connection. */
  protected override closedBy(code: number): LegEndReason {
    return code === 1006 ? 'socket-lost' : 'hangup';
  }

  protected onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (bytes.byteLength % 2 !== 0) return this.reject('invalid-shape', `odd audio frame of ${bytes.byteLength} bytes`);
      if (this.ended || bytes.byteLength === 0) return;
      const mulaw = this.fromVonage.convert(bytes);
      if (mulaw.byteLength > 0) this.deliverAudio(mulaw);
      return;
    }
    const msg = parseVonageMessage(data.toString(), (reason, detail) => this.reject(reason, detail));
    if (!msg) return;
    if (msg.event === 'websocket:dtmf') this.deliverDtmf(msg.digit);
    else if (msg.event === 'websocket:connected') this.log.debug('repeated websocket:connected ignored');
    else this.log.debug({ event: msg.name }, 'Vonage event ignored');
  }
}
