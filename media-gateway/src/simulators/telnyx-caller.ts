/**
 * A simulated Telnyx caller: the Telnyx side of a TeXML `<Connect><Stream
 * bidirectionalMode="rtp">` media stream, faithful to reference/telephony-telnyx.md §1, §2
 * and §5 (signed voice webhook, TeXML, snake_case WebSocket frames, PCMU 8 kHz both ways).
 * Tests and the sandbox dial with it; `runCallerScript` drives it like the Twilio caller.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import { telnyxSignatureHeaders } from '@vap/shared';
import {
  parseTelnyxGatewayMessage,
  telnyxConnectedMessage,
  telnyxDtmfMessage,
  telnyxInboundMediaMessage,
  telnyxMarkEchoMessage,
  telnyxStartMessage,
  telnyxStopMessage,
} from '../telnyx/serializer.js';
import type { TelnyxMediaFormat } from '../telnyx/wire.js';
import { MulawCallerSimulator, openCarrierSocket } from './mulaw-caller.js';
import { readTwiml } from './twiml-reader.js';

/** A Telnyx-shaped Call Control id (`v3:` + 54 base64url characters). */
export function telnyxCallControlId(): string {
  return `v3:${randomBytes(40).toString('base64url')}`;
}

/** How the simulated Telnyx opens a stream. */
export interface TelnyxCallerOptions {
  /** `start.call_control_id` (the TeXML webhook's `CallSid`); default a new one. */
  callControlId?: string;
  /** The TeXML `<Parameter>`s: they arrive as `start.custom_parameters`. */
  customParameters?: Record<string, string>;
  /** `start.client_state` (base64), as a Call Control command would have set it. */
  clientState?: string;
  from?: string;
  to?: string;
  /** Keep the stream URL's query string (whether Telnyx does is unconfirmed, §2). Default false. */
  keepQuery?: boolean;
  /** Send every Nth caller frame after the one following it (Telnyx does not guarantee order, §2.1). Default 0: in order. */
  swapEvery?: number;
  /** `start.media_format`; default PCMU 8000 Hz mono. */
  mediaFormat?: TelnyxMediaFormat;
  /** Give up connecting after this long, ms. Default 5000. */
  connectTimeoutMs?: number;
}

/** A call dialled through the control plane's TeXML voice webhook. */
export interface PlaceTelnyxCallOptions {
  /** Base URL of the control plane, e.g. `http://127.0.0.1:3000`. */
  controlPlaneUrl: string;
  /** Default `/webhooks/telnyx/voice`. */
  voiceWebhookPath?: string;
  /** Telnyx's signing key (the control plane verifies with its public half, §5). */
  signingKey: KeyObject;
  from: string;
  to: string;
  callControlId?: string;
  /** Stream options (swapEvery, keepQuery, …). */
  stream?: Omit<TelnyxCallerOptions, 'callControlId' | 'customParameters' | 'from' | 'to'>;
}

/** The webhook connected a stream (`call`), or ended the call with a `<Say>` (`rejected`). */
export type PlacedTelnyxCall = { rejected: false; call: TelnyxCallerSimulator; texml: string } | { rejected: true; say: string; texml: string };

/**
 * One simulated Telnyx call (see {@link MulawCallerSimulator} for the audio timing). Frames
 * from the gateway are checked like Telnyx would: JSON only, the documented fields only,
 * `stream_id` (optional) ours; anything else lands in `protocolErrors`.
 */
export class TelnyxCallerSimulator extends MulawCallerSimulator {
  readonly callControlId: string;
  readonly streamId = randomUUID();
  readonly callSessionId = randomUUID();
  readonly userId = randomUUID();
  readonly customParameters: Readonly<Record<string, string>>;
  private readonly swapEvery: number;
  private heldFrame: string | Uint8Array | undefined;

  private constructor(
    ws: WebSocket,
    private readonly opts: TelnyxCallerOptions,
  ) {
    super(ws);
    this.callControlId = opts.callControlId ?? telnyxCallControlId();
    this.customParameters = Object.freeze({ ...(opts.customParameters ?? {}) });
    this.swapEvery = opts.swapEvery ?? 0;
  }

  /**
   * Open a stream as Telnyx does (the query string dropped unless `keepQuery`), send
   * `connected` and `start`, and begin caller audio. Rejects with `StreamRefusedError` when
   * the upgrade is answered with an HTTP status.
   */
  static async connect(streamUrl: string, opts: TelnyxCallerOptions = {}): Promise<TelnyxCallerSimulator> {
    const url = opts.keepQuery ? streamUrl.split('#')[0]! : streamUrl.split('#')[0]!.split('?')[0]!;
    const ws = await openCarrierSocket(url, { 'User-Agent': 'Telnyx-Media-Streaming/1.0' }, opts.connectTimeoutMs);
    const sim = new TelnyxCallerSimulator(ws, opts);
    sim.begin();
    return sim;
  }

  /**
   * Dial through the control plane like a TeXML application: POST the signed, form-encoded
   * voice webhook (§1, §5), then follow the TeXML: `<Connect><Stream>` → a connected simulator
   * with the `<Parameter>`s as custom parameters; `<Say>…<Hangup/>` → `{ rejected: true, say }`.
   * Throws when the stream is not bidirectional RTP PCMU 8 kHz (the simulator plays no MP3).
   */
  static async placeCall(opts: PlaceTelnyxCallOptions): Promise<PlacedTelnyxCall> {
    const url = opts.controlPlaneUrl.replace(/\/$/, '') + (opts.voiceWebhookPath ?? '/webhooks/telnyx/voice');
    const callControlId = opts.callControlId ?? telnyxCallControlId();
    const body = new URLSearchParams({ AccountSid: randomUUID(), CallSid: callControlId, From: opts.from, To: opts.to, CallStatus: 'ringing', Direction: 'inbound' }).toString();
    const res = await fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded', ...telnyxSignatureHeaders(opts.signingKey, body) }, body });
    const texml = await res.text();
    if (!res.ok) throw new Error(`voice webhook answered HTTP ${res.status}: ${texml.slice(0, 200)}`);
    const action = readTwiml(texml);
    if (action.kind === 'end') return { rejected: true, say: action.say ?? '', texml };
    const a = action.attributes;
    if (a['bidirectionalMode'] !== 'rtp' || (a['bidirectionalCodec'] ?? 'PCMU') !== 'PCMU' || (a['bidirectionalSamplingRate'] ?? '8000') !== '8000') {
      throw new Error(`TeXML stream is not bidirectional RTP PCMU 8 kHz: ${JSON.stringify(a)}`);
    }
    const call = await TelnyxCallerSimulator.connect(action.url, { ...opts.stream, callControlId, customParameters: action.customParameters, from: opts.from, to: opts.to });
    return { rejected: false, call, texml };
  }

  private begin(): void {
    this.send(telnyxConnectedMessage());
    this.send(
      telnyxStartMessage({
        sequenceNumber: ++this.seq,
        streamId: this.streamId,
        callControlId: this.callControlId,
        callSessionId: this.callSessionId,
        userId: this.userId,
        from: this.opts.from,
        to: this.opts.to,
        clientState: this.opts.clientState,
        customParameters: { ...this.customParameters },
        mediaFormat: this.opts.mediaFormat,
      }),
    );
    this.startStreaming();
  }

  protected inboundMessage(chunk: number, timestampMs: number, mulaw: Uint8Array): string {
    return telnyxInboundMediaMessage({ sequenceNumber: ++this.seq, streamId: this.streamId, chunk, timestampMs, mulaw });
  }

  /** Every `swapEvery`th frame is held back and sent right after the next one. */
  protected override sendInbound(text: string | Uint8Array): void {
    if (this.heldFrame !== undefined) {
      this.send(text);
      this.send(this.heldFrame);
      this.heldFrame = undefined;
    } else if (this.swapEvery > 0 && this.inboundFrames % this.swapEvery === 0) {
      this.heldFrame = text;
    } else {
      this.send(text);
    }
  }

  protected markEchoText(name: string): string {
    return telnyxMarkEchoMessage({ sequenceNumber: ++this.seq, streamId: this.streamId, name });
  }

  protected dtmfText(digit: string): string {
    return telnyxDtmfMessage({ sequenceNumber: ++this.seq, streamId: this.streamId, digit });
  }

  protected stopText(): string {
    return telnyxStopMessage({ sequenceNumber: ++this.seq, streamId: this.streamId, userId: this.userId, callControlId: this.callControlId });
  }

  protected onMessage(data: RawData, isBinary: boolean, now: number): void {
    if (isBinary) {
      this.protocolErrors.push('binary frame (the documented form is JSON media)');
      return;
    }
    const msg = parseTelnyxGatewayMessage(data.toString(), (reason, detail) => this.protocolErrors.push(`${reason}: ${detail}`));
    if (!msg) return;
    if (msg.stream_id !== undefined && msg.stream_id !== this.streamId) {
      this.protocolErrors.push(`wrong stream_id on ${msg.event}`);
      return;
    }
    this.play(msg, now);
  }
}
