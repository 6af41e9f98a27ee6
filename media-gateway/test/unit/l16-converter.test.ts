import { describe, expect, it } from 'vitest';
import { mulawDecode, mulawEncode, pcm16FromBytesLE, pcm16ToBytesLE } from '@vap/voice-pipeline';
import { L16_FRAME_BYTES, L16ToMulaw, MulawToL16 } from '../../src/vonage/l16-converter.js';

function tone(hz: number, rate: number, samples: number, amplitude = 8000): Int16Array {
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
  return out;
}

/** Dominant frequency by counting positive-going zero crossings (a clean sine). */
function frequencyHz(pcm: Int16Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) if (pcm[i - 1]! < 0 && pcm[i]! >= 0) crossings++;
  return (crossings * rate) / pcm.length;
}

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / pcm.length);
}

describe('μ-law 8 kHz ↔ L16 16 kHz frame conversion', () => {
  it('turns every 160-byte μ-law frame into exactly one 640-byte L16 frame, from the first one on', () => {
    const up = new MulawToL16();
    const mulaw = mulawEncode(tone(440, 8000, 160 * 50));
    for (let f = 0; f < 50; f++) expect(up.convert(mulaw.subarray(f * 160, (f + 1) * 160)).byteLength).toBe(L16_FRAME_BYTES);
  });

  it('turns every 640-byte L16 frame into exactly one 160-byte μ-law frame', () => {
    const down = new L16ToMulaw();
    const l16 = pcm16ToBytesLE(tone(440, 16000, 320 * 50));
    for (let f = 0; f < 50; f++) expect(down.convert(l16.slice(f * 640, (f + 1) * 640)).byteLength).toBe(160);
  });

  it('keeps a tone at its frequency and level both ways, with no clicks at frame boundaries', () => {
    const up = new MulawToL16();
    const src = mulawEncode(tone(1000, 8000, 160 * 50));
    const frames: Int16Array[] = [];
    for (let f = 0; f < 50; f++) frames.push(pcm16FromBytesLE(up.convert(src.subarray(f * 160, (f + 1) * 160)).slice()));
    const wide = new Int16Array(frames.reduce((n, x) => n + x.length, 0));
    frames.reduce((at, x) => (wide.set(x, at), at + x.length), 0);
    const steady = wide.subarray(1600); // after the first 100 ms
    expect(frequencyHz(steady, 16000)).toBeCloseTo(1000, -1);
    expect(rms(steady)).toBeGreaterThan(8000 * 0.7 * 0.9);
    // Sample-to-sample steps of a 1 kHz sine at 16 kHz stay under 2π·1000/16000·A ≈ 3142; a boundary click would not.
    let maxStep = 0;
    for (let i = 1; i < steady.length; i++) maxStep = Math.max(maxStep, Math.abs(steady[i]! - steady[i - 1]!));
    expect(maxStep).toBeLessThan(3600);

    const down = new L16ToMulaw();
    const back: Int16Array[] = [];
    const l16 = pcm16ToBytesLE(wide);
    for (let f = 0; f < 50; f++) back.push(mulawDecode(down.convert(l16.slice(f * 640, (f + 1) * 640))));
    const narrow = new Int16Array(160 * 50);
    back.forEach((x, i) => narrow.set(x, i * 160));
    expect(frequencyHz(narrow.subarray(800), 8000)).toBeCloseTo(1000, -1);
  });

  it('removes what 8 kHz cannot carry when going down (a 6 kHz tone is filtered, not aliased to 2 kHz)', () => {
    const down = new L16ToMulaw();
    const l16 = pcm16ToBytesLE(tone(6000, 16000, 320 * 20));
    const out: Int16Array[] = [];
    for (let f = 0; f < 20; f++) out.push(mulawDecode(down.convert(l16.slice(f * 640, (f + 1) * 640))));
    const narrow = new Int16Array(160 * 20);
    out.forEach((x, i) => narrow.set(x, i * 160));
    expect(rms(narrow.subarray(800))).toBeLessThan(200);
  });
});
