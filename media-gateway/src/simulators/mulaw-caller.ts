/**
 * The carrier-neutral half of a simulated phone caller on a media stream (Twilio, Telnyx,
 * Vonage): caller audio every 20 ms at real time (speech or silence), agent audio played
 * from a queue at real time (modelled on its μ-law 8 kHz form), marks echoed once the audio
 * before them played, `clear` honoured. A carrier subclass writes and reads its own wire
 * format; one that carries other audio (Vonage's L16 16 kHz) sets its {@link InboundFraming}.
 * Times are `performance.now()` ms.
 */
import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import type { RawData } from 'ws';
import { retryAfterMs } from '@vap/shared';
import { decodeMediaPayload } from '../twilio/serializer.js';
import { CallerPlayback } from './caller-playback.js';
import type { PlayedChunk } from './caller-playback.js';
import { simulatorTicker } from './simulator-ticker.js';

const FRAME_MS = 20;

/** The caller's 20 ms frame on the wire: its size, and what silence is in it. */
export interface InboundFraming {
  bytes: number;
  /** The byte of digital silence (0xff in μ-law, 0 in linear PCM). */
  silence: number;
}

/** μ-law 8 kHz: 160 bytes per 20 ms. */
const MULAW_FRAMING: InboundFraming = { bytes: 160, silence: 0xff };
/** Inbound frames sent at most per tick after a late tick; older slots are skipped (timestamps jump, as a carrier's may). */
const MAX_INBOUND_CATCH_UP = 5;
const TIMER_TOLERANCE_MS = 2;

/**
 * The upgrade was answered with an HTTP status instead of 101: for a 503, the `Retry-After`
 * seconds it gave (else null), and the `detail` of an RFC 7807 body when there was one (why
 * the gateway refused, e.g. how far behind its pipelines were).
 */
export class StreamRefusedError extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterS: number | null = null,
    readonly detail: string | null = null,
  ) {
    super(`media stream upgrade refused with HTTP ${status}${detail === null ? '' : `: ${detail}`}`);
    this.name = 'StreamRefusedError';
  }
}

/** A refusal's body is read up to this size, and for this long at most. */
const REFUSAL_BODY_MAX_BYTES = 4096;
const REFUSAL_BODY_WAIT_MS = 2000;

/** Opens a WebSocket as a carrier would; rejects with {@link StreamRefusedError} when the upgrade is answered 403/404/…. */
export async function openCarrierSocket(url: string, headers: Record<string, string>, connectTimeoutMs = 5000): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers, handshakeTimeout: connectTimeoutMs });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (req, res) => {
      const waitMs = retryAfterMs(res.headers['retry-after']);
      const problem = /^application\/problem\+json/i.test(res.headers['content-type'] ?? '');
      let body = '';
      let settled = false;
      const refuse = (): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        req.destroy();
        reject(new StreamRefusedError(res.statusCode ?? 0, waitMs === undefined ? null : Math.ceil(waitMs / 1000), problem ? problemDetail(body) : null));
      };
      const timer = setTimeout(refuse, REFUSAL_BODY_WAIT_MS);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (body.length < REFUSAL_BODY_MAX_BYTES) body += chunk;
      });
      res.once('end', refuse);
      res.once('error', refuse);
    });
    ws.once('error', reject);
  });
  return ws;
}

/** The `detail` (else the `title`) of an RFC 7807 body; null when it has neither or is not JSON. */
function problemDetail(body: string): string | null {
  try {
    const p = JSON.parse(body) as { detail?: unknown; title?: unknown };
    if (typeof p.detail === 'string') return p.detail;
    return typeof p.title === 'string' ? p.title : null;
  } catch {
    return null;
  }
}

interface SpeechItem {
  bytes: Uint8Array;
  offset: number;
  startedAt: number | undefined;
  resolve: (r: { startedAt: number; endedAt: number }) => void;
  reject: (err: Error) => void;
}

/** The gateway's outbound messages, as both Twilio and Telnyx shape them (stream ids aside). */
export type GatewayPlayback = { event: 'media'; media: { payload: string } } | { event: 'mark'; mark: { name: string } } | { event: 'clear' };

/** Events of a simulated call. */
export interface CallerEvents {
  clear: [at: number];
  mark: [name: string, cut: boolean];
  closed: [code: number];
}

/**
 * One simulated call on an open socket. The subclass sends its handshake, then calls
 * {@link startStreaming}; it reads the gateway's frames in {@link onMessage} and hands the valid ones to {@link play}.
 */
export abstract class MulawCallerSimulator extends EventEmitter<CallerEvents> {
  /** Resolves with the close code once the socket is closed (by either side). */
  readonly closed: Promise<number>;
  /** Agent audio received: arrival time and size on the wire of every `media` message (or binary frame). */
  readonly receivedMedia: { at: number; bytes: number }[] = [];
  /** Messages from the gateway the carrier would flag (binary, invalid, wrong stream id). */
  readonly protocolErrors: string[] = [];
  /** Inbound `media` messages sent. */
  inboundFrames = 0;

  /** The carrier's message sequence number (the last one used). */
  protected seq = 0;
  private readonly playback: CallerPlayback;
  private readonly speech: SpeechItem[] = [];
  private readonly silence: Uint8Array;
  private startedAt = 0;
  private frameSlot = 0;
  private ended = false;

  protected constructor(
    protected readonly ws: WebSocket,
    private readonly framing: InboundFraming = MULAW_FRAMING,
  ) {
    super();
    this.silence = new Uint8Array(framing.bytes).fill(framing.silence);
    this.playback = new CallerPlayback({
      echoMark: (name, cut) => {
        const echo = this.markEchoText(name);
        if (echo !== null) this.send(echo);
        this.emit('mark', name, cut);
      },
    });
    this.closed = new Promise((resolve) => {
      ws.once('close', (code) => {
        this.finish();
        this.emit('closed', code);
        resolve(code);
      });
    });
    ws.on('error', () => {}); // a close follows; the code tells the story
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary, performance.now()));
  }

  /** Caller audio frame `chunk` (from 1) at `timestampMs` since the stream started: a text message, or a binary frame. */
  protected abstract inboundMessage(chunk: number, timestampMs: number, frame: Uint8Array): string | Uint8Array;
  /** Null for a carrier without marks (it never receives one to echo). */
  protected abstract markEchoText(name: string): string | null;
  protected abstract dtmfText(digit: string): string;
  /** Null for a carrier whose hang-up is the close alone (Vonage). */
  protected abstract stopText(): string | null;
  /** One frame from the gateway, received at `now`. */
  protected abstract onMessage(data: RawData, isBinary: boolean, now: number): void;

  /**
   * Speak: queue μ-law 8 kHz audio into the inbound stream after any speech already
   * queued. Resolves when its last frame has been sent (a partial last frame is padded
   * with silence); rejects if the call ends first.
   */
  say(mulaw: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    return this.queueSpeech(mulaw);
  }

  /** Queue audio already in the carrier's inbound format ({@link InboundFraming}). */
  protected queueSpeech(bytes: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    if (this.ended) return Promise.reject(new Error('call ended'));
    const spoken = new Promise<{ startedAt: number; endedAt: number }>((resolve, reject) => {
      if (bytes.byteLength === 0) {
        const now = performance.now();
        resolve({ startedAt: now, endedAt: now });
        return;
      }
      this.speech.push({ bytes, offset: 0, startedAt: undefined, resolve, reject });
    });
    // A caller that does not await (`void sim.say(x)`, then hang up) must not cause an unhandled rejection.
    spoken.catch(() => {});
    return spoken;
  }

  /** Press a key: one `dtmf` message (`0-9`, `*`, `#`, `A-D`). */
  pressDigit(digit: string): void {
    if (!/^[0-9*#A-D]$/.test(digit)) throw new Error(`not a DTMF digit: ${digit}`);
    this.send(this.dtmfText(digit));
  }

  /** The caller hangs up: `stop`, then close (1000). Resolves when the socket is closed. */
  async hangup(): Promise<number> {
    if (this.ws.readyState === WebSocket.OPEN) {
      const stop = this.stopText();
      if (stop !== null) this.send(stop);
      this.finish();
      this.ws.close(1000);
    }
    return this.closed;
  }

  /** Cut the TCP connection without a closing handshake (a network failure). */
  drop(): void {
    this.ws.terminate();
  }

  /** Non-silent agent audio that has played (or started playing, then was cut). */
  get agentAudio(): readonly PlayedChunk[] {
    return this.playback.played;
  }

  /** Milliseconds of non-silent agent audio the caller heard. */
  get heardAgentAudioMs(): number {
    return this.playback.heardMs;
  }

  /** Times a `clear` arrived. */
  get clears(): readonly number[] {
    return this.playback.clears;
  }

  /** Marks echoed, in order; `cut` when a `clear` returned them unplayed. */
  get marksEchoed(): readonly { name: string; at: number; cut: boolean }[] {
    return this.playback.marks;
  }

  /** Milliseconds of agent audio waiting to play. */
  get playbackQueuedMs(): number {
    return this.playback.queuedMs;
  }

  /** When the first non-silent agent audio that started playing at or after `t` started, or null. */
  firstAgentAudioAfter(t: number): number | null {
    return this.playback.played.find((c) => c.startedAt >= t)?.startedAt ?? null;
  }

  /** Caller audio begins: frame k is due at origin + k × 20 ms, on the shared ticker's grid. */
  protected startStreaming(): void {
    this.startedAt = simulatorTicker.add(this);
  }

  /**
   * Acts on a checked message from the gateway (Twilio and Telnyx share these shapes): `media`
   * plays after what is queued, a `mark` is echoed once the audio before it has played,
   * `clear` stops playback and echoes the queued marks at once.
   */
  protected play(msg: GatewayPlayback, now: number): void {
    switch (msg.event) {
      case 'media': {
        const mulaw = decodeMediaPayload(msg.media.payload);
        this.playAudio(mulaw, mulaw.byteLength, now);
        return;
      }
      case 'mark':
        this.playback.enqueueMark(msg.mark.name, now);
        return;
      case 'clear':
        this.playback.clear(now);
        this.emit('clear', now);
        return;
    }
  }

  /** Agent audio (μ-law 8 kHz) that arrived as `wireBytes` on the wire at `now`: it plays after what is queued. */
  protected playAudio(mulaw: Uint8Array, wireBytes: number, now: number): void {
    this.receivedMedia.push({ at: now, bytes: wireBytes });
    this.playback.enqueueAudio(mulaw, now);
  }

  /** @internal Called by the shared ticker every ~20 ms. */
  tick(now: number): void {
    if (this.ended) return;
    this.playback.advance(now);
    // Send the frames that are due, skipping beyond the catch-up bound. Timers may fire up
    // to ~1 ms before their slot by this clock (libuv counts whole ms): hence the tolerance.
    const due = Math.floor((now - this.startedAt + TIMER_TOLERANCE_MS) / FRAME_MS) + 1;
    if (due - this.frameSlot > MAX_INBOUND_CATCH_UP) this.frameSlot = due - MAX_INBOUND_CATCH_UP;
    while (this.frameSlot < due && !this.ended) this.sendInboundFrame(now);
  }

  /** Sends a text frame (a string) or a binary one while the socket is open. */
  protected send(data: string | Uint8Array): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(data);
  }

  private sendInboundFrame(now: number): void {
    const frame = this.nextSpeechFrame(now) ?? this.silence;
    this.sendInbound(this.inboundMessage(++this.inboundFrames, this.frameSlot * FRAME_MS, frame));
    this.frameSlot++;
  }

  /** How an inbound frame leaves; a subclass may hold some back to send them out of order. */
  protected sendInbound(message: string | Uint8Array): void {
    this.send(message);
  }

  private nextSpeechFrame(now: number): Uint8Array | null {
    const item = this.speech[0];
    if (!item) return null;
    item.startedAt ??= now;
    const frameBytes = this.framing.bytes;
    const end = Math.min(item.offset + frameBytes, item.bytes.byteLength);
    let frame = item.bytes.subarray(item.offset, end);
    if (frame.byteLength < frameBytes) {
      const padded = new Uint8Array(frameBytes).fill(this.framing.silence);
      padded.set(frame);
      frame = padded;
    }
    item.offset = end;
    if (item.offset >= item.bytes.byteLength) {
      this.speech.shift();
      item.resolve({ startedAt: item.startedAt, endedAt: now });
    }
    return frame;
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    simulatorTicker.remove(this);
    for (const item of this.speech.splice(0)) item.reject(new Error('call ended'));
  }
}
