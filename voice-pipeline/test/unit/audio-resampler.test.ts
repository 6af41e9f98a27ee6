import { describe, expect, it } from 'vitest';
import { Resampler, resample } from '../../src/audio/resampler.js';
import { concatInt16 } from '../../src/audio/pcm.js';
import { chunks, rms, sine, zeroCrossings } from './audio-signals.js';

const RATES = [8000, 16000, 22050, 24000, 44100, 48000];
const PAIRS = RATES.flatMap((from) => RATES.filter((to) => to !== from).map((to) => [from, to] as const));

function streamed(from: number, to: number, input: Int16Array, maxChunk: number): Int16Array {
  const r = new Resampler(from, to);
  return concatInt16([...chunks(input, maxChunk).map((c) => r.process(c)), r.flush()]);
}

/** Level of `pcm` relative to `reference` in dB, ignoring the first and last 10 %. */
function gainDb(pcm: Int16Array, referenceRms: number): number {
  const edge = Math.floor(pcm.length / 10);
  return 20 * Math.log10(rms(pcm, edge, pcm.length - edge) / referenceRms);
}

describe('Resampler', () => {
  it('keeps a 1 kHz sine at the same frequency and amplitude through 8k → 16k → 8k', () => {
    const input = sine(1000, 8000, 1);
    const up = resample(input, 8000, 16000);
    const back = resample(up, 16000, 8000);
    expect(up).toHaveLength(16000);
    expect(back).toHaveLength(8000);
    // 1 kHz has 2000 zero crossings per second; count over the middle 0.8 s.
    expect(zeroCrossings(up, 1600, 14400)).toBeGreaterThanOrEqual(1598);
    expect(zeroCrossings(up, 1600, 14400)).toBeLessThanOrEqual(1602);
    expect(zeroCrossings(back, 800, 7200)).toBeGreaterThanOrEqual(1598);
    expect(zeroCrossings(back, 800, 7200)).toBeLessThanOrEqual(1602);
    const inputRms = rms(input);
    expect(Math.abs(rms(up, 1600, 14400) / inputRms - 1)).toBeLessThan(0.02);
    expect(Math.abs(rms(back, 800, 7200) / inputRms - 1)).toBeLessThan(0.02);
  });

  it('returns to the original samples closely after 8k → 16k → 8k (no delay is introduced)', () => {
    const input = sine(700, 8000, 0.5);
    const back = resample(resample(input, 8000, 16000), 16000, 8000);
    let worst = 0;
    for (let i = 400; i < 3600; i++) worst = Math.max(worst, Math.abs(back[i]! - input[i]!));
    expect(worst).toBeLessThan(100); // 1 % of the 10,000 peak
  });

  it.each(PAIRS)('keeps a 1 kHz sine within 1 %% in amplitude from %i to %i Hz', (from, to) => {
    const input = sine(1000, from, 0.25);
    const out = resample(input, from, to);
    expect(Math.abs(gainDb(out, rms(input)))).toBeLessThan(0.09);
    const edge = Math.floor(out.length / 10);
    const seconds = (out.length - 2 * edge) / to;
    expect(Math.abs(zeroCrossings(out, edge, out.length - edge) - 2000 * seconds)).toBeLessThanOrEqual(3);
  });

  it.each(PAIRS)('gives the same samples streamed in random chunks as in one call from %i to %i Hz', (from, to) => {
    const input = sine(440, from, 0.3, 12000);
    const oneShot = resample(input, from, to);
    const chunked = streamed(from, to, input, 333);
    expect(chunked).toHaveLength(oneShot.length);
    let worst = 0;
    for (let i = 0; i < oneShot.length; i++) worst = Math.max(worst, Math.abs(chunked[i]! - oneShot[i]!));
    expect(worst).toBeLessThanOrEqual(1);
  });

  it('gives the same samples for 20 ms chunks and for one-sample chunks', () => {
    const input = sine(300, 16000, 0.2);
    const oneShot = resample(input, 16000, 8000);
    expect(Array.from(streamed(16000, 8000, input, 1))).toEqual(Array.from(oneShot));
    const r = new Resampler(16000, 8000);
    const parts: Int16Array[] = [];
    for (let at = 0; at < input.length; at += 320) parts.push(r.process(input.subarray(at, at + 320)));
    parts.push(r.flush());
    expect(Array.from(concatInt16(parts))).toEqual(Array.from(oneShot));
  });

  it.each(PAIRS)('produces ceil(N × to / from) samples from %i to %i Hz', (from, to) => {
    for (const n of [0, 1, 2, 1001, from / 50]) {
      expect(resample(new Int16Array(n), from, to)).toHaveLength(Math.ceil((n * to) / from));
      expect(streamed(from, to, new Int16Array(n), 97)).toHaveLength(Math.ceil((n * to) / from));
    }
  });

  it('attenuates a 6 kHz tone by more than 30 dB when going from 16 kHz to 8 kHz', () => {
    const input = sine(6000, 16000, 0.5);
    expect(gainDb(resample(input, 16000, 8000), rms(input))).toBeLessThan(-30);
  });

  it('attenuates tones above the new Nyquist frequency for every downsampling pair', () => {
    for (const [from, to] of PAIRS.filter(([f, t]) => t < f)) {
      const input = sine(Math.min(0.45 * from, 0.65 * to), from, 0.25);
      expect(gainDb(resample(input, from, to), rms(input)), `${from} → ${to}`).toBeLessThan(-30);
    }
  });

  it('passes speech-band tones below 90 % of the new Nyquist frequency within 0.5 dB', () => {
    const input = sine(3000, 16000, 0.5);
    expect(Math.abs(gainDb(resample(input, 16000, 8000), rms(input)))).toBeLessThan(0.5);
  });

  it('does not create images when upsampling 8 kHz to 48 kHz', () => {
    // A 3 kHz tone at 8 kHz would image at 5 kHz, 11 kHz, …; after filtering only 3 kHz remains,
    // so the zero-crossing rate stays that of 3 kHz and the level is unchanged.
    const input = sine(3000, 8000, 0.5);
    const out = resample(input, 8000, 48000);
    const edge = out.length / 10;
    expect(Math.abs(zeroCrossings(out, edge, out.length - edge) - 6000 * 0.4)).toBeLessThanOrEqual(4);
    expect(Math.abs(gainDb(out, rms(input)))).toBeLessThan(0.1);
  });

  it('clips instead of wrapping around on full-scale input', () => {
    const square = Int16Array.from({ length: 1600 }, (_, i) => (Math.floor(i / 20) % 2 ? -32768 : 32767));
    const out = resample(square, 8000, 16000);
    // Gibbs overshoot would exceed int16; wrapped values would flip sign mid-plateau.
    for (let i = 100; i < out.length - 100; i++) {
      const plateau = Math.floor(i / 40) % 2 ? -1 : 1;
      const middle = i % 40 >= 10 && i % 40 < 30;
      if (middle) expect(Math.sign(out[i]!)).toBe(plateau);
    }
  });

  it('copies the input unchanged when both rates are equal', () => {
    const input = new Int16Array([1, 2, 3]);
    const r = new Resampler(8000, 8000);
    const out = r.process(input);
    expect(Array.from(out)).toEqual([1, 2, 3]);
    expect(out.buffer).not.toBe(input.buffer);
    expect(r.flush()).toHaveLength(0);
    expect(resample(input, 16000, 16000)).not.toBe(input);
  });

  it('can be reused for a new stream after flush', () => {
    const input = sine(500, 24000, 0.1);
    const r = new Resampler(24000, 16000);
    const first = concatInt16([r.process(input), r.flush()]);
    const second = concatInt16([r.process(input), r.flush()]);
    expect(Array.from(second)).toEqual(Array.from(first));
  });

  it('rejects rates that are not positive integers', () => {
    expect(() => new Resampler(0, 8000)).toThrow(RangeError);
    expect(() => new Resampler(8000, 22050.5)).toThrow(RangeError);
    expect(() => new Resampler(8000, 7919)).toThrow(/filter phases/);
  });
});
