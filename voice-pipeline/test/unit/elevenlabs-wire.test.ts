import { describe, expect, it } from 'vitest';
import { characterTimings } from '../../src/providers/elevenlabs/sim-audio.js';
import { rawFormatSpec } from '../../src/audio/output-formats.js';
import { parseServerMessage, streamInputPath, toWebSocketBase, toWireVoiceSettings } from '../../src/providers/elevenlabs/wire.js';

describe('ElevenLabs wire', () => {
  it('decodes an audio message and its alignment, accepting both spellings of the durations', () => {
    const audio = Buffer.from([1, 2, 3]).toString('base64');
    for (const durations of ['charDurationsMs', 'charsDurationsMs']) {
      const msg = parseServerMessage(JSON.stringify({ audio, isFinal: false, alignment: { chars: ['H', 'i'], charStartTimesMs: [0, 40], [durations]: [40, 50] } }));
      expect(msg).toEqual({ kind: 'audio', audio: new Uint8Array([1, 2, 3]), alignment: { chars: ['H', 'i'], startMs: [0, 40], durationMs: [40, 50] } });
    }
  });

  it('gives a null alignment when it is null, missing or has arrays of unequal length', () => {
    const audio = Buffer.from([9]).toString('base64');
    expect(parseServerMessage(JSON.stringify({ audio, alignment: null }))).toMatchObject({ kind: 'audio', alignment: null });
    expect(parseServerMessage(JSON.stringify({ audio }))).toMatchObject({ kind: 'audio', alignment: null });
    expect(parseServerMessage(JSON.stringify({ audio, alignment: { chars: ['a'], charStartTimesMs: [], charDurationsMs: [1] } }))).toMatchObject({ alignment: null });
  });

  it('recognises isFinal (either spelling), errors and ignores the rest', () => {
    expect(parseServerMessage('{"isFinal":true}')).toEqual({ kind: 'final' });
    expect(parseServerMessage('{"is_final":true,"audio":null}')).toEqual({ kind: 'final' });
    expect(parseServerMessage('{"message":"No credits","error":"quota_exceeded","code":1008}')).toEqual({ kind: 'error', error: 'quota_exceeded', message: 'No credits', code: 1008 });
    expect(parseServerMessage('{"audio":"","isFinal":null}')).toEqual({ kind: 'ignored' });
    expect(parseServerMessage('not json')).toEqual({ kind: 'ignored' });
  });

  it('maps voice settings to snake_case and leaves unset ones out', () => {
    expect(toWireVoiceSettings({ similarityBoost: 0.7, useSpeakerBoost: false })).toEqual({ similarity_boost: 0.7, use_speaker_boost: false });
  });

  it('derives ws/wss from the base URL and escapes the voice id in the path', () => {
    expect(toWebSocketBase('https://api.elevenlabs.io/')).toBe('wss://api.elevenlabs.io');
    expect(toWebSocketBase('http://127.0.0.1:4100')).toBe('ws://127.0.0.1:4100');
    expect(streamInputPath('a/b')).toBe('/v1/text-to-speech/a%2Fb/stream-input');
  });

  it('knows the raw output formats and refuses compressed ones', () => {
    expect(rawFormatSpec('ulaw_8000')).toEqual({ encoding: 'mulaw', sampleRateHz: 8000, bytesPerSample: 1 });
    expect(rawFormatSpec('pcm_22050')).toEqual({ encoding: 'pcm16', sampleRateHz: 22050, bytesPerSample: 2 });
    expect(rawFormatSpec('mp3_44100_128')).toBeNull();
  });

  it('spreads simulated character timings over the whole duration without gaps', () => {
    const t = characterTimings('Hi, you.', 800);
    expect(t.chars.join('')).toBe('Hi, you.');
    expect(t.startMs[0]).toBe(0);
    for (let i = 1; i < t.chars.length; i++) expect(t.startMs[i]).toBe(t.startMs[i - 1]! + t.durationMs[i - 1]!);
    expect(t.startMs.at(-1)! + t.durationMs.at(-1)!).toBe(800);
  });
});
