/**
 * What every carrier media-stream leg (Twilio, Telnyx, Vonage) shares: listeners, paced
 * outbound audio through the gateway's one {@link OutboundPacer}, marks (the carrier echoes
 * them once played, and all at once on `clear`; or, for a carrier without marks, the
 * {@link LocalMarkPlayout} model), clear / pause / resume, and the close handshake. A
 * carrier subclass only reads its wire format and supplies its outbound messages.
 */
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { RawData } from 'ws';
import type { CallLeg } from './call-leg.js';
import { LocalMarkPlayout } from './local-mark-playout.js';
import { FRAME_BYTES } from './twilio/pacer.js';
import type { OutboundPacer, PacedStream, PacedStreamStats } from './twilio/pacer.js';
import type { RejectReason } from './twilio/serializer.js';
import { TaggedCounter } from './twilio/tagged-counter.js';

/** Why a media stream socket closed (tag `reason`). */
export type MediaStreamCloseReason = 'hangup' | 'socket-lost' | 'local' | 'shutdown' | 'unsupported-format' | 'bad-handshake' | 'handshake-timeout' | 'handshake-lost' | 'bad-signature' | 'at-capacity' | 'overloaded' | 'draining';

/** `svc.telephony.media_stream_closed{reason}`: every closed (or refused) carrier stream, by reason, all carriers together. */
export const mediaStreamClosed = new TaggedCounter<MediaStreamCloseReason>('svc.telephony.media_stream_closed', 'reason');

/** How a leg ended: the carrier ended the stream (`stop`, or Vonage's close), the socket died without that, or we hung up. */
export type LegEndReason = 'hangup' | 'socket-lost' | 'local';

/** How long {@link PacedCallLeg.hangup} waits for the carrier's closing handshake before cutting the TCP connection. */
const CLOSE_HANDSHAKE_TIMEOUT_MS = 2000;
/** Bad messages logged at `warn` per stream; the rest go to `debug` so a broken peer cannot flood the log. */
const WARN_BUDGET = 5;
/** ws options for a text frame given as bytes (one object for every send). */
const TEXT_FRAME = Object.freeze({ binary: false });
/** ws's own choice: a string is a text frame, bytes a binary one. */
const WS_DEFAULT_FRAME = Object.freeze({});

function bump(map: Map<string, number>, name: string, by = 1): void {
  map.set(name, (map.get(name) ?? 0) + by);
}

function take(map: Map<string, number>, name: string): boolean {
  const n = map.get(name);
  if (!n) return false;
  if (n === 1) map.delete(name);
  else map.set(name, n - 1);
  return true;
}

/** The carrier's outbound messages. */
export interface LegWire {
  /**
   * Agent audio, one paced 20 ms μ-law frame: `bytes[start, end)`, a range of the queued
   * chunk (no view is made per frame, see `PacerSink.sendFrame`), as a text message or as a
   * binary frame.
   */
  media(bytes: Buffer, start: number, end: number): string | Uint8Array;
  /** `media` gives the UTF-8 bytes of a text message (sent as a text frame), not a binary frame's payload. */
  mediaIsText?: boolean;
  /**
   * The carrier's mark and clear text messages. Null for a carrier that has none (Vonage):
   * marks are then reported by the {@link LocalMarkPlayout} model, a clear or pause recalls
   * nothing already sent, and {@link PacedCallLeg.onCleared} never fires.
   */
  marks: { mark(name: string): string; clear(): string } | null;
  /** A clear dropped the queued audio (a transcoding carrier resets its resampler, so the cut audio's tail does not leak). */
  onClear?(): void;
}

/** What a subclass hands the base. */
export interface PacedCallLegOptions {
  /** The accepted socket, after the carrier's handshake was read from it. */
  socket: WebSocket;
  pacer: OutboundPacer;
  /** Already bound to the carrier and call (`provider`, `callSid`, stream id). */
  log: Logger;
  callSid: string;
  parameters: Readonly<Record<string, string>>;
  wire: LegWire;
}

/**
 * A carrier stream after its handshake: caller audio and DTMF in, paced agent audio and
 * marks out. Listeners run synchronously on the socket's message events; a throwing
 * listener is logged and does not affect the others. The subclass reads each text or binary
 * frame ({@link onMessage}) and reports through the protected `deliver*` methods.
 */
export abstract class PacedCallLeg implements CallLeg {
  abstract readonly provider: CallLeg['provider'];
  readonly callSid: string;
  readonly parameters: Readonly<Record<string, string>>;

  protected readonly socket: WebSocket;
  protected readonly log: Logger;
  private readonly stream: PacedStream;
  private readonly wire: LegWire;
  /** How `wire.media`'s frames are sent: as text for a carrier whose text messages it builds as bytes. */
  private readonly mediaSendOptions: { binary?: boolean };
  private readonly audioListeners: ((mulaw: Uint8Array) => void)[] = [];
  private readonly dtmfListeners: ((digit: string) => void)[] = [];
  private readonly markListeners: ((name: string) => void)[] = [];
  private readonly sentListeners: ((frame: Uint8Array, atMs: number) => void)[] = [];
  private readonly clearedListeners: ((atMs: number) => void)[] = [];
  private readonly endListeners: ((reason: LegEndReason) => void)[] = [];
  /** Marks sent to the carrier and not echoed yet (name → count: names may repeat). */
  private readonly outstanding = new Map<string, number>();
  /** Marks that were outstanding at a `clear`: the carrier echoes them at once, and they were not played. */
  private readonly cut = new Map<string, number>();
  /** Only for a carrier without marks ({@link LegWire.marks} null). */
  private readonly local: LocalMarkPlayout | null;
  private endReason: LegEndReason | undefined;
  private badMessages = 0;
  private readonly closed: Promise<void>;

  protected constructor(opts: PacedCallLegOptions) {
    this.socket = opts.socket;
    this.callSid = opts.callSid;
    this.parameters = Object.freeze({ ...opts.parameters });
    this.log = opts.log;
    this.wire = opts.wire;
    this.mediaSendOptions = opts.wire.mediaIsText ? TEXT_FRAME : WS_DEFAULT_FRAME;
    this.local = opts.wire.marks ? null : new LocalMarkPlayout((name) => this.deliverMarkEcho(name));
    this.stream = opts.pacer.register({
      sendFrame: (bytes, offset) => {
        if (!this.send(this.wire.media(bytes, offset, offset + FRAME_BYTES), this.mediaSendOptions)) return;
        if (!this.local && this.sentListeners.length === 0) return;
        const at = performance.now();
        this.local?.frameSent(at);
        if (this.sentListeners.length === 0) return;
        // A view of the frame only for a listener (a recording): 50 frames a second per call
        // are otherwise sent without one.
        const frame = bytes.subarray(offset, offset + FRAME_BYTES);
        for (const l of this.sentListeners) {
          try {
            l(frame, at);
          } catch (err) {
            this.log.error({ err }, 'call leg listener threw');
          }
        }
      },
      sendMark: (name) => {
        bump(this.outstanding, name);
        if (this.wire.marks) this.send(this.wire.marks.mark(name));
        else this.local!.markSent(name);
      },
    });
    this.closed = new Promise((resolve) => {
      if (this.socket.readyState === WebSocket.CLOSED) resolve();
      else this.socket.once('close', () => resolve());
    });
    const pacer = opts.pacer;
    this.socket.on('message', (data, isBinary) => {
      this.onMessage(data, isBinary);
      pacer.serviceIfDue();
    });
    this.socket.on('close', (code) => {
      this.log.debug({ code }, 'media stream socket closed');
      this.end(this.closedBy(code)); // no-op when `stop` or a hangup ended the leg first
    });
    this.socket.on('error', (err) => this.log.warn({ err }, 'media stream socket error'));
    if (this.socket.readyState === WebSocket.CLOSED) this.end('socket-lost');
  }

  /** One frame from the carrier (runs after the constructor: messages are events). */
  protected abstract onMessage(data: RawData, isBinary: boolean): void;

  /**
   * How the leg ended when the socket closed before `stop` or a hangup: lost, for a carrier
   * that says `stop` first. A carrier whose hang-up is the close itself (Vonage) overrides it.
   */
  protected closedBy(_code: number): LegEndReason {
    return 'socket-lost';
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

  onCleared(listener: (atMs: number) => void): void {
    this.clearedListeners.push(listener);
  }

  /** Fires once; registering after the end calls the listener on the next microtask. */
  onEnd(listener: (reason: LegEndReason) => void): void {
    const reason = this.endReason;
    if (reason !== undefined) queueMicrotask(() => this.call(listener, reason));
    else this.endListeners.push(listener);
  }

  /** Queue agent audio (μ-law 8 kHz); sent in paced 20 ms frames. Ignored once the leg ended. */
  sendAudio(mulaw: Uint8Array): void {
    if (this.endReason === undefined) this.stream.enqueueAudio(mulaw);
  }

  /** Queue a mark after the audio queued so far; {@link onMarkPlayed} reports it once the carrier played that audio. */
  sendMark(name: string): void {
    if (this.endReason === undefined) this.stream.enqueueMark(name);
  }

  /**
   * Barge-in: drop local audio and marks not yet sent, and send the carrier's `clear`. The
   * carrier then echoes every mark it still held (Twilio §2.2, Telnyx §2.1 "mark"); those
   * echoes are swallowed, so {@link onMarkPlayed} only ever reports audio that really played.
   * A carrier without `clear` or marks (Vonage) gets nothing: the audio already sent (at most
   * the pacer's lead, ~60 ms) plays out, and its local marks are cancelled.
   */
  clear(): void {
    if (this.endReason !== undefined) return;
    const paused = this.stream.isPaused;
    this.stream.clear();
    // When paused, the pause already cleared the carrier and nothing was sent since; a
    // carrier without clear was only held, so its marks are cancelled now.
    if (!paused || !this.wire.marks) this.cutOutstanding();
    this.wire.onClear?.();
  }

  /**
   * Tentative barge-in: `clear` now, the unplayed audio held (rewound to the first frame the
   * carrier had not started, by the pacer's playout model) with the marks not yet echoed;
   * they are sent again on {@link resume}. The cut marks' echoes are swallowed as for
   * {@link clear}; the re-sent ones are reported when they really play.
   *
   * A carrier without clear (Vonage) cannot be made to drop anything: the leg only stops
   * sending. The carrier plays out what it has (at most the pacer's lead, ~60 ms), and the
   * local marks of that audio are reported as it plays; {@link resume} sends on from there.
   */
  pause(): void {
    if (this.endReason !== undefined || this.stream.isPaused) return;
    if (!this.wire.marks) {
      this.stream.hold();
      return;
    }
    this.stream.pause((name) => this.outstanding.has(name));
    this.cutOutstanding();
  }

  resume(): void {
    if (this.endReason === undefined) this.stream.resume();
  }

  /** The carrier drops its unplayed audio and echoes the marks it held (swallowed); without carrier marks, they are just forgotten. */
  private cutOutstanding(): void {
    if (!this.wire.marks) {
      this.outstanding.clear();
      this.local!.cancelMarks();
      return;
    }
    for (const [name, n] of this.outstanding) bump(this.cut, name, n);
    this.outstanding.clear();
    if (this.send(this.wire.marks.clear())) this.emit(this.clearedListeners, performance.now());
  }

  get queuedMs(): number {
    return this.stream.queuedMs;
  }

  get agentPlaying(): boolean {
    // A mark follows every turn's audio (the session's output places one every 100 ms and at
    // the end), so audio sent and not yet played has one outstanding.
    return !this.stream.isPaused && (this.outstanding.size > 0 || this.stream.queuedMs > 0);
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
   * Close the stream from our side (code 1000; Twilio and Telnyx continue their TwiML/TeXML
   * after `</Connect>`, Vonage posts `disconnected` and ends the call). `onEnd('local')`
   * fires at once; resolves when the socket is closed (the TCP connection is cut after 2 s
   * without the carrier's closing handshake).
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

  /** Caller audio from the carrier (ignored once the leg ended). */
  protected deliverAudio(mulaw: Uint8Array): void {
    if (this.endReason === undefined) this.emit(this.audioListeners, mulaw);
  }

  protected deliverDtmf(digit: string): void {
    this.emit(this.dtmfListeners, digit);
  }

  /** The carrier echoed a mark: reported when it was ours and not cut by a `clear`. */
  protected deliverMarkEcho(name: string): void {
    if (take(this.cut, name)) return;
    if (take(this.outstanding, name)) this.emit(this.markListeners, name);
    else this.log.debug({ mark: name }, 'echo of a mark we did not send');
  }

  /** The carrier said `stop`: the leg ends (`hangup`) and the socket is closed without waiting for the carrier to. */
  protected remoteStopped(): void {
    this.end('hangup');
    if (this.socket.readyState === WebSocket.OPEN) this.socket.close(1000);
  }

  /** A message that was ignored: unknown events at `debug`, the peer's bugs at `warn` within a budget. */
  protected reject(reason: RejectReason, detail: string): void {
    if (reason === 'unknown-event') {
      this.log.debug({ detail }, 'unknown media stream event ignored');
      return;
    }
    this.badMessages++;
    const level = this.badMessages <= WARN_BUDGET ? 'warn' : 'debug';
    this.log[level]({ reason, detail, badMessages: this.badMessages }, 'bad media stream message ignored');
  }

  private end(reason: LegEndReason, counted: MediaStreamCloseReason = reason): void {
    if (this.endReason !== undefined) return;
    this.endReason = reason;
    this.stream.close();
    this.local?.cancelMarks();
    mediaStreamClosed.increment(counted);
    this.log.info({ reason: counted }, 'media stream ended');
    for (const listener of this.endListeners.splice(0)) this.call(listener, reason);
  }

  /** False when the socket is no longer open (nothing was sent). A string goes as a text frame, bytes as a binary one. */
  private send(data: string | Uint8Array, options: { binary?: boolean } = WS_DEFAULT_FRAME): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(data, options);
    return true;
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
