import { MPEGDecoder } from 'mpg123-decoder';
import type { MPEGDecodedAudio } from 'mpg123-decoder';

/** Decodes a whole MP3 with gapless trimming (the encoder's Info frame gives delay and padding). */
export async function decodeMp3(bytes: Uint8Array): Promise<MPEGDecodedAudio> {
  const decoder = new MPEGDecoder({ enableGapless: true });
  await decoder.ready;
  try {
    return decoder.decode(bytes);
  } finally {
    decoder.free();
  }
}

/** Channels of an MP3 from its first frame header's mode bits (mpg123-decoder always outputs two). */
export function mp3Channels(mp3: Uint8Array): 1 | 2 {
  return mp3[3]! >> 6 === 0b11 ? 1 : 2;
}

/** RMS of 8 kHz samples over [fromMs, toMs). */
export function rms(x: ArrayLike<number>, fromMs: number, toMs: number): number {
  let sum = 0;
  const [a, b] = [Math.max(0, Math.round(fromMs * 8)), Math.min(x.length, Math.round(toMs * 8))];
  for (let i = a; i < b; i++) sum += x[i]! * x[i]!;
  return Math.sqrt(sum / Math.max(1, b - a));
}

/** The first 5 ms window at or after `fromMs` whose level is above `threshold` (ms), or -1. */
export function onsetMs(x: ArrayLike<number>, threshold: number, fromMs = 0): number {
  for (let ms = Math.round(fromMs / 5) * 5; ms * 8 < x.length; ms += 5) if (rms(x, ms, ms + 5) > threshold) return ms;
  return -1;
}

/** The first `quietMs` stretch at or after `fromMs` below `threshold`: where it starts (ms), or -1. */
export function quietFromMs(x: ArrayLike<number>, threshold: number, fromMs: number, quietMs: number): number {
  let start = -1;
  for (let ms = Math.round(fromMs / 5) * 5; ms * 8 < x.length; ms += 5) {
    if (rms(x, ms, ms + 5) > threshold) start = -1;
    else {
      if (start < 0) start = ms;
      if (ms + 5 - start >= quietMs) return start;
    }
  }
  return -1;
}
