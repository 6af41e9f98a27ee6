/**
 * A simulated Vonage caller: the Vonage side of an NCCO `connect` to a WebSocket, faithful
 * to reference/telephony-vonage.md §1–§4 and §6 (signed answer and event webhooks, the
 * NCCO, `websocket:connected`, 640-byte L16 16 kHz frames both ways, DTMF, close).
 * Tests and the sandbox dial with it; the audio timing, playback model and call API are
 * {@link MulawCallerSimulator}'s, so `runCallerScript` drives it like the Twilio caller.
 */
import { randomUUID } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import { signVonageWebhook } from '@vap/shared';
import { mulawDecode, pcm16ToBytesLE, resample } from '@vap/voice-pipeline';
import { L16_FRAME_BYTES, L16ToMulaw } from '../vonage/l16-converter.js';
import { connectedMessage, dtmfMessage } from '../vonage/wire.js';
import { MulawCallerSimulator, openCarrierSocket } from './mulaw-caller.js';

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

type NccoEndpoint = { type?: string; uri?: string; 'content-type'?: string; headers?: Record<string, string>; authorization?: { type?: string; value?: string } };
type NccoAction = { action?: string; text?: string; endpoint?: NccoEndpoint[] };

/** Status code of each event webhook the simulator posted, by status. */
export type PostedEvent = { status: string; httpStatus: number };

/**
 * One simulated Vonage call (see {@link MulawCallerSimulator} for the audio timing). Inbound:
 * a 640-byte L16 16 kHz binary frame every 20 ms from `websocket:connected` to the end,
 * speech from {@link say} (μ-law 8 kHz, resampled to 16 kHz) or silence. Outbound: agent
 * frames play at real time (modelled on their 8 kHz μ-law equivalent). Vonage sends no marks
 * or clears, so {@link clears} and {@link marksEchoed} stay empty; `receivedMedia` counts
 * wire bytes (640 a frame).
 */
export class VonageCallerSimulator extends MulawCallerSimulator {
  readonly uuid: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Resolves once the end-of-call event webhooks (if any) were posted. */
  readonly eventsPosted: Promise<PostedEvent[]>;
  /** Received agent audio at 16 kHz, when `keepAudio` was set. */
  readonly receivedPcm: Int16Array[] = [];

  private readonly toMulaw = new L16ToMulaw();
  private readonly posted: PostedEvent[] = [];
  private closedByUs = false;

  private constructor(
    ws: WebSocket,
    private readonly opts: VonageCallerOptions,
  ) {
    super(ws, { bytes: L16_FRAME_BYTES, silence: 0 });
    this.uuid = opts.uuid ?? randomUUID();
    this.headers = Object.freeze({ ...(opts.headers ?? {}) });
    this.eventsPosted = this.closed.then(async () => {
      if (!this.closedByUs) await this.postEvent('disconnected');
      await this.postEvent('completed');
      return this.posted;
    });
  }

  /** Open the socket as Vonage does (the URI as given), send `websocket:connected`, start the caller's frames. */
  static async connect(uri: string, opts: VonageCallerOptions = {}): Promise<VonageCallerSimulator> {
    const ws = await openCarrierSocket(uri, opts.authorization ? { Authorization: opts.authorization } : {}, opts.connectTimeoutMs);
    const sim = new VonageCallerSimulator(ws, opts);
    sim.send(connectedMessage(opts.contentType ?? 'audio/l16;rate=16000', { ...sim.headers }));
    sim.startStreaming();
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
  override say(mulaw: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    return this.sayL16(pcm16ToBytesLE(resample(mulawDecode(mulaw), 8000, 16_000)));
  }

  /** Speak L16 16 kHz little-endian bytes. Resolves when the last frame was sent; rejects if the call ends first. */
  sayL16(bytes: Uint8Array): Promise<{ startedAt: number; endedAt: number }> {
    return this.queueSpeech(bytes);
  }

  /** The caller hangs up: Vonage closes the socket (1000), then posts `completed`. Resolves when closed. */
  override async hangup(): Promise<number> {
    if (this.ws.readyState === this.ws.OPEN) this.closedByUs = true;
    return super.hangup();
  }

  protected inboundMessage(_chunk: number, _timestampMs: number, frame: Uint8Array): Uint8Array {
    return frame;
  }

  /** Vonage has no marks: the gateway never sends one, so there is nothing to echo. */
  protected markEchoText(): null {
    return null;
  }

  /** One `websocket:dtmf` text frame; Vonage's keypad has no A–D. */
  protected dtmfText(digit: string): string {
    if (!/^[0-9*#]$/.test(digit)) throw new Error(`not a Vonage DTMF digit: ${digit}`);
    return dtmfMessage(digit);
  }

  /** Vonage says nothing before closing the socket (§3.3). */
  protected stopText(): null {
    return null;
  }

  protected onMessage(data: RawData, isBinary: boolean, now: number): void {
    if (!isBinary) {
      this.protocolErrors.push(`text frame: ${data.toString().slice(0, 80)}`);
      return;
    }
    const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.isBuffer(data) ? data : Buffer.from(data);
    if (bytes.byteLength !== L16_FRAME_BYTES) {
      this.receivedMedia.push({ at: now, bytes: bytes.byteLength });
      this.protocolErrors.push(`frame of ${bytes.byteLength} bytes`);
      return;
    }
    if (this.opts.keepAudio) {
      const pcm = new Int16Array(bytes.byteLength / 2);
      for (let i = 0; i < pcm.length; i++) pcm[i] = bytes.readInt16LE(i * 2);
      this.receivedPcm.push(pcm);
    }
    this.playAudio(this.toMulaw.convert(bytes), bytes.byteLength, now);
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
}
