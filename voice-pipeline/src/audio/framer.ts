/**
 * Re-chunks a byte stream into fixed-size frames: carriers and TTS providers deliver audio
 * in arbitrary sizes, while telephony peers expect 20 ms packets
 * (reference/audio-formats.md, "Frame arithmetic").
 */

/** Frame length used on every telephony leg. */
export const FRAME_MS = 20;
/** 20 ms of 8 kHz G.711 (μ-law or A-law): one byte per sample. */
export const MULAW_FRAME_BYTES = 160;

/**
 * Accumulates pushed bytes and hands out whole frames in order. Every frame is a fresh
 * copy, so neither later pushes nor mutation of the input can change a frame already
 * returned. Not tied to an encoding: use 160 for 8 kHz G.711, 320 for L16 8 kHz, 640 for
 * L16 16 kHz.
 */
export class Framer {
  readonly frameBytes: number;
  readonly #pending: Uint8Array;
  #fill = 0;

  /** @throws RangeError unless `frameBytes` is a positive integer. */
  constructor(frameBytes: number) {
    if (!Number.isInteger(frameBytes) || frameBytes <= 0) {
      throw new RangeError(`Framer: frameBytes must be a positive integer (got ${frameBytes})`);
    }
    this.frameBytes = frameBytes;
    this.#pending = new Uint8Array(frameBytes);
  }

  /** Adds bytes and returns every frame completed by them (often none, possibly several). */
  push(bytes: Uint8Array): Uint8Array[] {
    const size = this.frameBytes;
    const frames: Uint8Array[] = [];
    let at = 0;
    if (this.#fill > 0) {
      const take = Math.min(size - this.#fill, bytes.length);
      this.#pending.set(bytes.subarray(0, take), this.#fill);
      this.#fill += take;
      at = take;
      if (this.#fill < size) return frames;
      frames.push(this.#pending.slice());
      this.#fill = 0;
    }
    for (; at + size <= bytes.length; at += size) frames.push(bytes.slice(at, at + size));
    const rest = bytes.length - at;
    if (rest > 0) {
      this.#pending.set(bytes.subarray(at), 0);
      this.#fill = rest;
    }
    return frames;
  }

  /**
   * Ends the stream: returns the buffered remainder, or null when nothing is buffered.
   * With `padByte` (e.g. `MULAW_SILENCE`, or 0 for L16) the remainder is padded to a
   * whole frame; without it the short remainder is returned as is. The framer is empty
   * afterwards.
   */
  flush(padByte?: number): Uint8Array | null {
    if (this.#fill === 0) return null;
    const out =
      padByte === undefined ? this.#pending.slice(0, this.#fill) : this.#pending.slice().fill(padByte & 0xff, this.#fill);
    this.#fill = 0;
    return out;
  }

  /** Bytes waiting for a frame to complete (always less than `frameBytes`). */
  get bufferedBytes(): number {
    return this.#fill;
  }

  /** Drops buffered bytes (e.g. on barge-in, when queued audio is discarded). */
  reset(): void {
    this.#fill = 0;
  }
}
