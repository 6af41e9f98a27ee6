/**
 * Encodes a call's two μ-law tracks into the stored file: MP3 (LAME, through the pure-JS
 * `@breezystack/lamejs`) or 16-bit PCM WAV, mono (both tracks mixed) or stereo (caller
 * left, agent right). Synchronous and CPU-bound (about 1 s for a minute of stereo MP3):
 * it runs in the encoder worker, never on the event loop that paces live calls.
 */
import { Mp3Encoder } from '@breezystack/lamejs';
// The audio entry, not the package root: the encoder worker must not load the whole pipeline
// (provider SDKs: about 2 s and 70 MB more per worker).
import { encodeWav } from '@vap/voice-pipeline/audio';
import { countFrames, mp3InfoFrame, samplesPerFrame } from './mp3-info-frame.js';

/** μ-law 8 kHz tracks on one timeline, in chunks (`null`: a chunk never written, silence). */
export interface RecordingTracks {
  /** Samples per channel (8 per ms). */
  lengthSamples: number;
  /** Samples in each chunk; the last chunk may be longer than needed. */
  chunkSamples: number;
  caller: (Uint8Array | null)[];
  agent: (Uint8Array | null)[];
}

/** What to make of the tracks. */
export interface EncodeRequest extends RecordingTracks {
  format: 'mp3' | 'wav';
  /** 2: caller left, agent right; 1: both mixed. */
  channels: 1 | 2;
}

export const RECORDING_SAMPLE_RATE_HZ = 8000;
/** MP3 bit rate, mono or stereo (stereo splits it: 16 kbps a channel is plenty for 8 kHz telephone audio). */
export const MP3_BITRATE_KBPS = 32;
/** Samples LAME puts before the input (ENCDELAY); written into the Info frame for gapless decoders. */
const LAME_ENCODER_DELAY = 576;

/** Content type of each format, for the object store. */
export const RECORDING_CONTENT_TYPES = { mp3: 'audio/mpeg', wav: 'audio/wav' } as const;

/**
 * @param mulawTable the 256 signed 16-bit values of the μ-law codes (the pipeline's G.711
 *   decoder, handed to the worker so it does not load the pipeline).
 */
export function encodeRecording(req: EncodeRequest, mulawTable: Int16Array): Uint8Array {
  const caller = decodeTrack(req.caller, req.lengthSamples, req.chunkSamples, mulawTable);
  const agent = decodeTrack(req.agent, req.lengthSamples, req.chunkSamples, mulawTable);
  const channels = req.channels === 2 ? [caller, agent] : [mix(caller, agent)];
  switch (req.format) {
    case 'mp3':
      return encodeMp3(channels);
    case 'wav':
      return encodeRecordingWav(channels);
    default:
      throw new Error(`unknown recording format ${JSON.stringify(req.format satisfies never)}`);
  }
}

function decodeTrack(chunks: readonly (Uint8Array | null)[], length: number, chunkSamples: number, table: Int16Array): Int16Array {
  const pcm = new Int16Array(length);
  for (let c = 0; c < chunks.length; c++) {
    const chunk = chunks[c];
    if (!chunk) continue;
    const start = c * chunkSamples;
    const end = Math.min(length, start + chunk.length);
    for (let i = start; i < end; i++) pcm[i] = table[chunk[i - start]!]!;
  }
  return pcm;
}

function mix(a: Int16Array, b: Int16Array): Int16Array {
  const out = new Int16Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Math.max(-32768, Math.min(32767, a[i]! + b[i]!));
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function encodeMp3(channels: Int16Array[]): Uint8Array {
  const [left, right] = channels as [Int16Array, Int16Array | undefined];
  const encoder = new Mp3Encoder(channels.length, RECORDING_SAMPLE_RATE_HZ, MP3_BITRATE_KBPS);
  const parts: Uint8Array[] = [];
  // lamejs returns Int8Array copies; reinterpret them as bytes.
  const keep = (bytes: Int8Array | Uint8Array): void => void (bytes.length > 0 && parts.push(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  const block = 576 * 32;
  for (let i = 0; i < left.length; i += block) {
    keep(right ? encoder.encodeBuffer(left.subarray(i, i + block), right.subarray(i, i + block)) : encoder.encodeBuffer(left.subarray(i, i + block)));
  }
  keep(encoder.flush());
  const audio = concat(parts);
  if (audio.length < 4) throw new Error('mp3: the encoder produced no frames');
  const frames = countFrames(audio, MP3_BITRATE_KBPS);
  const header = audio.subarray(0, 4);
  const padding = frames * samplesPerFrame(header) - LAME_ENCODER_DELAY - left.length;
  const info = mp3InfoFrame({ firstHeader: header, frames, audioBytes: audio.length, delaySamples: LAME_ENCODER_DELAY, paddingSamples: Math.max(0, padding), bitrateKbps: MP3_BITRATE_KBPS });
  return concat([info, audio]);
}

/** Canonical 44-byte-header WAV, 16-bit PCM, channels interleaved. */
function encodeRecordingWav(channels: Int16Array[]): Uint8Array {
  const count = channels.length;
  if (count === 1) return encodeWav(channels[0]!, RECORDING_SAMPLE_RATE_HZ);
  const n = channels[0]!.length;
  const interleaved = new Int16Array(n * count);
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < count; c++) interleaved[i * count + c] = channels[c]![i]!;
  }
  return encodeWav(interleaved, RECORDING_SAMPLE_RATE_HZ, count);
}
