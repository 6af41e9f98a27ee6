/**
 * One Twilio Media Stream (bidirectional `<Connect><Stream>`) as a {@link CallLeg}.
 * Wire protocol: reference/telephony-twilio.md §2.
 */
import type { Logger } from 'pino';
import { WebSocket } from 'ws';
import type { RawData } from 'ws';
import type { CallLeg } from '../call-leg.js';
import type { OutboundPacer, PacedStream, PacedStreamStats } from './pacer.js';
import { clearMessage, decodeMediaPayload, markMessage, mediaMessageWriter, parseTwilioMessage, scanInboundMedia } from './serializer.js';
import type { RejectReason } from './serializer.js';
import { TaggedCounter } from './tagged-counter.js';
import type { TwilioInbound, TwilioStart } from './wire.js';

/** Why a media stream socket closed (tag `reason`). */
export type MediaStreamCloseReason = 'hangup' | 'socket-lost' | 'local' | 'shutdown' | 'unsupported-format' | 'handshake-timeout' | 'handshake-lost' | 'bad-signature';

/** `svc.telephony.media_stream_closed{reason}`: every closed (or refused) Twilio stream, by reason. */
export const mediaStreamClosed = new TaggedCounter<MediaStreamCloseReason>('svc.telephony.media_stream_closed', 'reason');

/** How a leg ended: Twilio sent `stop`, the socket died without one, or we hung up. */
export type LegEndReason = 'hangup' | 'socket-lost' | 'local';

/** How long {@link TwilioLeg.hangup} waits for Twilio's closing handshake before cutting the TCP connection. */
const CLOSE_HANDSHAKE_TIMEOUT_MS = 2000;
/** Bad messages logged at `warn` per stream; the rest go to `debug` so a broken peer cannot flood the log. */
const WARN_BUDGET = 5;

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

/** What the media-stream server hands a new leg. */
export interface TwilioLegOptions {
  /** The accepted socket, after `connected` and `start` were read from it. */
  socket: WebSocket;
  start: TwilioStart;
  pacer: OutboundPacer;
  logger: Logger;
}

/**
 * A Twilio stream after its `start`: caller audio and DTMF in, paced agent audio and marks
 * out. Listeners run synchronously on the socket's message events; a throwing listener is
 * logged and does not affect the others. Messages that are invalid or carry another
 * streamSid are logged and ignored (Twilio's own rule for bad messages, §2.2).
 */
export class TwilioLeg implements CallLeg {
  readonly provider = 'twilio' as const;
  readonly callSid: string;
  readonly accountSid: string;
  readonly streamSid: string;
  readonly parameters: Readonly<Record<string, string>>;
  readonly tracks: readonly string[];

  private readonly socket: WebSocket;
  private readonly log: Logger;
  private readonly stream: PacedStream;
  private readonly audioListeners: ((mulaw: Uint8Array) => void)[] = [];
  private readonly dtmfListeners: ((digit: string) => void)[] = [];
  private readonly markListeners: ((name: string) => void)[] = [];
  private readonly sentListeners: ((frame: Uint8Array, atMs: number) => void)[] = [];
  private readonly clearedListeners: ((atMs: number) => void)[] = [];
  private readonly endListeners: ((reason: LegEndReason) => void)[] = [];
  /** Marks sent to Twilio and not echoed yet (name → count: names may repeat). */
  private readonly outstanding = new Map<string, number>();
  /** Marks that were outstanding at a `clear`: Twilio echoes them at once, and they were not played. */
  private readonly cut = new Map<string, number>();
  private endReason: LegEndReason | undefined;
  private badMessages = 0;
  private readonly closed: Promise<void>;

  constructor(opts: TwilioLegOptions) {
    const s = opts.start.start;
    this.socket = opts.socket;
    this.callSid = s.callSid;
    this.accountSid = s.accountSid;
    this.streamSid = s.streamSid;
    this.parameters = Object.freeze({ ...s.customParameters });
    this.tracks = Object.freeze([...s.tracks]);
    this.log = opts.logger.child({ provider: 'twilio', callSid: this.callSid, streamSid: this.streamSid });
    const mediaMessage = mediaMessageWriter(this.streamSid);
    this.stream = opts.pacer.register({
      sendFrame: (frame) => {
        if (!this.send(mediaMessage(frame))) return;
        if (this.sentListeners.length === 0) return;
        const at = performance.now();
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
        this.send(markMessage(this.streamSid, name));
      },
    });
    this.closed = new Promise((resolve) => {
      if (this.socket.readyState === WebSocket.CLOSED) resolve();
      else this.socket.once('close', () => resolve());
    });
    this.socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    this.socket.on('close', (code) => {
      this.log.debug({ code }, 'media stream socket closed');
      this.end('socket-lost'); // no-op when `stop` or a hangup ended the leg first
    });
    this.socket.on('error', (err) => this.log.warn({ err }, 'media stream socket error'));
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

  /** Queue a mark after the audio queued so far; {@link onMarkPlayed} reports it once Twilio played that audio. */
  sendMark(name: string): void {
    if (this.endReason === undefined) this.stream.enqueueMark(name);
  }

  /**
   * Barge-in: drop local audio and marks not yet sent, and send Twilio `clear`. Twilio
   * then echoes every mark it still held (§2.2 "clear"); those echoes are swallowed, so
   * {@link onMarkPlayed} only ever reports audio that really played.
   */
  clear(): void {
    if (this.endReason !== undefined) return;
    if (this.stream.isPaused) {
      // The pause already cleared Twilio and nothing was sent since: drop what it held.
      this.stream.clear();
      return;
    }
    this.stream.clear();
    this.cutOutstanding();
  }

  /**
   * Tentative barge-in: Twilio `clear` now, the unplayed audio held (rewound to the first
   * frame Twilio had not started, by the pacer's playout model) with the marks not yet
   * echoed; they are sent again on {@link resume}. The cut marks' echoes are swallowed as
   * for {@link clear}; the re-sent ones are reported when they really play.
   */
  pause(): void {
    if (this.endReason !== undefined || this.stream.isPaused) return;
    this.stream.pause((name) => this.outstanding.has(name));
    this.cutOutstanding();
  }

  resume(): void {
    if (this.endReason === undefined) this.stream.resume();
  }

  private cutOutstanding(): void {
    for (const [name, n] of this.outstanding) bump(this.cut, name, n);
    this.outstanding.clear();
    if (this.send(clearMessage(this.streamSid))) this.emit(this.clearedListeners, performance.now());
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
   * Close the stream from our side (code 1000; Twilio continues the TwiML after
   * `</Connect>`, §2.3 rule 6). `onEnd('local')` fires at once; resolves when the socket
   * is closed (the TCP connection is cut after 2 s without Twilio's closing handshake).
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

  private end(reason: LegEndReason, counted: MediaStreamCloseReason = reason): void {
    if (this.endReason !== undefined) return;
    this.endReason = reason;
    this.stream.close();
    mediaStreamClosed.increment(counted);
    this.log.info({ reason: counted }, 'media stream ended');
    for (const listener of this.endListeners.splice(0)) this.call(listener, reason);
  }

  /** False when the socket is no longer open (nothing was sent). */
  private send(text: string): boolean {
    if (this.socket.readyState !== WebSocket.OPEN) return false;
    this.socket.send(text);
    return true;
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.reject('invalid-shape', 'binary frame');
      return;
    }
    const text = data.toString();
    // 50 a second per call: the compact `media` layout is read without JSON.parse.
    const media = scanInboundMedia(text);
    if (media) {
      if (media.streamSid !== this.streamSid) this.reject('invalid-shape', 'streamSid of another stream on media');
      else if (media.track === 'inbound' && this.endReason === undefined) this.emit(this.audioListeners, decodeMediaPayload(media.payload));
      return;
    }
    const msg = parseTwilioMessage(text, (reason, detail) => this.reject(reason, detail));
    if (!msg) return;
    if (msg.event !== 'connected' && msg.streamSid !== this.streamSid) {
      this.reject('invalid-shape', `streamSid of another stream on ${msg.event}`);
      return;
    }
    this.handle(msg);
  }

  private handle(msg: TwilioInbound): void {
    switch (msg.event) {
      case 'media':
        // Only the caller's track feeds the agent; a bidirectional stream has no other.
        if (msg.media.track !== 'inbound' || this.endReason !== undefined) return;
        this.emit(this.audioListeners, decodeMediaPayload(msg.media.payload));
        return;
      case 'dtmf':
        this.emit(this.dtmfListeners, msg.dtmf.digit);
        return;
      case 'mark':
        this.onMarkEcho(msg.mark.name);
        return;
      case 'stop':
        this.end('hangup');
        // Twilio closes after `stop`; closing too frees the socket without waiting for it.
        if (this.socket.readyState === WebSocket.OPEN) this.socket.close(1000);
        return;
      case 'connected':
      case 'start':
        this.log.debug({ event: msg.event }, 'repeated handshake message ignored');
        return;
    }
  }

  private onMarkEcho(name: string): void {
    if (take(this.cut, name)) return;
    if (take(this.outstanding, name)) this.emit(this.markListeners, name);
    else this.log.debug({ mark: name }, 'echo of a mark we did not send');
  }

  private reject(reason: RejectReason, detail: string): void {
    if (reason === 'unknown-event') {
      this.log.debug({ detail }, 'unknown media stream event ignored');
      return;
    }
    this.badMessages++;
    const level = this.badMessages <= WARN_BUDGET ? 'warn' : 'debug';
    this.log[level]({ reason, detail, badMessages: this.badMessages }, 'bad media stream message ignored');
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
