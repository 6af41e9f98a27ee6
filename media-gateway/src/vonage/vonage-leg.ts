/**
 * One Vonage WebSocket call (NCCO `connect` → `websocket`) as a {@link CallLeg}.
 * Wire protocol: reference/telephony-vonage.md §3.
 *
 * Vonage's socket carries raw audio and no playback acknowledgements we rely on, so marks,
 * clear and pause are implemented here, on our side of the socket:
 * - A **mark** is played once the audio sent before it has played at real time: each frame
 *   handed to Vonage plays from max(sent, end of the previous frame) for 20 ms, and the mark
 *   fires when that playout model says the last frame before it has ended.
 * - **clear** drops what is queued here (and the marks not yet played, which are then never
 *   reported). Audio already sent is not recalled: the shared pacer keeps at most ~3 frames
 *   (60 ms) ahead of real time at the carrier, so that is what the caller still hears after
 *   a barge-in. Vonage documents a `{"action":"clear"}` command, but its shape is
 *   unconfirmed (§3.2), so it is not sent; {@link onCleared} is therefore never reported
 *   (nothing we sent was dropped at the carrier).
 * - **pause** holds the queue (the pacer's own pause) and **resume** sends it on. The pacer
 *   rewinds what it believes the carrier has not played yet, because after a Twilio `clear`
 *   the carrier has dropped it; Vonage has not, so those re-sent frames (recognised as the
 *   very frames sent before) are skipped instead of being played twice.
 */
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { RawData } from 'ws';
import type { CallLeg } from '../call-leg.js';
import type { OutboundPacer, PacedStream, PacedStreamStats } from '../twilio/pacer.js';
import { mediaStreamClosed } from '../paced-call-leg.js';
import type { LegEndReason, MediaStreamCloseReason } from '../paced-call-leg.js';
import { L16ToMulaw, MulawToL16 } from './l16-converter.js';
import { parseVonageMessage } from './wire.js';
import type { VonageConnected, VonageRejectReason } from './wire.js';

const FRAME_MS = 20;
/** How long {@link VonageLeg.hangup} waits for the closing handshake before cutting the TCP connection. */
const CLOSE_HANDSHAKE_TIMEOUT_MS = 2000;
/** Bad messages logged at `warn` per call; the rest go to `debug`. */
const WARN_BUDGET = 5;
/** Frames remembered for the pause rewind; the pacer rewinds at most its burst (3) from a history of 32. */
const RECENT_FRAMES = 32;

/** The identity of a frame as the pacer hands it out: its re-sent frames are views at the same place. */
interface FrameRef {
  buffer: ArrayBufferLike;
  byteOffset: number;
}

function sameFrame(a: FrameRef, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.byteOffset === b.byteOffset;
}

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
 * DTMF in, paced agent audio (μ-law 8 kHz → 640-byte L16 16 kHz frames) out. Listeners
 * run synchronously on the socket's events; a throwing listener is logged and does not
 * affect the others. `parameters` are the NCCO headers; `callSid` is their `callSid`
 * (Vonage's call `uuid`, as the control plane put it there).
 */
export class VonageLeg implements CallLeg {
  readonly provider = 'vonage' as const;
  readonly callSid: string;
  readonly parameters: Readonly<Record<string, string>>;

  private readonly socket: WebSocket;
  private readonly log: Logger;
  private readonly stream: PacedStream;
  private readonly toVonage = new MulawToL16();
  private readonly fromVonage = new L16ToMulaw();
  private readonly audioListeners: ((mulaw: Uint8Array) => void)[] = [];
  private readonly dtmfListeners: ((digit: string) => void)[] = [];
  private readonly markListeners: ((name: string) => void)[] = [];
  private readonly sentListeners: ((frame: Uint8Array, atMs: number) => void)[] = [];
  private readonly clearedListeners: ((atMs: number) => void)[] = [];
  private readonly endListeners: ((reason: LegEndReason) => void)[] = [];
  /** When the caller finishes hearing the audio sent so far (performance.now() ms). */
  private playoutEndsAt = Number.NEGATIVE_INFINITY;
  /** Marks whose audio is still playing, in order, with the timer that reports them. */
  private readonly pendingMarks: { name: string; timer: NodeJS.Timeout }[] = [];
  private readonly recent: FrameRef[] = [];
  /** After a pause: frames Vonage already has, which the pacer will offer again on resume. */
  private skip: FrameRef[] | null = null;
  private endReason: LegEndReason | undefined;
  private badMessages = 0;
  private readonly closed: Promise<void>;

  constructor(opts: VonageLegOptions) {
    this.socket = opts.socket;
    this.parameters = Object.freeze({ ...opts.connected.headers });
    this.callSid = this.parameters['callSid'] ?? '';
    this.log = opts.logger.child({ provider: 'vonage', callSid: this.callSid });
    this.stream = opts.pacer.register({ sendFrame: (frame) => this.sendFrame(frame), sendMark: (name) => this.markSent(name) });
    this.closed = new Promise((resolve) => {
      if (this.socket.readyState === WebSocket.CLOSED) resolve();
      else this.socket.once('close', () => resolve());
    });
    this.socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    this.socket.on('close', (code) => {
      this.log.debug({ code }, 'Vonage socket closed');
      // Vonage closes the socket when the caller hangs up (§3.3); 1006 is a lost connection.
      this.end(code === 1006 ? 'socket-lost' : 'hangup');
    });
    this.socket.on('error', (err) => this.log.warn({ err }, 'Vonage socket error'));
    if (this.socket.readyState === WebSocket.CLOSED) this.end('socket-lost');
  }

  onAudio(listener: (mulaw: Uint8Array) => void): void {
    this.audioListeners.push(listener);
  }

  onDtmf(listener: (digit: string) => void): void {
    this.dtmfListeners.push(listener);
  }

  onMarkPlayed(listener: (name: string) => void): void {
    this.markListeners.push(listener);
  }

  onAudioSent(listener: (frame: Uint8Array, atMs: number) => void): void {
    this.sentListeners.push(listener);
  }

  /** Never reported on Vonage: a clear recalls nothing already sent (see the module comment). */
  onCleared(listener: (atMs: number) => void): void {
    this.clearedListeners.push(listener);
  }

  /** Fires once; registering after the end calls the listener on the next microtask. */
  onEnd(listener: (reason: LegEndReason) => void): void {
    const reason = this.endReason;
    if (reason !== undefined) queueMicrotask(() => this.call(listener, reason));
    else this.endListeners.push(listener);
  }

  /** Queue agent audio (μ-law 8 kHz); sent as paced 640-byte L16 frames. Ignored once the leg ended. */
  sendAudio(mulaw: Uint8Array): void {
    if (this.endReason === undefined) this.stream.enqueueAudio(mulaw);
  }

  /** Queue a mark after the audio queued so far; reported when that audio has played at real time. */
  sendMark(name: string): void {
    if (this.endReason === undefined) this.stream.enqueueMark(name);
  }

  /** Barge-in: drop the local queue and the marks not yet played (never reported). Audio already sent still plays. */
  clear(): void {
    if (this.endReason !== undefined) return;
    this.stream.clear();
    this.cancelMarks();
    this.skip = null;
    this.toVonage.reset();
  }

  /** Tentative barge-in: hold the local queue; marks not yet played are held with it (by the pacer). */
  pause(): void {
    if (this.endReason !== undefined || this.stream.isPaused) return;
    const pending = new Set(this.pendingMarks.map((m) => m.name));
    this.stream.pause((name) => pending.has(name));
    this.cancelMarks();
    this.skip = this.recent.slice();
  }

  resume(): void {
    if (this.endReason === undefined) this.stream.resume();
  }

  get queuedMs(): number {
    return this.stream.queuedMs;
  }

  /** Outbound pacing stats of this leg (frames sent, late frames). */
  get pacingStats(): Readonly<PacedStreamStats> {
    return this.stream.stats;
  }

  /** True once {@link onEnd} has fired. */
  get ended(): boolean {
    return this.endReason !== undefined;
  }

  /**
   * Close the socket from our side (code 1000). Vonage then posts `disconnected` to the
   * event webhook and, with no NCCO in the answer, ends the call (§3.3). `onEnd('local')`
   * fires at once; resolves when the socket is closed (cut after 2 s without a handshake).
   */
  async hangup(): Promise<void> {
    await this.shutdown(1000, 'local');
  }

  /** @internal Gateway shutdown: close with 1001 (going away). */
  async shutdown(code = 1001, reason: 'local' | 'shutdown' = 'shutdown'): Promise<void> {
    this.end('local', reason);
    if (this.socket.readyState === WebSocket.OPEN || this.socket.readyState === WebSocket.CONNECTING) {
      this.socket.close(code);
      const force = setTimeout(() => this.socket.terminate(), CLOSE_HANDSHAKE_TIMEOUT_MS);
      force.unref();
      await this.closed;
      clearTimeout(force);
    } else {
      await this.closed;
    }
  }

  /** The pacer's 20 ms μ-law frame, converted and sent as one 640-byte binary frame. */
  private sendFrame(frame: Uint8Array): void {
    if (this.skip) {
      const i = this.skip.findIndex((f) => sameFrame(f, frame));
      if (i >= 0) {
        this.skip.splice(0, i + 1);
        return; // Vonage has it already (sent before the pause)
      }
      this.skip = null;
    }
    if (this.socket.readyState !== WebSocket.OPEN) return;
    this.socket.send(this.toVonage.convert(frame), { binary: true });
    const now = performance.now();
    this.playoutEndsAt = Math.max(now, this.playoutEndsAt) + FRAME_MS;
    this.recent.push({ buffer: frame.buffer, byteOffset: frame.byteOffset });
    if (this.recent.length > RECENT_FRAMES) this.recent.shift();
    for (const l of this.sentListeners) this.call((f: Uint8Array) => l(f, now), frame);
  }

  /** The pacer sent everything before this mark: report it when that audio has played. */
  private markSent(name: string): void {
    const delayMs = Math.max(0, this.playoutEndsAt - performance.now());
    const entry = {
      name,
      timer: setTimeout(() => {
        const i = this.pendingMarks.indexOf(entry);
        if (i >= 0) this.pendingMarks.splice(i, 1);
        this.emit(this.markListeners, name);
      }, delayMs),
    };
    this.pendingMarks.push(entry);
  }

  private cancelMarks(): void {
    for (const m of this.pendingMarks.splice(0)) clearTimeout(m.timer);
  }

  private end(reason: LegEndReason, counted: MediaStreamCloseReason = reason): void {
    if (this.endReason !== undefined) return;
    this.endReason = reason;
    this.stream.close();
    this.cancelMarks();
    mediaStreamClosed.increment(counted);
    this.log.info({ reason: counted }, 'Vonage call stream ended');
    for (const listener of this.endListeners.splice(0)) this.call(listener, reason);
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
      if (bytes.byteLength % 2 !== 0) return this.reject('invalid-shape', `odd audio frame of ${bytes.byteLength} bytes`);
      if (this.endReason !== undefined || bytes.byteLength === 0) return;
      const mulaw = this.fromVonage.convert(bytes);
      if (mulaw.byteLength > 0) this.emit(this.audioListeners, mulaw);
      return;
    }
    const msg = parseVonageMessage(data.toString(), (reason, detail) => this.reject(reason, detail));
    if (!msg) return;
    if (msg.event === 'websocket:dtmf') this.emit(this.dtmfListeners, msg.digit);
    else if (msg.event === 'websocket:connected') this.log.debug('repeated websocket:connected ignored');
    else this.log.debug({ event: msg.name }, 'Vonage event ignored');
  }

  private reject(reason: VonageRejectReason, detail: string): void {
    this.badMessages++;
    const level = this.badMessages <= WARN_BUDGET ? 'warn' : 'debug';
    this.log[level]({ reason, detail, badMessages: this.badMessages }, 'bad Vonage message ignored');
  }

  private emit<T>(listeners: readonly ((v: T) => void)[], value: T): void {
    for (const l of listeners) this.call(l, value);
  }

  private call<T>(listener: (v: T) => void, value: T): void {
    try {
      listener(value);
    } catch (err) {
      this.log.error({ err }, 'call leg listener threw');
    }
  }
}
