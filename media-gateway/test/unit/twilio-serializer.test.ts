import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import {
  base64Into,
  base64Length,
  clearMessage,
  connectedMessage,
  decodeMediaPayload,
  dtmfMessage,
  inboundMediaMessage,
  isSupportedMediaFormat,
  markEchoMessage,
  markMessage,
  mediaFrameWriter,
  mediaMessage,
  mediaMessageWriter,
  parseGatewayMessage,
  parseTwilioMessage,
  startMessage,
  stopMessage,
  toBase64,
} from '../../src/twilio/serializer.js';
import type { OnReject, RejectReason } from '../../src/twilio/serializer.js';
import { twilioInboundSchema } from '../../src/twilio/wire.js';

const SID = 'MZ5d1a8f0c2b3e4d5f6a7b8c9d0e1f2a3b';

// Verbatim from reference/telephony-twilio.md §2.1.
const START = `{
  "event": "start",
  "sequenceNumber": "1",
  "streamSid": "${SID}",
  "start": {
    "streamSid": "${SID}",
    "accountSid": "AC0123456789abcdef0123456789abcdef",
    "callSid": "CA0123456789abcdef0123456789abcdef",
    "tracks": ["inbound"],
    "customParameters": { "callId": "call_01HZX3", "tenant": "acme" },
    "mediaFormat": { "encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1 }
  }
}`;

function rejected(text: string, parse: (text: string, onReject?: OnReject) => unknown = parseTwilioMessage): { msg: unknown; reasons: RejectReason[] } {
  const reasons: RejectReason[] = [];
  const msg = parse(text, (r) => reasons.push(r));
  return { msg, reasons };
}

describe('Twilio serializer, gateway side', () => {
  it('parses connected', () => {
    expect(parseTwilioMessage('{ "event": "connected", "protocol": "Call", "version": "1.0.0" }')).toEqual({ event: 'connected', protocol: 'Call', version: '1.0.0' });
  });

  it('parses the reference start message with its custom parameters and media format', () => {
    const msg = parseTwilioMessage(START);
    expect(msg?.event).toBe('start');
    if (msg?.event !== 'start') return;
    expect(msg.start.callSid).toBe('CA0123456789abcdef0123456789abcdef');
    expect(msg.start.customParameters).toEqual({ callId: 'call_01HZX3', tenant: 'acme' });
    expect(isSupportedMediaFormat(msg.start.mediaFormat)).toBe(true);
  });

  it('defaults missing customParameters to {} and keeps unknown fields', () => {
    const text = JSON.stringify({ event: 'start', streamSid: SID, extra: 1, start: { streamSid: SID, accountSid: 'AC1', callSid: 'CA1', mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 }, future: true } });
    const msg = parseTwilioMessage(text);
    expect(msg).toMatchObject({ event: 'start', extra: 1, start: { customParameters: {}, tracks: ['inbound'], future: true } });
  });

  it('parses media and decodes its base64 payload to μ-law bytes', () => {
    const msg = parseTwilioMessage(JSON.stringify({ event: 'media', sequenceNumber: '3', streamSid: SID, media: { track: 'inbound', chunk: '2', timestamp: '20', payload: Buffer.from([0xff, 0x00, 0x7f]).toString('base64') } }));
    expect(msg?.event).toBe('media');
    if (msg?.event !== 'media') return;
    expect([...decodeMediaPayload(msg.media.payload)]).toEqual([0xff, 0x00, 0x7f]);
  });

  it('accepts and refuses media exactly as the schema does (the hot path skips zod only for well-formed media)', () => {
    const payload = 'AA==';
    const cases: unknown[] = [
      { event: 'media', streamSid: SID, media: { payload } },
      { event: 'media', streamSid: SID, extra: { x: 1 }, media: { payload, future: 2 } },
      { event: 'media', streamSid: SID, media: { payload, track: 5 } },
      { event: 'media', streamSid: SID, media: { payload, chunk: 3 } },
      { event: 'media', streamSid: SID, media: { payload, timestamp: null } },
      { event: 'media', streamSid: SID, sequenceNumber: 4, media: { payload } },
      { event: 'media', streamSid: 7, media: { payload } },
      { event: 'media', streamSid: SID, media: [payload] },
      { event: 'media', streamSid: SID, media: { payload: 1 } },
    ];
    for (const c of cases) {
      const viaSchema = twilioInboundSchema.safeParse(c);
      const msg = parseTwilioMessage(JSON.stringify(c));
      expect(msg, JSON.stringify(c)).toEqual(viaSchema.success ? viaSchema.data : null);
    }
    // Defaults and unknown fields survive the hot path.
    expect(parseTwilioMessage(JSON.stringify(cases[1]))).toEqual({ event: 'media', streamSid: SID, extra: { x: 1 }, media: { payload, future: 2, track: 'inbound' } });
  });

  it('parses dtmf, mark and stop', () => {
    expect(parseTwilioMessage(JSON.stringify({ event: 'dtmf', sequenceNumber: '41', streamSid: SID, dtmf: { track: 'inbound_track', digit: '7' } }))).toMatchObject({ dtmf: { digit: '7' } });
    expect(parseTwilioMessage(JSON.stringify({ event: 'mark', sequenceNumber: '57', streamSid: SID, mark: { name: 'utt-12' } }))).toMatchObject({ mark: { name: 'utt-12' } });
    expect(parseTwilioMessage(JSON.stringify({ event: 'stop', sequenceNumber: '812', streamSid: SID, stop: { accountSid: 'AC1', callSid: 'CA1' } }))).toMatchObject({ event: 'stop', stop: { callSid: 'CA1' } });
  });

  it('returns null with a reason, without throwing, for bad input', () => {
    expect(rejected('not json')).toEqual({ msg: null, reasons: ['invalid-json'] });
    expect(rejected('[1,2]')).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected('null')).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected('{"streamSid":"MZ1"}')).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected(JSON.stringify({ event: 'media', streamSid: SID, media: { track: 'inbound' } }))).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected(JSON.stringify({ event: 'dtmf', streamSid: SID, dtmf: { digit: '77' } }))).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected(JSON.stringify({ event: 'start', streamSid: SID, start: { streamSid: SID } }))).toEqual({ msg: null, reasons: ['invalid-shape'] });
  });

  it('ignores events it does not know', () => {
    expect(rejected(JSON.stringify({ event: 'transcription', streamSid: SID }))).toEqual({ msg: null, reasons: ['unknown-event'] });
  });

  it('refuses media formats other than μ-law 8 kHz mono', () => {
    expect(isSupportedMediaFormat({ encoding: 'audio/x-mulaw', sampleRate: 16000, channels: 1 })).toBe(false);
    expect(isSupportedMediaFormat({ encoding: 'audio/x-alaw', sampleRate: 8000, channels: 1 })).toBe(false);
    expect(isSupportedMediaFormat({ encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 2 })).toBe(false);
  });

  it('builds media, mark and clear exactly as §2.2 shows them', () => {
    expect(JSON.parse(mediaMessage(SID, new Uint8Array([0x7e, 0x7e, 0x7e])))).toEqual({ event: 'media', streamSid: SID, media: { payload: 'fn5+' } });
    expect(JSON.parse(mediaMessage('MZ"\\1', new Uint8Array([0xff])))).toEqual({ event: 'media', streamSid: 'MZ"\\1', media: { payload: '/w==' } });
    expect(JSON.parse(markMessage(SID, 'utt-12'))).toEqual({ event: 'mark', streamSid: SID, mark: { name: 'utt-12' } });
    expect(JSON.parse(clearMessage(SID))).toEqual({ event: 'clear', streamSid: SID });
  });

  it('encodes only the view it is given, not the whole underlying buffer', () => {
    const whole = new Uint8Array([1, 2, 3, 4, 5, 6]);
    const payload = (JSON.parse(mediaMessage(SID, whole.subarray(2, 4))) as { media: { payload: string } }).media.payload;
    expect([...decodeMediaPayload(payload)]).toEqual([3, 4]);
  });

  it('encodes a range of a Buffer or of a view of one, as the paced leg hands frames out', () => {
    const whole = new Uint8Array([9, 1, 2, 3, 4, 5, 6, 9]);
    const view = whole.subarray(1, 7); // [1..6], at byteOffset 1
    const payload = (text: string): number[] => [...decodeMediaPayload((JSON.parse(text) as { media: { payload: string } }).media.payload)];
    const write = mediaMessageWriter(SID);
    expect(payload(write(view, 2, 5))).toEqual([3, 4, 5]);
    expect(payload(write(Buffer.from(view.buffer, view.byteOffset, view.byteLength), 2, 5))).toEqual([3, 4, 5]);
    expect(payload(write(view))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(toBase64(view, 4)).toBe(Buffer.from([5, 6]).toString('base64'));
  });

  it('writes base64 into bytes exactly as Node encodes it, for every length and offset', () => {
    const src = randomBytes(400);
    for (const [start, end] of [[0, 0], [0, 1], [0, 2], [0, 3], [5, 165], [1, 161], [7, 400], [399, 400], [0, 400]] as const) {
      const out = Buffer.alloc(base64Length(end - start) + 9, 0x2a);
      const after = base64Into(src, start, end, out, 5);
      expect(after).toBe(5 + base64Length(end - start));
      expect(out.toString('latin1', 5, after)).toBe(src.toString('base64', start, end));
      // Nothing written outside its range.
      expect([...out.subarray(0, 5), ...out.subarray(after)].every((b) => b === 0x2a)).toBe(true);
    }
  });

  it('builds the bytes of the same text as mediaMessageWriter, for any stream id and range', () => {
    const sids = [SID, 'MZ"quoted\\back', 'MZ été ✓', 'MZ\u0001ctl'];
    for (const sid of sids) {
      const asText = mediaMessageWriter(sid);
      const asBytes = mediaFrameWriter(sid);
      for (let n = 0; n < 40; n++) {
        const chunk = randomBytes(1 + Math.floor(Math.random() * 500));
        const start = Math.floor(Math.random() * chunk.length);
        const end = start + Math.floor(Math.random() * (chunk.length - start + 1));
        const bytes = asBytes(chunk, start, end);
        expect(bytes.toString('utf8')).toBe(asText(chunk, start, end));
        expect(JSON.parse(bytes.toString('utf8'))).toEqual({ event: 'media', streamSid: sid, media: { payload: chunk.toString('base64', start, end) } });
      }
      expect(asBytes(Buffer.from([1, 2, 3, 4])).toString()).toBe(asText(Buffer.from([1, 2, 3, 4])));
    }
    // Each frame its own bytes: the socket may still be writing the previous one.
    const write = mediaFrameWriter(SID);
    const first = write(Buffer.from([1, 2, 3]));
    const copy = Buffer.from(first);
    write(Buffer.from([4, 5, 6]));
    expect(first.equals(copy)).toBe(true);
  });
});

describe('Twilio serializer, Twilio side', () => {
  it('round-trips what the simulated caller sends through the gateway parser', () => {
    const frame = new Uint8Array(160).fill(0xff);
    const texts = [
      connectedMessage(),
      startMessage({ sequenceNumber: 1, streamSid: SID, accountSid: 'AC1', callSid: 'CA1', customParameters: { agentId: 'agt_1' } }),
      inboundMediaMessage({ sequenceNumber: 2, streamSid: SID, chunk: 1, timestampMs: 0, mulaw: frame }),
      dtmfMessage({ sequenceNumber: 3, streamSid: SID, digit: '#' }),
      markEchoMessage({ sequenceNumber: 4, streamSid: SID, name: 'm1' }),
      stopMessage({ sequenceNumber: 5, streamSid: SID, accountSid: 'AC1', callSid: 'CA1' }),
    ];
    const parsed = texts.map((t) => parseTwilioMessage(t));
    expect(parsed.map((m) => m?.event)).toEqual(['connected', 'start', 'media', 'dtmf', 'mark', 'stop']);
    expect(parsed[1]).toMatchObject({ sequenceNumber: '1', start: { customParameters: { agentId: 'agt_1' }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } } });
    expect(parsed[2]).toMatchObject({ sequenceNumber: '2', media: { track: 'inbound', chunk: '1', timestamp: '0' } });
  });

  it('reads the gateway messages strictly, as Twilio does (extra fields are error 31951)', () => {
    expect(parseGatewayMessage(mediaMessage(SID, new Uint8Array([1])))).toMatchObject({ event: 'media' });
    expect(parseGatewayMessage(markMessage(SID, 'x'))).toMatchObject({ event: 'mark', mark: { name: 'x' } });
    expect(parseGatewayMessage(clearMessage(SID))).toEqual({ event: 'clear', streamSid: SID });
    expect(rejected(JSON.stringify({ event: 'clear', streamSid: SID, extra: 1 }), parseGatewayMessage)).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected(JSON.stringify({ event: 'media', streamSid: SID, media: { payload: 'AA==', track: 'outbound' } }), parseGatewayMessage)).toEqual({ msg: null, reasons: ['invalid-shape'] });
    expect(rejected(JSON.stringify({ event: 'start', streamSid: SID }), parseGatewayMessage)).toEqual({ msg: null, reasons: ['unknown-event'] });
  });
});
