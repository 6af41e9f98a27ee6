/**
 * Audio for one simulated generation: speech for the text at the format's rate, encoded
 * like the real output format, cut into chunks with per-character alignment relative to
 * each chunk (reference/tts.md §1.2). Deterministic for a given text and format.
 */
import { alawEncode, mulawEncode } from '../../audio/g711.js';
import { pcm16ToBytesLE } from '../../audio/pcm.js';
import { synthesizeSpeech } from '../../audio/synth.js';
import type { RawFormatSpec } from '../../audio/output-formats.js';
import type { WireAlignment } from './wire.js';

/** One `audio` message's content before base64. */
export interface SimAudioChunk {
  audio: Uint8Array;
  /** `null` when no character starts inside this chunk (the real service sends `null` too at times). */
  alignment: WireAlignment | null;
}

/** Relative time a character takes: whitespace is shorter than letters, punctuation carries a pause. */
function charWeight(ch: string): number {
  if (/\s/.test(ch)) return 0.5;
  if (/[.,;:!?]/.test(ch)) return 1.5;
  return 1;
}

/** Spreads the characters of `text` over `totalMs`, in whole milliseconds. */
export function characterTimings(text: string, totalMs: number): { chars: string[]; startMs: number[]; durationMs: number[] } {
  const chars = [...text];
  const weights = chars.map(charWeight);
  const sum = weights.reduce((a, b) => a + b, 0);
  const startMs: number[] = [];
  const durationMs: number[] = [];
  let acc = 0;
  for (const w of weights) {
    const start = Math.round((acc / sum) * totalMs);
    acc += w;
    const end = Math.round((acc / sum) * totalMs);
    startMs.push(start);
    durationMs.push(end - start);
  }
  return { chars, startMs, durationMs };
}

function encode(pcm: Int16Array, spec: RawFormatSpec): Uint8Array {
  if (spec.encoding === 'mulaw') return mulawEncode(pcm);
  if (spec.encoding === 'alaw') return alawEncode(pcm);
  // pcm16ToBytesLE may return a view over `pcm`; copy so chunks own their bytes.
  return new Uint8Array(pcm16ToBytesLE(pcm));
}

/**
 * Renders `text` in `spec` and splits it into `chunkMs` pieces. Each character lands in the
 * chunk where it starts, with its start time relative to that chunk.
 */
export async function renderGeneration(text: string, spec: RawFormatSpec, chunkMs: number): Promise<SimAudioChunk[]> {
  const pcm = await synthesizeSpeech(text, spec.sampleRateHz);
  const bytes = encode(pcm, spec);
  const totalMs = (pcm.length / spec.sampleRateHz) * 1000;
  const timing = characterTimings(text, totalMs);
  const samplesPerChunk = Math.max(1, Math.round((spec.sampleRateHz * chunkMs) / 1000));
  const chunks: SimAudioChunk[] = [];
  let charIndex = 0;
  for (let first = 0; first < pcm.length; first += samplesPerChunk) {
    const last = Math.min(pcm.length, first + samplesPerChunk);
    const chunkStartMs = (first / spec.sampleRateHz) * 1000;
    const chunkEndMs = (last / spec.sampleRateHz) * 1000;
    const isLast = last === pcm.length;
    const alignment: Required<Pick<WireAlignment, 'chars' | 'charStartTimesMs' | 'charDurationsMs'>> = { chars: [], charStartTimesMs: [], charDurationsMs: [] };
    while (charIndex < timing.chars.length && (isLast || timing.startMs[charIndex]! < chunkEndMs)) {
      alignment.chars.push(timing.chars[charIndex]!);
      alignment.charStartTimesMs.push(Math.max(0, Math.round(timing.startMs[charIndex]! - chunkStartMs)));
      alignment.charDurationsMs.push(timing.durationMs[charIndex]!);
      charIndex++;
    }
    chunks.push({
      audio: bytes.subarray(first * spec.bytesPerSample, last * spec.bytesPerSample),
      alignment: alignment.chars.length > 0 ? alignment : null,
    });
  }
  return chunks;
}
