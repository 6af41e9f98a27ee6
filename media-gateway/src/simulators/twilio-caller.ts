/**
 * A simulated Twilio caller: the Twilio side of a bidirectional Media Stream, faithful to
 * reference/telephony-twilio.md §2 (and §3/§4.1 for dialling through the voice webhook).
 * Tests, the sandbox call command and the load generator all dial with it.
 */
import { randomBytes } from 'node:crypto';
import type { RawData, WebSocket } from 'ws';
import { computeTwilioSignature } from '@vap/shared';
import { connectedMessage, dtmfMessage, inboundMediaMessage, markEchoMessage, parseGatewayMessage, startMessage, stopMessage } from '../twilio/serializer.js';
import { MulawCallerSimulator, openCarrierSocket } from './mulaw-caller.js';
import { readTwiml } from './twiml-reader.js';

export type { PlayedChunk } from './caller-playback.js';
export { StreamRefusedError } from './mulaw-caller.js';

/** A Twilio-shaped SID: two-letter prefix + 32 hex characters. */
export function twilioSid(prefix: 'CA' | 'AC' | 'MZ'): string {
  return prefix + randomBytes(16).toString('hex');
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

/**
 * One simulated call. Inbound: `media` every 20 ms at real time from `start` to the end,
 * speech from {@link say} or μ-law silence (a phone line never goes quiet on the wire).
 * Outbound: agent audio plays from a queue at real time, marks are echoed when the audio
 * before them has played, `clear` empties the queue and echoes pending marks at once.
 * Times are `performance.now()` ms.
 */
export class TwilioCallerSimulator extends MulawCallerSimulator {
  readonly callSid: string;
  readonly accountSid: string;
  readonly streamSid: string;
  readonly from: string | undefined;
  readonly to: string | undefined;
  readonly customParameters: Readonly<Record<string, string>>;

  private constructor(ws: WebSocket, opts: TwilioCallerOptions) {
    super(ws);
    this.callSid = opts.callSid ?? twilioSid('CA');
    this.accountSid = opts.accountSid ?? twilioSid('AC');
    this.streamSid = twilioSid('MZ');
    this.from = opts.from;
    this.to = opts.to;
    this.customParameters = Object.freeze({ ...(opts.customParameters ?? {}) });
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
    const ws = await openCarrierSocket(bare, headers, opts.connectTimeoutMs);
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

  private begin(): void {
    this.send(connectedMessage());
    this.send(startMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, accountSid: this.accountSid, callSid: this.callSid, customParameters: { ...this.customParameters } }));
    this.startStreaming();
  }

  protected inboundMessage(chunk: number, timestampMs: number, mulaw: Uint8Array): string {
    return inboundMediaMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, chunk, timestampMs, mulaw });
  }

  protected markEchoText(name: string): string {
    return markEchoMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, name });
  }

  protected dtmfText(digit: string): string {
    return dtmfMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, digit });
  }

  protected stopText(): string {
    return stopMessage({ sequenceNumber: ++this.seq, streamSid: this.streamSid, accountSid: this.accountSid, callSid: this.callSid });
  }

  protected onMessage(data: RawData, isBinary: boolean, now: number): void {
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
    this.play(msg, now);
  }
}
