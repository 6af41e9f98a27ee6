import { describe, expect, it } from 'vitest';
import { listenQueryFromOptions, parseExtra, parseListenQuery, parseServerMessage } from '../../src/providers/deepgram/wire.js';

const results = {
  type: 'Results',
  channel_index: [0, 1],
  duration: 1.98,
  start: 4.02,
  is_final: true,
  speech_final: true,
  from_finalize: false,
  channel: {
    alternatives: [
      {
        transcript: "I'd like to book a table for two.",
        confidence: 0.987,
        words: [{ word: "i'd", start: 4.1, end: 4.3, confidence: 0.99, punctuated_word: "I'd" }],
      },
    ],
  },
  metadata: { request_id: '5d1e4a1e', model_info: { name: 'general-nova-3', version: '2024-12-20.0', arch: 'nova-3' }, model_uuid: '40bd' },
  brand_new_field: { anything: true },
};

describe('Deepgram server messages', () => {
  it('parses the documented Results example and drops unknown fields', () => {
    const parsed = parseServerMessage(JSON.stringify(results));
    expect(parsed.kind).toBe('message');
    if (parsed.kind !== 'message' || parsed.message.type !== 'Results') throw new Error('not Results');
    expect(parsed.message.channel.alternatives[0]!.words[0]!.punctuated_word).toBe("I'd");
    expect(parsed.message.metadata?.request_id).toBe('5d1e4a1e');
    expect('brand_new_field' in parsed.message).toBe(false);
  });

  it('parses UtteranceEnd, SpeechStarted and Metadata given as objects', () => {
    expect(parseServerMessage({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: 6.02 })).toMatchObject({ kind: 'message', message: { last_word_end: 6.02 } });
    expect(parseServerMessage({ type: 'SpeechStarted', channel: [0], timestamp: 9.54 })).toMatchObject({ kind: 'message', message: { timestamp: 9.54 } });
    expect(parseServerMessage({ type: 'Metadata', request_id: 'r1', duration: 42.7, channels: 1, models: ['x'] })).toMatchObject({ kind: 'message', message: { request_id: 'r1' } });
  });

  it('reports unknown types and non-JSON as unknown rather than failing', () => {
    expect(parseServerMessage({ type: 'Warning', message: 'x' })).toEqual({ kind: 'unknown', type: 'Warning' });
    expect(parseServerMessage('not json')).toEqual({ kind: 'unknown', type: undefined });
    expect(parseServerMessage(null)).toEqual({ kind: 'unknown', type: undefined });
  });

  it('reports a known type with a malformed body as invalid, naming the field', () => {
    const parsed = parseServerMessage({ type: 'SpeechStarted', timestamp: 'soon' });
    expect(parsed).toMatchObject({ kind: 'invalid', type: 'SpeechStarted' });
    expect(parsed.kind === 'invalid' && parsed.error).toContain('timestamp');
  });
});

describe('Deepgram listen query', () => {
  it('maps stream options to query parameters, tags to repeated extra', () => {
    const q = listenQueryFromOptions({
      encoding: 'mulaw',
      sampleRateHz: 8000,
      model: 'nova-2',
      language: 'en-US',
      interimResults: true,
      endpointingMs: 300,
      utteranceEndMs: 1000,
      punctuate: true,
      smartFormat: false,
      profanityFilter: true,
      tags: { call_sid: 'CA1', tenant: 'ten:1' },
    });
    expect(q).toEqual({
      encoding: 'mulaw',
      sample_rate: '8000',
      channels: '1',
      model: 'nova-2',
      language: 'en-US',
      interim_results: 'true',
      endpointing: '300',
      utterance_end_ms: '1000',
      vad_events: 'true',
      punctuate: 'true',
      smart_format: 'false',
      profanity_filter: 'true',
      extra: ['call_sid:CA1', 'tenant:ten:1'],
    });
  });

  it('omits utterance_end_ms without interim results and leaves unset flags out', () => {
    const q = listenQueryFromOptions({ encoding: 'linear16', sampleRateHz: 16000, interimResults: false, endpointingMs: 10, utteranceEndMs: 1000 });
    expect(q.utterance_end_ms).toBeUndefined();
    expect(q.punctuate).toBeUndefined();
    expect(q.extra).toBeUndefined();
    expect(q.interim_results).toBe('false');
  });

  it('splits extra values at the first colon', () => {
    expect(parseExtra(['call_sid:CA1', 'tenant:ten:1', 'novalue', ':x'])).toEqual({ call_sid: 'CA1', tenant: 'ten:1' });
  });

  it('reads the simulator settings, with endpointing=false and Deepgram defaults', () => {
    const parsed = parseListenQuery(new URLSearchParams('encoding=alaw&sample_rate=8000&endpointing=false'));
    expect(parsed.success && parsed.data).toMatchObject({ encoding: 'alaw', sample_rate: 8000, channels: 1, endpointing: false, interim_results: false, vad_events: false });
    const defaults = parseListenQuery(new URLSearchParams('encoding=linear16&sample_rate=16000'));
    expect(defaults.success && defaults.data.endpointing).toBe(10);
  });

  it('rejects raw audio without encoding or sample_rate', () => {
    expect(parseListenQuery(new URLSearchParams('sample_rate=8000')).success).toBe(false);
    expect(parseListenQuery(new URLSearchParams('encoding=mulaw')).success).toBe(false);
    expect(parseListenQuery(new URLSearchParams('encoding=opus&sample_rate=48000')).success).toBe(false);
  });
});
