// Deterministic test signals for the audio tests (not a test file itself).

/** `seconds` of a sine of `freqHz` at `rateHz`, peak `amplitude`. */
export function sine(freqHz: number, rateHz: number, seconds: number, amplitude = 10_000): Int16Array {
  const n = Math.round(rateHz * seconds);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(amplitude * Math.sin((2 * Math.PI * freqHz * i) / rateHz));
  return out;
}

/** Uniform white noise whose RMS level is `levelDb` dBFS (fixed-seed LCG). */
export function whiteNoise(levelDb: number, samples: number, seed = 12345): Int16Array {
  const out = new Int16Array(samples);
  const peak = 32768 * 10 ** (levelDb / 20) * Math.sqrt(3);
  let s = seed >>> 0;
  for (let i = 0; i < samples; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = Math.round(peak * ((2 * s) / 0x1_0000_0000 - 1));
  }
  return out;
}

/** RMS of `pcm[from, to)`. */
export function rms(pcm: Int16Array, from = 0, to = pcm.length): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += pcm[i]! * pcm[i]!;
  return Math.sqrt(sum / Math.max(1, to - from));
}

/** Sign changes in `pcm[from, to)` (a sine of f Hz has 2f per second). */
export function zeroCrossings(pcm: Int16Array, from = 0, to = pcm.length): number {
  let count = 0;
  for (let i = from + 1; i < to; i++) if ((pcm[i - 1]! < 0) !== (pcm[i]! < 0)) count++;
  return count;
}

/** Splits `pcm` into chunks of pseudo-random sizes in [1, maxChunk]. */
export function chunks<T extends Int16Array | Uint8Array>(data: T, maxChunk: number, seed = 7): T[] {
  const out: T[] = [];
  let s = seed;
  for (let at = 0; at < data.length; ) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    const size = 1 + (s % maxChunk);
    out.push(data.subarray(at, at + size) as T);
    at += size;
  }
  return out;
}

/** Frames of `frameSamples` (the tail shorter than a frame is dropped). */
export function frames(pcm: Int16Array, frameSamples: number): Int16Array[] {
  const out: Int16Array[] = [];
  for (let at = 0; at + frameSamples <= pcm.length; at += frameSamples) out.push(pcm.subarray(at, at + frameSamples));
  return out;
}
