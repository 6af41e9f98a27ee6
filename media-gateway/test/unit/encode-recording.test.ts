import { describe, expect, it } from 'vitest';
import { mulawDecode, mulawEncode, parseWav } from '@vap/voice-pipeline';
import { encodeRecording } from '../../src/recording/encode-recording.js';
import type { EncodeRequest } from '../../src/recording/encode-recording.js';
import { countFrames } from '../../src/recording/mp3-info-frame.js';
import { decodeMp3, mp3Channels, onsetMs, rms } from '../recording-audio.js';

const TABLE = mulawDecode(Uint8Array.from({ length: 256 }, (_, i) => i));
const RATE = 8000;

/** μ-law of a tone over [fromMs, toMs) of a track `lengthMs` long, in one chunk. */
function toneTrack(lengthMs: number, fromMs: number, toMs: number, hz: number): Uint8Array {
  const pcm = new Int16Array(lengthMs * 8);
  for (let i = fromMs * 8; i < toMs * 8; i++) pcm[i] = Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / RATE));
  return mulawEncode(pcm);
}

function request(over: Partial<EncodeRequest>, lengthMs = 3000): EncodeRequest {
  // Caller talks 0.5–1.5 s, agent 1.8–2.6 s.
  return {
    format: 'mp3',
    channels: 2,
    lengthSamples: lengthMs * 8,
    chunkSamples: lengthMs * 8,
    caller: [toneTrack(lengthMs, 500, 1500, 440)],
    agent: [toneTrack(lengthMs, 1800, 2600, 300)],
    ...over,
  };
}

describe('encodeRecording', () => {
  it('makes a stereo MP3 with the caller left and the agent right, as long as the call and starting at its t=0', async () => {
    const mp3 = encodeRecording(request({}), TABLE);
    const decoded = await decodeMp3(mp3);
    expect(decoded.errors).toEqual([]);
    expect(decoded.sampleRate).toBe(RATE);
    expect(mp3Channels(mp3)).toBe(2);
    // The Info frame's delay and padding let a gapless decoder return exactly the input length.
    expect(decoded.samplesDecoded).toBe(3000 * 8);
    const [left, right] = decoded.channelData as [Float32Array, Float32Array];
    expect(rms(left, 600, 1400)).toBeGreaterThan(0.1);
    expect(rms(right, 600, 1400)).toBeLessThan(0.01);
    expect(rms(right, 1900, 2500)).toBeGreaterThan(0.1);
    expect(rms(left, 1900, 2500)).toBeLessThan(0.01);
    // Aligned to the millisecond scale that matters (one 5 ms window).
    expect(Math.abs(onsetMs(left, 0.05) - 500)).toBeLessThanOrEqual(5);
    expect(Math.abs(onsetMs(right, 0.05) - 1800)).toBeLessThanOrEqual(5);
    // ~32 kbps: 3 s ≈ 12 KB (plus the 288-byte Info frame).
    expect(mp3.length).toBeGreaterThan(10_000);
    expect(mp3.length).toBeLessThan(14_000);
    expect(countFrames(mp3, 32)).toBe(mp3.length / 288);
  });

  it('mixes both tracks into one channel for a mono MP3', async () => {
    const mp3 = encodeRecording(request({ channels: 1 }), TABLE);
    expect(mp3Channels(mp3)).toBe(1);
    const decoded = await decodeMp3(mp3);
    expect(decoded.samplesDecoded).toBe(3000 * 8);
    const mono = decoded.channelData[0]!;
    expect(decoded.channelData[1]).toEqual(mono); // the decoder's second channel repeats the only one
    expect(rms(mono, 600, 1400)).toBeGreaterThan(0.1);
    expect(rms(mono, 1900, 2500)).toBeGreaterThan(0.1);
    expect(rms(mono, 0, 450)).toBeLessThan(0.01);
  });

  it('makes a 16-bit PCM WAV, interleaved caller/agent, bit-exact to the μ-law decode', () => {
    const req = request({ format: 'wav' });
    const callerPcm = mulawDecode(req.caller[0]!);
    const agentPcm = mulawDecode(req.agent[0]!);
    const wav = encodeRecording(req, TABLE);
    const parsed = parseWav(wav);
    expect(parsed.channels).toBe(2);
    expect(parsed.sampleRateHz).toBe(RATE);
    expect(wav.length).toBe(44 + 3000 * 8 * 4);
    const view = new DataView(wav.buffer, wav.byteOffset);
    for (const i of [0, 4000, 4321, 15000, 23999]) {
      expect(view.getInt16(44 + i * 4, true)).toBe(callerPcm[i]);
      expect(view.getInt16(44 + i * 4 + 2, true)).toBe(agentPcm[i]);
    }
  });

  it('treats unwritten chunks as silence and a mono WAV as the clipped sum', () => {
    const loud = new Uint8Array(8000).fill(0x80); // μ-law 0x80: +32124
    const wav = encodeRecording({ format: 'wav', channels: 1, lengthSamples: 12_000, chunkSamples: 8000, caller: [loud, null], agent: [loud, null] }, TABLE);
    const parsed = parseWav(wav);
    expect(parsed.channels).toBe(1);
    expect(parsed.pcm).toHaveLength(12_000);
    expect(parsed.pcm[0]).toBe(32767);
    expect(parsed.pcm[7999]).toBe(32767);
    expect(parsed.pcm[8000]).toBe(0);
    expect(parsed.pcm[11_999]).toBe(0);
  });
});
