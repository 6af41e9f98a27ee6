/**
 * G.711 companders: μ-law (PCMU) and A-law (PCMA), 8-bit codes ↔ signed 16-bit PCM.
 *
 * Both directions are table lookups built once at module load: decoding uses a 256-entry
 * Int16Array, encoding a 65,536-entry Uint8Array indexed by the sample's 16-bit pattern,
 * so the hot path is one load per sample. The reference formulas and the test vectors
 * (which these tables reproduce exactly, as the `alawmulaw` npm package does) are in
 * reference/audio-formats.md §G.711.
 */
import { dbfsOfSumSquares } from './pcm.js';

/** μ-law code for digital silence (positive zero; 0x7F is negative zero). 160 bytes = 20 ms. */
export const MULAW_SILENCE = 0xff;
/** A-law code for silence; it decodes to +8, the smallest positive level (A-law has no zero). */
export const ALAW_SILENCE = 0xd5;

const MULAW_BIAS = 0x84;
const MULAW_CLIP = 32635;

function mulawEncodeSample(sample: number): number {
  let s = sample;
  let sign = 0;
  if (s < 0) {
    sign = 0x80;
    s = -s;
  }
  if (s > MULAW_CLIP) s = MULAW_CLIP;
  s += MULAW_BIAS;
  // Highest set bit among bits 14..7 gives the segment; s ≥ 132 so bit 7 or above is set.
  const exponent = 31 - Math.clz32(s) - 7;
  const mantissa = (s >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

function mulawDecodeSample(code: number): number {
  const u = ~code & 0xff;
  const exponent = (u >> 4) & 0x07;
  const mantissa = u & 0x0f;
  const magnitude = (((mantissa << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS;
  return u & 0x80 ? -magnitude : magnitude;
}

function alawEncodeSample(sample: number): number {
  // A-law sets the sign bit for non-negative samples (before the 0x55 even-bit inversion).
  let sign = 0x80;
  let s = sample;
  if (s < 0) {
    sign = 0;
    s = -s;
  }
  if (s > MULAW_CLIP) s = MULAW_CLIP;
  let companded: number;
  if (s >= 256) {
    const exponent = 32 - Math.clz32(s >> 8); // 1..7
    const mantissa = (s >> (exponent + 3)) & 0x0f;
    companded = (exponent << 4) | mantissa;
  } else {
    companded = s >> 4;
  }
  return (companded ^ (sign ^ 0x55)) & 0xff;
}

function alawDecodeSample(code: number): number {
  const a = (code ^ 0x55) & 0xff;
  const exponent = (a & 0x70) >> 4;
  const mantissa = a & 0x0f;
  // Decoded values sit in the middle of their quantisation step (hence the extra half step).
  const magnitude =
    exponent === 0 ? (mantissa << 4) + 8 : ((0x10 | mantissa) << (exponent + 3)) + (1 << (exponent + 2));
  return a & 0x80 ? magnitude : -magnitude;
}

const MULAW_DECODE = new Int16Array(256);
const ALAW_DECODE = new Int16Array(256);
for (let code = 0; code < 256; code++) {
  MULAW_DECODE[code] = mulawDecodeSample(code);
  ALAW_DECODE[code] = alawDecodeSample(code);
}

const MULAW_ENCODE = new Uint8Array(65536);
const ALAW_ENCODE = new Uint8Array(65536);
for (let pattern = 0; pattern < 65536; pattern++) {
  const sample = (pattern << 16) >> 16; // reinterpret as signed 16-bit
  MULAW_ENCODE[pattern] = mulawEncodeSample(sample);
  ALAW_ENCODE[pattern] = alawEncodeSample(sample);
}

function encodeWith(table: Uint8Array, pcm: Int16Array): Uint8Array {
  const out = new Uint8Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = table[pcm[i]! & 0xffff]!;
  return out;
}

function decodeWith(table: Int16Array, bytes: Uint8Array, out: Int16Array = new Int16Array(bytes.length)): Int16Array {
  for (let i = 0; i < bytes.length; i++) out[i] = table[bytes[i]!]!;
  return out;
}

/** Encodes signed 16-bit PCM to μ-law, one byte per sample. Magnitudes above 32635 clip. Returns a new array. */
export function mulawEncode(pcm: Int16Array): Uint8Array {
  return encodeWith(MULAW_ENCODE, pcm);
}

/** Decodes μ-law bytes to signed 16-bit PCM (range ±32124). Returns a new array. */
export function mulawDecode(bytes: Uint8Array): Int16Array {
  return decodeWith(MULAW_DECODE, bytes);
}

/** {@link mulawDecode} into `out` (exactly `bytes.length` samples long), for a caller that reuses one buffer per frame. Returns `out`. */
export function mulawDecodeInto(bytes: Uint8Array, out: Int16Array): Int16Array {
  if (out.length !== bytes.length) throw new RangeError(`mulawDecodeInto: ${bytes.length} bytes into ${out.length} samples`);
  return decodeWith(MULAW_DECODE, bytes, out);
}

/** Each μ-law code's decoded sample, squared. */
const MULAW_SQUARES = Float64Array.from(MULAW_DECODE, (s) => s * s);

/**
 * The RMS level in dBFS of μ-law audio, exactly `levelDbfs(mulawDecode(bytes))` (the same
 * integer sum of squares), without decoding: one table load per byte. The gateway's loop
 * runs the VAD on every caller frame with it (media-gateway `early-barge-in.ts`).
 */
export function mulawLevelDbfs(bytes: Uint8Array): number {
  let sumSquares = 0;
  for (let i = 0; i < bytes.length; i++) sumSquares += MULAW_SQUARES[bytes[i]!]!;
  return dbfsOfSumSquares(sumSquares, bytes.length);
}

/** Encodes signed 16-bit PCM to A-law, one byte per sample. Returns a new array. */
export function alawEncode(pcm: Int16Array): Uint8Array {
  return encodeWith(ALAW_ENCODE, pcm);
}

/** Decodes A-law bytes to signed 16-bit PCM (range ±32256; never exactly 0). Returns a new array. */
export function alawDecode(bytes: Uint8Array): Int16Array {
  return decodeWith(ALAW_DECODE, bytes);
}
