/**
 * A simulated Twilio caller: the Twilio side of a bidirectional Media Stream, faithful to
 * reference/telephony-twilio.md §2 (and §3/§4.1 for dialling through the voice webhook).
 * Tests, the sandbox call command and the load generator all dial with it.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import type { RawData } from 'ws';
import { computeTwilioSignature } from '@vap/shared';
import { connectedMessage, decodeMediaPayload, dtmfMessage, inboundMediaMessage, markEchoMessage, parseGatewayMessage, startMessage, stopMessage } from '../twilio/serializer.js';
import { CallerPlayback } from './caller-playback.js';
import type { PlayedChunk } from './caller-playback.js';
import { simulatorTicker } from './simulator-ticker.js';
import { readTwiml } from './twiml-reader.js';

export type { PlayedChunk } from './caller-playback.js';

const FRAME_MS = 20;
const FRAME_BYTES = 160;
const SILENCE = new Uint8Array(FRAME_BYTES).fill(0xff);
/** Inbound frames sent at most per tick after a late tick; older slots are skipped (timestamps jump, as Twilio's may). */
const MAX_INBOUND_CATCH_UP = 5;
const TIMER_TOLERANCE_MS = 2;

/** A Twilio-shaped SID: two-letter prefix + 32 hex characters. */
export function twilioSid(prefix: 'CA' | 'AC' | 'MZ'): string {
  return prefix + randomBytes(16).toString('hex');
}

/** The upgrade was answered with an HTTP status instead of 101. */
export class StreamRefusedError extends Error {
  constructor(readonly status: number) {
    super(`media stream upgrade refused with HTTP ${status}`);
    this.name = 'StreamRefusedError';
  }
}

/** How the simulated Twilio opens a stream. */
export interface TwilioCallerOptions {
  callSid?: string;
  accountSid?: string;
  /** `<Parameter>`s of the `<Stream>`: they arrive as `start.customParameters`. */
  customParameters?: Record<string, string>;
  /** Sign the upgrade (`X-Twilio-Signature`) with this Auth Token. */
  authToken?: string;
  /**
   * Sign the URL with its query string (which is still stripped from the request). Default
   * false: which one Twilio signs is unconfirmed (reference §2), and a gateway cannot check
   * a query it never receives.
   */
  signWithQuery?: boolean;
  from?: string;
  to?: string;
  /** Give up connecting after this long, ms. Default 5000. */
  connectTimeoutMs?: number;
}

/** A call dialled through the control plane's voice webhook (§4.1). */
export interface PlaceCallOptions {
  /** Base URL of the control plane, e.g. `http://127.0.0.1:3000`. */
  controlPlaneUrl: string;
  voiceWebhookPath?: string;
  /** Signs the webhook POST (and the stream upgrade). */
  authToken?: string;
  from: string;
  to: string;
  callSid?: string;
  accountSid?: string;
}

/** The webhook connected a stream (`call`), or ended the call with a `<Say>` (`rejected`). */
export type PlacedCall = { rejected: false; call: TwilioCallerSimulator; twiml: string } | { rejected: true; say: string; twiml: string };

interface SpeechItem {
  bytes: Uint8Array;
  offset: number;
  startedAt: number | undefined;
  resolve: (r: { startedAt: number; endedAt: number }) => void;
  reject: (err: Error) => void;
}

interface CallerEvents {
  clear: [at: number];
  mark: [name: string, cut: boolean];
  closed: [code: number];
}

/**
 * One simulated call. Inbound: `media` every 20 ms at real time from `start` to the end,
 * speech from {@link say} or μ-law silence (a phone line never goes quiet on the wire).
 * Outbound: agent audio plays from a queue at real time, marks are echoed when the audio
 * before them has played, `clear` empties the queue and echoes pending marks at once.
 * Times are `performance.now()` ms.
 */
export class TwilioCallerSimulator extends EventEmitter<CallerEvents> {
  readonly callSid: string;
  readonly accountSid: string;
  readonly streamSid: string;
  readonly from: string | undefined;
  readonly to: string | undefined;
  readonly customParameters: Readonly<Record<string, string>>;
  /** Resolves with the close code once the socket is closed (by either side). */
  readonly closed: Promise<number>;
  /** Agent audio received: arrival time and size of every `media` message. */
  readonly receivedMedia: { at: number; bytes: number }[] = [];
  /** Messages from the gateway Twilio would flag (debugger 31950/31951): binary, invalid, wrong streamSid. */
  readonly protocolErrors: string[] = [];
  /** Inbound `media` messages sent. */
  inboundFrames = 0;

  private readonly playback: CallerPlayback;
  private readonly speech: SpeechItem[] = [];
  private seq = 0;
  private startedAt = 0;
  private frameSlot = 0;
  private ended = false;

  private constructor(
    private readonly ws: WebSocket,
    opts: TwilioCallerOptions,
  ) {
    super();
    this.callSid = opts.callSid ?? twilioSid('CA');
    this.accountSid = opts.accountSid ?? twilioSid('AC');
    this.streamSid = twilioSid('MZ');
    this.from = opts.from;
    this.to = opts.to;
    this.customParameters = Object.freeze({ ...(opts.customParameters ?? {}) });
    this.playback = new CallerPlayback({
      echoMark: (name, cut) => {
        this.send(markEchoMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, name }));
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
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  /**
   * Open a stream as Twilio does: the query string is dropped from `streamUrl` before
   * connecting (§1), then `connected` and `start` are sent and caller audio begins.
   * Rejects with {@link StreamRefusedError} when the upgrade is answered 403/404/….
   */
  static async connect(streamUrl: string, opts: TwilioCallerOptions = {}): Promise<TwilioCallerSimulator> {
    const bare = streamUrl.split('#')[0]!.split('?')[0]!;
    const headers: Record<string, string> = { 'User-Agent': 'TwilioProxy/1.1' };
    if (opts.authToken) headers['X-Twilio-Signature'] = computeTwilioSignature(opts.authToken, opts.signWithQuery ? streamUrl.split('#')[0]! : bare);
    const ws = new WebSocket(bare, { headers, handshakeTimeout: opts.connectTimeoutMs ?? 5000 });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (req, res) => {
        res.resume();
        req.destroy();
        reject(new StreamRefusedError(res.statusCode ?? 0));
      });
      ws.once('error', reject);
    });
    const sim = new TwilioCallerSimulator(ws, opts);
    sim.begin();
    return sim;
  }

  /**
   * Dial through the control plane like Twilio: POST a signed, form-encoded voice webhook
   * (§4.1), then follow the TwiML: `<Connect><Stream>` → a connected simulator with the
   * `<Parameter>`s as custom parameters; `<Say>…<Hangup/>` → `{ rejected: true, say }`.
   */
  static async placeCall(opts: PlaceCallOptions): Promise<PlacedCall> {
    const url = opts.controlPlaneUrl.replace(/\/$/, '') + (opts.voiceWebhookPath ?? '/webhooks/twilio/voice');
    const callSid = opts.callSid ?? twilioSid('CA');
    const accountSid = opts.accountSid ?? twilioSid('AC');
    const params: Record<string, string> = { CallSid: callSid, AccountSid: accountSid, From: opts.from, To: opts.to, CallStatus: 'ringing', Direction: 'inbound', ApiVersion: '2010-04-01' };
    const headers: Record<string, string> = { 'Content-Type': 'application/x-www-form-urlencoded', 'User-Agent': 'TwilioProxy/1.1' };
    if (opts.authToken) headers['X-Twilio-Signature'] = computeTwilioSignature(opts.authToken, url, params);
    const res = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(params).toString() });
    const twiml = await res.text();
    if (!res.ok) throw new Error(`voice webhook answered HTTP ${res.status}: ${twiml.slice(0, 200)}`);
    const action = readTwiml(twiml);
    if (action.kind === 'end') return { rejected: true, say: action.say ?? '', twiml };
    const call = await TwilioCallerSimulator.connect(action.url, { callSid, accountSid, customParameters: action.customParameters, authToken: opts.authToken, from: opts.from, to: opts.to });
    return { rejected: false, call, twiml };
  }

  /**
   * Speak: queue μ-law 8 kHz audio into the inbound stream after any speech already
   * queued. Resolves when its last frame has been sent (a partial last frame is padded
   * with silence); rejects if the call ends first.
   */
  say(mulaw: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    if (this.ended) return Promise.reject(new Error('call ended'));
    const spoken = new Promise<{ startedAt: number; endedAt: number }>((resolve, reject) => {
      if (mulaw.byteLength === 0) {
        const now = performance.now();
        resolve({ startedAt: now, endedAt: now });
        return;
      }
      this.speech.push({ bytes: mulaw, offset: 0, startedAt: undefined, resolve, reject });
    });
    // A caller that does not await (`void sim.say(x)`, then hang up) must not cause an unhandled rejection.
    spoken.catch(() => {});
    return spoken;
  }

  /** Press a key: one `dtmf` message (`0-9`, `*`, `#`, `A-D`). */
  pressDigit(digit: string): void {
    if (!/^[0-9*#A-D]$/.test(digit)) throw new Error(`not a DTMF digit: ${digit}`);
    this.send(dtmfMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, digit }));
  }

  /** The caller hangs up: `stop`, then close (1000). Resolves when the socket is closed. */
  async hangup(): Promise<number> {
    if (this.ws.readyState === WebSocket.OPEN) {
      this.send(stopMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, accountSid: this.accountSid, callSid: this.callSid }));
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

  private begin(): void {
    this.send(connectedMessage());
    this.send(startMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, accountSid: this.accountSid, callSid: this.callSid, customParameters: { ...this.customParameters } }));
    // Frame k is due at origin + k × 20 ms, on the shared ticker's grid.
    this.startedAt = simulatorTicker.add(this);
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

  private sendInboundFrame(now: number): void {
    const frame = this.nextSpeechFrame(now) ?? SILENCE;
    this.send(inboundMediaMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, chunk: ++this.inboundFrames, timestampMs: this.frameSlot * FRAME_MS, mulaw: frame }));
    this.frameSlot++;
  }

  private nextSpeechFrame(now: number): Uint8Array | null {
    const item = this.speech[0];
    if (!item) return null;
    item.startedAt ??= now;
    const end = Math.min(item.offset + FRAME_BYTES, item.bytes.byteLength);
    let frame = item.bytes.subarray(item.offset, end);
    if (frame.byteLength < FRAME_BYTES) {
      const padded = new Uint8Array(FRAME_BYTES).fill(0xff);
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

  private onMessage(data: RawData, isBinary: boolean): void {
    const now = performance.now();
    if (isBinary) {
      this.protocolErrors.push('31950 binary frame');
      return;
    }
    const msg = parseGatewayMessage(data.toString(), (reason, detail) => this.protocolErrors.push(`31951 ${reason}: ${detail}`));
    if (!msg) return;
    if (msg.streamSid !== this.streamSid) {
      this.protocolErrors.push(`31951 wrong streamSid on ${msg.event}`);
      return;
    }
    switch (msg.event) {
      case 'media': {
        const bytes = decodeMediaPayload(msg.media.payload);
        this.receivedMedia.push({ at: now, bytes: bytes.byteLength });
        this.playback.enqueueAudio(bytes, now);
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

  private send(text: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    simulatorTicker.remove(this);
    for (const item of this.speech.splice(0)) item.reject(new Error('call ended'));
  }
}
