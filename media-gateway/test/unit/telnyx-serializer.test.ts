import { describe, expect, it } from 'vitest';
import { isSupportedTelnyxFormat, parseTelnyxGatewayMessage, parseTelnyxMessage, telnyxClearMessage, telnyxMarkMessage, telnyxMediaMessage, telnyxStartMessage } from '../../src/telnyx/serializer.js';
import { telnyxLegParameters } from '../../src/telnyx/telnyx-leg.js';
import { telnyxDtmfDigit } from '../../src/telnyx/wire.js';

// The reference's `start` frame (reference/telephony-telnyx.md §2.1), verbatim.
const REFERENCE_START = {
  event: 'start',
  sequence_number: '1',
  stream_id: '32de0dea-53cb-4b21-89a4-9e1819c043bc',
  start: {
    user_id: '3e6f995f-85f7-4705-9741-53b116d28237',
    call_control_id: 'v3:T02llQxIyaRkhfRKxgAP8nY511EhFLizdvdUKJiSw8d6A9BborherQ',
    call_session_id: 'ff55a038-6f5d-11ef-9692-02420aeffb1f',
    from: '+15551230001',
    to: '+15551230002',
    tags: ['tenant:acme'],
    client_state: 'eyJjYWxsSWQiOiJjYWxsXzAxSFpYMyJ9',
    custom_parameters: { callId: 'call_01HZX3' },
    media_format: { encoding: 'PCMU', sample_rate: 8000, channels: 1 },
  },
};

describe('Telnyx serializer', () => {
  it("reads the reference's start frame, and the leg parameters it gives", () => {
    const msg = parseTelnyxMessage(JSON.stringify(REFERENCE_START));
    expect(msg?.event).toBe('start');
    if (msg?.event !== 'start') return;
    expect(isSupportedTelnyxFormat(msg.start.media_format)).toBe(true);
    // client_state is base64 of {"callId":"call_01HZX3"}; custom parameters win over it.
    expect(telnyxLegParameters(msg.start, new URLSearchParams('agentId=agt_1&tenantId=ten_1&x=y'))).toEqual({
      agentId: 'agt_1',
      tenantId: 'ten_1',
      callSid: REFERENCE_START.start.call_control_id,
      from: '+15551230001',
      to: '+15551230002',
      callId: 'call_01HZX3',
    });
  });

  it('accepts custom parameters as a [{name, value}] list and numeric counters', () => {
    const start = { ...REFERENCE_START, sequence_number: 1, start: { ...REFERENCE_START.start, custom_parameters: [{ name: 'agentId', value: 'agt_2' }] } };
    const msg = parseTelnyxMessage(JSON.stringify(start));
    expect(msg?.event === 'start' && msg.start.custom_parameters).toEqual({ agentId: 'agt_2' });
    const media = parseTelnyxMessage(JSON.stringify({ event: 'media', media: { chunk: 2, timestamp: 5, payload: 'fn5+' } }));
    expect(media).toMatchObject({ event: 'media', media: { track: 'inbound', chunk: '2', timestamp: '5', payload: 'fn5+' } });
  });

  it('reads the key of a dtmf from dtmf.digit, else from payload.digit, and keeps dtmf.digit beside a payload wrapper without one', () => {
    const digitOf = (m: object) => {
      const msg = parseTelnyxMessage(JSON.stringify({ event: 'dtmf', stream_id: 's', ...m }));
      return msg?.event === 'dtmf' ? telnyxDtmfDigit(msg) : null;
    };
    expect(digitOf({ dtmf: { digit: '7' } })).toBe('7');
    expect(digitOf({ payload: { digit: '#' } })).toBe('#');
    expect(digitOf({ dtmf: { digit: '3' }, payload: { occurred_at: '2024-06-01T12:00:03.120Z' } })).toBe('3');
    expect(digitOf({ payload: { digit: '55' } })).toBeNull();
    expect(digitOf({ payload: {} })).toBeNull();
  });

  it('names why a frame is rejected, and ignores unknown events', () => {
    const why: string[] = [];
    const onReject = (reason: string, detail: string) => why.push(`${reason} ${detail}`);
    expect(parseTelnyxMessage('{nope', onReject)).toBeNull();
    expect(parseTelnyxMessage(JSON.stringify({ event: 'start', stream_id: 's', start: { media_format: { encoding: 'PCMU', sample_rate: 8000 } } }), onReject)).toBeNull();
    expect(parseTelnyxMessage(JSON.stringify({ event: 'media', media: {} }), onReject)).toBeNull();
    expect(parseTelnyxMessage(JSON.stringify({ event: 'dtmf', dtmf: { digit: '55' } }), onReject)).toBeNull();
    expect(parseTelnyxMessage(JSON.stringify({ event: 'transcription' }), onReject)).toBeNull();
    expect(why).toEqual([
      'invalid-json 5 chars',
      expect.stringMatching(/^invalid-shape start\.start\.call_control_id/),
      expect.stringMatching(/^invalid-shape media\.media\.payload/),
      expect.stringMatching(/^invalid-shape dtmf\.dtmf\.digit/),
      'unknown-event transcription',
    ]);
  });

  it('refuses a start in another codec, rate or channel count', () => {
    expect(isSupportedTelnyxFormat({ encoding: 'pcmu', sample_rate: 8000, channels: 1 })).toBe(true);
    expect(isSupportedTelnyxFormat({ encoding: 'PCMA', sample_rate: 8000, channels: 1 })).toBe(false);
    expect(isSupportedTelnyxFormat({ encoding: 'PCMU', sample_rate: 16000, channels: 1 })).toBe(false);
    expect(isSupportedTelnyxFormat({ encoding: 'PCMU', sample_rate: 8000, channels: 2 })).toBe(false);
  });

  it('writes the documented outbound frames (§2.2), which the strict simulator side reads back', () => {
    expect(JSON.parse(telnyxMediaMessage(new Uint8Array([0x7e, 0x7e, 0x7e])))).toEqual({ event: 'media', media: { payload: 'fn5+' } });
    expect(JSON.parse(telnyxMarkMessage('utt-"12"'))).toEqual({ event: 'mark', mark: { name: 'utt-"12"' } });
    expect(JSON.parse(telnyxClearMessage())).toEqual({ event: 'clear' });
    for (const text of [telnyxMediaMessage(new Uint8Array(160)), telnyxMarkMessage('m'), telnyxClearMessage()]) expect(parseTelnyxGatewayMessage(text)).not.toBeNull();
    // stream_id is optional on what we send; anything else is not part of the form.
    expect(parseTelnyxGatewayMessage(JSON.stringify({ event: 'clear', stream_id: 's' }))).not.toBeNull();
    expect(parseTelnyxGatewayMessage(JSON.stringify({ event: 'media', media: { payload: 'AA==', track: 'outbound' } }))).toBeNull();
  });

  it('writes a start frame the gateway reads back', () => {
    const text = telnyxStartMessage({ sequenceNumber: 1, streamId: 's1', callControlId: 'v3:x', callSessionId: 'cs', userId: 'u', customParameters: { a: 'b' } });
    expect(parseTelnyxMessage(text)).toMatchObject({ event: 'start', stream_id: 's1', start: { call_control_id: 'v3:x', custom_parameters: { a: 'b' }, client_state: null } });
  });
});
