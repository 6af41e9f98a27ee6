/**
 * One Twilio Media Stream (bidirectional `<Connect><Stream>`) as a {@link CallLeg}.
 * Wire protocol: reference/telephony-twilio.md §2. Pacing, marks, clear and pause/resume
 * are the carrier-neutral {@link PacedCallLeg}'s; this file only reads Twilio's messages.
 */
import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import type { CallLeg } from '../call-leg.js';
import { PacedCallLeg } from '../paced-call-leg.js';
import type { OutboundPacer } from './pacer.js';
import { OTHER_STREAM, OTHER_TRACK, clearMessage, decodeMediaPayload, markMessage, mediaFrameWriter, parseTwilioMessage, readInboundMediaBytes } from './serializer.js';
import type { TwilioInbound, TwilioStart } from './wire.js';

export { mediaStreamClosed } from '../paced-call-leg.js';
export type { LegEndReason, MediaStreamCloseReason } from '../paced-call-leg.js';

/** What the media-stream server hands a new leg. */
export interface TwilioLegOptions {
  /** The accepted socket, after `connected` and `start` were read from it. */
  socket: WebSocket;
  start: TwilioStart;
  pacer: OutboundPacer;
  logger: Logger;
}

/**
 * A Twilio stream after its `start`. Messages that are invalid or carry another streamSid
 * are logged and ignored (Twilio's own rule for bad messages, §2.2).
 */
export class TwilioLeg extends PacedCallLeg implements CallLeg {
  readonly provider = 'twilio' as const;
  readonly accountSid: string;
  readonly streamSid: string;
  /** Its UTF-8 bytes, compared with each `media` message's. */
  private readonly streamSidBytes: Buffer;
  readonly tracks: readonly string[];

  constructor(opts: TwilioLegOptions) {
    const s = opts.start.start;
    super({
      socket: opts.socket,
      pacer: opts.pacer,
      log: opts.logger.child({ provider: 'twilio', callSid: s.callSid, streamSid: s.streamSid }),
      callSid: s.callSid,
      parameters: s.customParameters,
      wire: { media: mediaFrameWriter(s.streamSid), mediaIsText: true, marks: { mark: (name) => markMessage(s.streamSid, name), clear: () => clearMessage(s.streamSid) } },
    });
    this.accountSid = s.accountSid;
    this.streamSid = s.streamSid;
    this.streamSidBytes = Buffer.from(s.streamSid, 'utf8');
    this.tracks = Object.freeze([...s.tracks]);
  }

  protected onMessage(data: RawData, isBinary: boolean): void {
    if (isBinary) {
      this.reject('invalid-shape', 'binary frame');
      return;
    }
    // 50 a second per call: the compact `media` layout is read from the received bytes,
    // without a string; everything else is parsed as text.
    if (Buffer.isBuffer(data)) {
      const audio = readInboundMediaBytes(data, this.streamSidBytes);
      if (audio === OTHER_STREAM) this.reject('invalid-shape', 'streamSid of another stream on media');
      else if (audio !== null && audio !== OTHER_TRACK) this.deliverAudio(audio);
      if (audio !== null) return;
    }
    const msg = parseTwilioMessage(data.toString(), (reason, detail) => this.reject(reason, detail));
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
        if (msg.media.track === 'inbound') this.deliverAudio(decodeMediaPayload(msg.media.payload));
        return;
      case 'dtmf':
        this.deliverDtmf(msg.dtmf.digit);
        return;
      case 'mark':
        this.deliverMarkEcho(msg.mark.name);
        return;
      case 'stop':
        // Twilio closes after `stop`; closing too frees the socket without waiting for it.
        this.remoteStopped();
        return;
      case 'connected':
      case 'start':
        this.log.debug({ event: msg.event }, 'repeated handshake message ignored');
        return;
    }
  }
}
