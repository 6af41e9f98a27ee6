/**
 * Signed 16-bit PCM helpers: little-endian byte conversion (the L16 byte order every
 * carrier and provider uses, reference/audio-formats.md), level metering, concatenation.
 */

/** True when typed-array views already hold int16 in little-endian order (every platform Node ships on). */
const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Reads little-endian signed 16-bit samples. A trailing odd byte is ignored.
 *
 * When the bytes start at an even offset (and the host is little-endian) the result is a
 * zero-copy view that shares memory with `bytes`; otherwise, e.g. for a Node `Buffer` slice
 * at an odd offset of its pool, the samples are copied. Copy the result before keeping it if
 * the caller may reuse the byte buffer.
 */
export function pcm16FromBytesLE(bytes: Uint8Array): Int16Array {
  const count = bytes.length >> 1;
  if (HOST_IS_LITTLE_ENDIAN && bytes.byteOffset % 2 === 0) {
    return new Int16Array(bytes.buffer, bytes.byteOffset, count);
  }
  const out = new Int16Array(count);
  for (let i = 0; i < count; i++) {
    const lo = bytes[2 * i]!;
    const hi = bytes[2 * i + 1]!;
    out[i] = ((hi << 24) >> 16) | lo;
  }
  return out;
}

/**
 * Writes samples as little-endian bytes. On little-endian hosts this is a zero-copy view
 * over `pcm`'s memory (copy it before mutating either side independently).
 */
export function pcm16ToBytesLE(pcm: Int16Array): Uint8Array {
  if (HOST_IS_LITTLE_ENDIAN) return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  const out = new Uint8Array(pcm.length * 2);
  for (let i = 0; i < pcm.length; i++) {
    const s = pcm[i]!;
    out[2 * i] = s & 0xff;
    out[2 * i + 1] = (s >> 8) & 0xff;
  }
  return out;
}

/** Level reported for digital silence and empty input. */
export const SILENCE_DBFS = -100;

/**
 * RMS level in dBFS, where a full-scale square wave (±32768) is 0 dBFS and a full-scale
 * sine about -3 dBFS. Returns -100 for empty input or all-zero samples, and never less.
 */
export function levelDbfs(pcm: Int16Array): number {
  let sumSquares = 0;
  for (let i = 0; i < pcm.length; i++) {
    const s = pcm[i]!;
    sumSquares += s * s;
  }
  return dbfsOfSumSquares(sumSquares, pcm.length);
}

/**
 * The level {@link levelDbfs} gives `count` samples whose squares sum to `sumSquares` (an
 * integer, exact in a double for any frame size used here), for callers that sum them
 * another way (`mulawLevelDbfs`, from the μ-law codes).
 */
export function dbfsOfSumSquares(sumSquares: number, count: number): number {
  if (count === 0 || sumSquares === 0) return SILENCE_DBFS;
  const rms = Math.sqrt(sumSquares / count);
  return Math.max(SILENCE_DBFS, 20 * Math.log10(rms / 32768));
}

/** Joins sample arrays into one new array (always a copy, even for a single part). */
export function concatInt16(parts: Int16Array[]): Int16Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Int16Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Joins byte arrays into one new array (always a copy, even for a single part). */
export function concatBytes(parts: Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
