/**
 * A simulated Vonage caller: the Vonage side of an NCCO `connect` to a WebSocket, faithful
 * to reference/telephony-vonage.md §1–§4 and §6 (signed answer and event webhooks, the
 * NCCO, `websocket:connected`, 640-byte L16 16 kHz frames both ways, DTMF, close).
 * Tests and the sandbox dial with it; the API mirrors the Twilio caller so
 * `runCallerScript` drives either.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { WebSocket } from 'ws';
import type { RawData } from 'ws';
import { signVonageWebhook } from '@vap/shared';
import { mulawDecode, pcm16ToBytesLE, resample } from '@vap/voice-pipeline';
import { L16_FRAME_BYTES, L16ToMulaw } from '../vonage/l16-converter.js';
import { connectedMessage, dtmfMessage } from '../vonage/wire.js';
import { CallerPlayback } from './caller-playback.js';
import type { PlayedChunk } from './caller-playback.js';
import { simulatorTicker } from './simulator-ticker.js';
import { StreamRefusedError } from './twilio-caller.js';

const FRAME_MS = 20;
const SILENCE = new Uint8Array(L16_FRAME_BYTES);
/** Inbound frames sent at most per tick after a late tick; older slots are skipped. */
const MAX_INBOUND_CATCH_UP = 5;
const TIMER_TOLERANCE_MS = 2;

/** Where the simulated Vonage posts its signed webhooks. */
export interface VonageWebhookTarget {
  /** Base URL of the control plane, e.g. `http://127.0.0.1:3000`. */
  controlPlaneUrl: string;
  /** The signature secret webhooks are signed with (HS256, §6). */
  signatureSecret: string;
  /** Default `/webhooks/vonage/voice/event`. */
  eventPath?: string;
}

/** How the simulated Vonage opens the WebSocket. */
export interface VonageCallerOptions {
  /** The NCCO endpoint's `headers`: flattened into `websocket:connected`. */
  headers?: Record<string, string>;
  /** Default `audio/l16;rate=16000`. */
  contentType?: string;
  /** Vonage's call `uuid` (event webhooks); default a random UUID. */
  uuid?: string;
  /** Vonage-style numbers (digits without `+`) for the event webhooks. */
  from?: string;
  to?: string;
  /** Post `answered` when connected and `disconnected`/`completed` at the end. */
  webhooks?: VonageWebhookTarget;
  /** Keep every received frame's audio (16 kHz samples) in {@link VonageCallerSimulator.receivedPcm}. */
  keepAudio?: boolean;
  /** The upgrade's `Authorization` header (what the NCCO endpoint's `authorization` asks for); none by default. */
  authorization?: string;
  /** Give up connecting after this long, ms. Default 5000. */
  connectTimeoutMs?: number;
}

/** A call dialled through the answer webhook (§1). */
export interface PlaceVonageCallOptions extends VonageWebhookTarget {
  /** Default `/webhooks/vonage/voice/answer`. */
  answerPath?: string;
  /** Vonage's default is GET with query parameters; applications may choose POST JSON. Default POST. */
  method?: 'GET' | 'POST';
  /** Numbers as Vonage sends them: E.164 digits without `+` (a leading `+` is removed). */
  from: string;
  to: string;
  uuid?: string;
  keepAudio?: boolean;
}

/** The NCCO connected a WebSocket (`call`), or talked and ended the call (`rejected`). */
export type PlacedVonageCall = { rejected: false; call: VonageCallerSimulator; ncco: unknown[] } | { rejected: true; say: string; ncco: unknown[] };

interface SpeechItem {
  bytes: Uint8Array;
  offset: number;
  startedAt: number | undefined;
  resolve: (r: { startedAt: number; endedAt: number }) => void;
  reject: (err: Error) => void;
}

type NccoEndpoint = { type?: string; uri?: string; 'content-type'?: string; headers?: Record<string, string>; authorization?: { type?: string; value?: string } };
type NccoAction = { action?: string; text?: string; endpoint?: NccoEndpoint[] };

/** Status code of each event webhook the simulator posted, by status. */
export type PostedEvent = { status: string; httpStatus: number };

/**
 * One simulated Vonage call. Inbound: a 640-byte L16 16 kHz frame every 20 ms from
 * `websocket:connected` to the end, speech from {@link say} (μ-law 8 kHz, resampled to
 * 16 kHz) or silence. Outbound: agent frames play at real time (modelled by
 * {@link CallerPlayback} on their 8 kHz μ-law equivalent). Vonage sends no marks or clears,
 * so {@link clears} stays empty. Times are `performance.now()` ms.
 */
export class VonageCallerSimulator extends EventEmitter<{ closed: [code: number] }> {
  readonly uuid: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Resolves with the close code once the socket is closed (by either side). */
  readonly closed: Promise<number>;
  /** Resolves once the end-of-call event webhooks (if any) were posted. */
  readonly eventsPosted: Promise<PostedEvent[]>;
  /** Agent frames received: arrival time and size. */
  readonly receivedFrames: { at: number; bytes: number }[] = [];
  /** Received agent audio at 16 kHz, when `keepAudio` was set. */
  readonly receivedPcm: Int16Array[] = [];
  /** What Vonage would treat as a protocol error: a text frame from us, or a frame that is not 640 bytes. */
  readonly protocolErrors: string[] = [];
  /** Inbound frames sent. */
  inboundFrames = 0;
  readonly clears: readonly number[] = [];

  private readonly playback = new CallerPlayback({ echoMark: () => {} });
  private readonly toMulaw = new L16ToMulaw();
  private readonly speech: SpeechItem[] = [];
  private readonly posted: PostedEvent[] = [];
  private startedAt = 0;
  private frameSlot = 0;
  private ended = false;
  private closedByUs = false;

  private constructor(
    private readonly ws: WebSocket,
    private readonly opts: VonageCallerOptions,
  ) {
    super();
    this.uuid = opts.uuid ?? randomUUID();
    this.headers = Object.freeze({ ...(opts.headers ?? {}) });
    this.closed = new Promise((resolve) => {
      ws.once('close', (code) => {
        this.finish();
        this.emit('closed', code);
        resolve(code);
      });
    });
    this.eventsPosted = this.closed.then(async () => {
      if (!this.closedByUs) await this.postEvent('disconnected');
      await this.postEvent('completed');
      return this.posted;
    });
    ws.on('error', () => {});
    ws.on('message', (data, isBinary) => this.onMessage(data, isBinary));
  }

  /** Open the socket as Vonage does (the URI as given), send `websocket:connected`, start the caller's frames. */
  static async connect(uri: string, opts: VonageCallerOptions = {}): Promise<VonageCallerSimulator> {
    const ws = new WebSocket(uri, { handshakeTimeout: opts.connectTimeoutMs ?? 5000, ...(opts.authorization ? { headers: { Authorization: opts.authorization } } : {}) });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('unexpected-response', (req, res) => {
        res.resume();
        req.destroy();
        reject(new StreamRefusedError(res.statusCode ?? 0));
      });
      ws.once('error', reject);
    });
    const sim = new VonageCallerSimulator(ws, opts);
    ws.send(connectedMessage(opts.contentType ?? 'audio/l16;rate=16000', { ...sim.headers }));
    sim.startedAt = simulatorTicker.add(sim);
    await sim.postEvent('answered');
    return sim;
  }

  /**
   * Dial through the control plane like Vonage: the signed answer webhook (POST JSON, or
   * GET with query parameters), then follow the NCCO: `connect` to a `websocket` → a
   * connected simulator with the endpoint's headers; `talk` → `{ rejected: true, say }`.
   */
  static async placeCall(opts: PlaceVonageCallOptions): Promise<PlacedVonageCall> {
    const uuid = opts.uuid ?? randomUUID();
    const [from, to] = [opts.from.replace(/^\+/, ''), opts.to.replace(/^\+/, '')];
    const fields = { to, from, uuid, conversation_uuid: `CON-${uuid}` };
    const url = opts.controlPlaneUrl.replace(/\/$/, '') + (opts.answerPath ?? '/webhooks/vonage/voice/answer');
    let res: Response;
    if (opts.method === 'GET') {
      res = await fetch(`${url}?${new URLSearchParams(fields).toString()}`, { headers: { authorization: `Bearer ${signVonageWebhook({ secret: opts.signatureSecret })}` } });
    } else {
      const body = JSON.stringify(fields);
      res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${signVonageWebhook({ secret: opts.signatureSecret, rawBody: body })}` }, body });
    }
    const text = await res.text();
    if (!res.ok) throw new Error(`answer webhook answered HTTP ${res.status}: ${text.slice(0, 200)}`);
    const ncco = JSON.parse(text) as NccoAction[];
    const endpoint = ncco.find((a) => a.action === 'connect')?.endpoint?.find((e) => e.type === 'websocket');
    if (!endpoint?.uri) return { rejected: true, say: ncco.find((a) => a.action === 'talk')?.text ?? '', ncco };
    // §2: `{type: 'vonage'}` → Vonage's signed JWT on the upgrade; `{type: 'custom', value}` → sent verbatim.
    const auth = endpoint.authorization;
    const authorization = auth?.type === 'vonage' ? `Bearer ${signVonageWebhook({ secret: opts.signatureSecret })}` : auth?.type === 'custom' ? auth.value : undefined;
    const call = await VonageCallerSimulator.connect(endpoint.uri, {
      headers: endpoint.headers ?? {},
      ...(authorization ? { authorization } : {}),
      contentType: endpoint['content-type'] ?? 'audio/l16;rate=16000',
      uuid,
      from,
      to,
      webhooks: opts,
      ...(opts.keepAudio ? { keepAudio: true } : {}),
    });
    return { rejected: false, call, ncco };
  }

  /** Speak μ-law 8 kHz audio (the shared speech fixtures): resampled to L16 16 kHz and queued after earlier speech. */
  say(mulaw: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    return this.sayL16(pcm16ToBytesLE(resample(mulawDecode(mulaw), 8000, 16_000)));
  }

  /** Speak L16 16 kHz little-endian bytes. Resolves when the last frame was sent; rejects if the call ends first. */
  sayL16(bytes: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    if (this.ended) return Promise.reject(new Error('call ended'));
    const spoken = new Promise<{ startedAt: number; endedAt: number }>((resolve, reject) => {
      if (bytes.byteLength === 0) {
        const now = performance.now();
        resolve({ startedAt: now, endedAt: now });
        return;
      }
      this.speech.push({ bytes, offset: 0, startedAt: undefined, resolve, reject });
    });
    spoken.catch(() => {});
    return spoken;
  }

  /** Press a key: one `websocket:dtmf` text frame. */
  pressDigit(digit: string): void {
    if (!/^[0-9*#]$/.test(digit)) throw new Error(`not a DTMF digit: ${digit}`);
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(dtmfMessage(digit));
  }

  /** The caller hangs up: Vonage closes the socket (1000), then posts `completed`. Resolves when closed. */
  async hangup(): Promise<number> {
    if (this.ws.readyState === WebSocket.OPEN) {
      this.closedByUs = true;
      this.finish();
      this.ws.close(1000);
    }
    return this.closed;
  }

  /** Non-silent agent audio that has played. */
  get agentAudio(): readonly PlayedChunk[] {
    return this.playback.played;
  }

  /** Milliseconds of non-silent agent audio the caller heard. */
  get heardAgentAudioMs(): number {
    return this.playback.heardMs;
  }

  /** Milliseconds of agent audio waiting to play. */
  get playbackQueuedMs(): number {
    return this.playback.queuedMs;
  }

  /** When the first non-silent agent audio that started playing at or after `t` started, or null. */
  firstAgentAudioAfter(t: number): number | null {
    return this.playback.played.find((c) => c.startedAt >= t)?.startedAt ?? null;
  }

  /** @internal Called by the shared ticker every ~20 ms. */
  tick(now: number): void {
    if (this.ended) return;
    this.playback.advance(now);
    const due = Math.floor((now - this.startedAt + TIMER_TOLERANCE_MS) / FRAME_MS) + 1;
    if (due - this.frameSlot > MAX_INBOUND_CATCH_UP) this.frameSlot = due - MAX_INBOUND_CATCH_UP;
    while (this.frameSlot < due && !this.ended) {
      const frame = this.nextSpeechFrame(now) ?? SILENCE;
      if (this.ws.readyState === WebSocket.OPEN) this.ws.send(frame, { binary: true });
      this.inboundFrames++;
      this.frameSlot++;
    }
  }

  private nextSpeechFrame(now: number): Uint8Array | null {
    const item = this.speech[0];
    if (!item) return null;
    item.startedAt ??= now;
    const end = Math.min(item.offset + L16_FRAME_BYTES, item.bytes.byteLength);
    let frame = item.bytes.subarray(item.offset, end);
    if (frame.byteLength < L16_FRAME_BYTES) {
      const padded = new Uint8Array(L16_FRAME_BYTES);
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
    if (!isBinary) {
      this.protocolErrors.push(`text frame: ${data.toString().slice(0, 80)}`);
      return;
    }
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    this.receivedFrames.push({ at: now, bytes: bytes.byteLength });
    if (bytes.byteLength !== L16_FRAME_BYTES) {
      this.protocolErrors.push(`frame of ${bytes.byteLength} bytes`);
      return;
    }
    if (this.opts.keepAudio) {
      const pcm = new Int16Array(bytes.byteLength / 2);
      for (let i = 0; i < pcm.length; i++) pcm[i] = bytes.readInt16LE(i * 2);
      this.receivedPcm.push(pcm);
    }
    this.playback.enqueueAudio(this.toMulaw.convert(bytes), now);
  }

  /** POSTs a signed event webhook (§4) when a target is configured; failures are recorded as status 0. */
  private async postEvent(status: string): Promise<void> {
    const target = this.opts.webhooks;
    if (!target) return;
    const body = JSON.stringify({
      from: this.opts.from ?? '',
      to: this.opts.to ?? '',
      uuid: this.uuid,
      conversation_uuid: `CON-${this.uuid}`,
      status,
      direction: 'inbound',
      timestamp: new Date().toISOString(),
      ...(status === 'disconnected' ? { headers: { ...this.headers } } : {}),
    });
    const url = target.controlPlaneUrl.replace(/\/$/, '') + (target.eventPath ?? '/webhooks/vonage/voice/event');
    try {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${signVonageWebhook({ secret: target.signatureSecret, rawBody: body })}` }, body });
      await res.arrayBuffer();
      this.posted.push({ status, httpStatus: res.status });
    } catch {
      this.posted.push({ status, httpStatus: 0 });
    }
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    simulatorTicker.remove(this);
    for (const item of this.speech.splice(0)) item.reject(new Error('call ended'));
  }
}
