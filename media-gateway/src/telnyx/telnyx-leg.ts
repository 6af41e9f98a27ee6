/**
 * One Telnyx media stream (TeXML `<Connect><Stream bidirectionalMode="rtp">`, PCMU 8 kHz)
 * as a {@link CallLeg}. Wire protocol: reference/telephony-telnyx.md §2. Pacing, marks,
 * clear and pause/resume are {@link PacedCallLeg}'s, shared with the Twilio leg.
 */
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { CallLeg } from '../call-leg.js';
import { PacedCallLeg } from '../paced-call-leg.js';
import type { OutboundPacer } from '../twilio/pacer.js';
import { decodeMediaPayload } from '../twilio/serializer.js';
import { ChunkReorderer } from './chunk-reorderer.js';
import { parseTelnyxMessage, telnyxClearMessage, telnyxMarkMessage, telnyxMediaMessage } from './serializer.js';
import { telnyxDtmfDigit } from './wire.js';
import type { TelnyxInbound, TelnyxStart } from './wire.js';

/** What the media-stream server hands a new leg. */
export interface TelnyxLegOptions {
  /** The accepted socket, after `start` was read from it. */
  socket: WebSocket;
  start: TelnyxStart;
  /** Routing values from the upgrade URL's query string (a convenience: Telnyx may drop it, §2). */
  query: URLSearchParams;
  pacer: OutboundPacer;
  logger: Logger;
}

const QUERY_PARAMETERS = ['agentId', 'tenantId', 'connectionType'] as const;

/** `client_state` (base64 JSON, §2.1) as string values, or nothing when it is not such an object. */
function clientStateParameters(clientState: string | null | undefined): Record<string, string> {
  if (!clientState) return {};
  try {
    const value: unknown = JSON.parse(Buffer.from(clientState, 'base64').toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string'));
  } catch {
    return {};
  }
}

/**
 * The parameters the session reads (agentId, tenantId, callSid, from, to, direction, …).
 * The TeXML `<Parameter>`s (`custom_parameters`) are what the control plane sent and win;
 * since their wiring is unconfirmed (§1), `client_state`, the `start` call fields and the
 * URL query fill in whatever they lack.
 */
export function telnyxLegParameters(start: TelnyxStart['start'], query: URLSearchParams): Record<string, string> {
  const params: Record<string, string> = {};
  for (const name of QUERY_PARAMETERS) {
    const v = query.get(name);
    if (v) params[name] = v;
  }
  params['callSid'] = start.call_control_id;
  if (start.from) params['from'] = start.from;
  if (start.to) params['to'] = start.to;
  return { ...params, ...clientStateParameters(start.client_state), ...start.custom_parameters };
}

/**
 * A Telnyx stream after its `start`. Caller frames are put back in `chunk` order (Telnyx does
 * not guarantee the order, §2.1); only the `inbound` track feeds the agent. Messages that are
 * invalid or carry another `stream_id` are logged and ignored; Telnyx `error` frames are logged.
 */
export class TelnyxLeg extends PacedCallLeg implements CallLeg {
  readonly provider = 'telnyx' as const;
  readonly streamId: string;
  readonly callControlId: string;
  private readonly reorder: ChunkReorderer<string>;

  constructor(opts: TelnyxLegOptions) {
    const s = opts.start.start;
    const parameters = telnyxLegParameters(s, opts.query);
    const callSid = parameters['callSid'] ?? s.call_control_id;
    super({
      socket: opts.socket,
      pacer: opts.pacer,
      log: opts.logger.child({ provider: 'telnyx', callSid, streamId: opts.start.stream_id }),
      callSid,
      parameters,
      wire: { media: telnyxMediaMessage, marks: { mark: telnyxMarkMessage, clear: telnyxClearMessage } },
    });
    this.streamId = opts.start.stream_id;
    this.callControlId = s.call_control_id;
    this.reorder = new ChunkReorderer((payload) => this.deliverAudio(decodeMediaPayload(payload)));
  }

  /** Caller frames dropped as late or duplicate, chunks given up as lost, and restarts of the chunk numbering, by the reorder buffer. */
  get reorderStats(): { dropped: number; skipped: number; resyncs: number } {
    return { dropped: this.reorder.dropped, skipped: this.reorder.skipped, resyncs: this.reorder.resyncs };
  }

  protected onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.reject('invalid-shape', 'binary frame');
      return;
    }
    const msg = parseTelnyxMessage(data.toString(), (reason, detail) => this.reject(reason, detail));
    if (!msg) return;
    if (msg.event !== 'connected' && msg.stream_id !== undefined && msg.stream_id !== this.streamId) {
      this.reject('invalid-shape', `stream_id of another stream on ${msg.event}`);
      return;
    }
    this.handle(msg);
  }

  private handle(msg: TelnyxInbound): void {
    switch (msg.event) {
      case 'media':
        if (msg.media.track === 'inbound') this.reorder.push(msg.media.chunk, msg.media.payload);
        return;
      case 'dtmf': {
        const digit = telnyxDtmfDigit(msg);
        if (digit !== undefined) this.deliverDtmf(digit);
        return;
      }
      case 'mark':
        this.deliverMarkEcho(msg.mark.name);
        return;
      case 'error':
        this.log.warn({ telnyxError: msg.payload }, 'Telnyx reported a media stream error');
        return;
      case 'stop':
        this.remoteStopped();
        return;
      case 'connected':
      case 'start':
        this.log.debug({ event: msg.event }, 'repeated handshake message ignored');
        return;
    }
  }
}
