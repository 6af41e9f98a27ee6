/**
 * Minimal RIFF/WAVE reader and writer for 16-bit PCM: enough for espeak-ng output, test
 * fixtures and debugging dumps. Anything else (float, 8-bit, μ-law-in-WAV, RF64) is rejected
 * with an Error naming what was found.
 */
import { pcm16ToBytesLE } from './pcm.js';

/** A decoded WAV file: always mono samples, whatever the file held. */
export interface WavAudio {
  sampleRateHz: number;
  /** Channel count stored in the file; `pcm` has been averaged down to one channel. */
  channels: number;
  /** Mono signed 16-bit samples (a new array, not a view into the input). */
  pcm: Int16Array;
}

const WAVE_FORMAT_PCM = 0x0001;
const WAVE_FORMAT_EXTENSIBLE = 0xfffe;

function fourcc(bytes: Uint8Array, at: number): string {
  return String.fromCharCode(bytes[at]!, bytes[at + 1]!, bytes[at + 2]!, bytes[at + 3]!);
}

/**
 * Parses a PCM16 WAV file, walking its chunks (LIST, fact, … are skipped) and downmixing
 * any number of channels to mono by averaging.
 *
 * Streaming writers such as `espeak-ng --stdout` cannot seek back to patch the sizes, so
 * their `data` size is 0, 0xFFFFFFFF or a large placeholder (espeak-ng 1.51 writes
 * 0x7FFFF000): whenever the declared size is 0 or runs past the end of the input, the
 * rest of the file is taken as samples (whole frames only).
 *
 * @throws Error when the input is not RIFF/WAVE, has no `fmt ` before `data`, or is not 16-bit PCM.
 */
export function parseWav(bytes: Uint8Array): WavAudio {
  if (bytes.length < 12 || fourcc(bytes, 0) !== 'RIFF' || fourcc(bytes, 8) !== 'WAVE') {
    throw new Error('parseWav: not a RIFF/WAVE file');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let format: { channels: number; sampleRateHz: number; bitsPerSample: number; blockAlign: number } | undefined;
  let at = 12;
  while (at + 8 <= bytes.length) {
    const id = fourcc(bytes, at);
    const size = view.getUint32(at + 4, true);
    const body = at + 8;
    if (id === 'fmt ') {
      if (size < 16 || body + 16 > bytes.length) throw new Error('parseWav: truncated fmt chunk');
      let audioFormat = view.getUint16(body, true);
      const channels = view.getUint16(body + 2, true);
      const sampleRateHz = view.getUint32(body + 4, true);
      const blockAlign = view.getUint16(body + 12, true);
      const bitsPerSample = view.getUint16(body + 14, true);
      if (audioFormat === WAVE_FORMAT_EXTENSIBLE && size >= 40 && body + 26 <= bytes.length) {
        // The first two bytes of the SubFormat GUID carry the real format tag.
        audioFormat = view.getUint16(body + 24, true);
      }
      if (audioFormat !== WAVE_FORMAT_PCM || bitsPerSample !== 16) {
        throw new Error(`parseWav: only 16-bit PCM is supported (format tag ${audioFormat}, ${bitsPerSample} bits)`);
      }
      if (channels < 1 || sampleRateHz < 1 || blockAlign !== channels * 2) {
        throw new Error(`parseWav: inconsistent fmt chunk (${channels} channels, ${sampleRateHz} Hz, block ${blockAlign})`);
      }
      format = { channels, sampleRateHz, bitsPerSample, blockAlign };
    } else if (id === 'data') {
      if (!format) throw new Error('parseWav: data chunk before fmt chunk');
      const remaining = bytes.length - body;
      const dataBytes = size === 0 || size > remaining ? remaining : size;
      return {
        sampleRateHz: format.sampleRateHz,
        channels: format.channels,
        pcm: downmix(view, body, Math.floor(dataBytes / format.blockAlign), format.channels),
      };
    }
    at = body + size + (size & 1); // chunks are padded to an even length
  }
  throw new Error(format ? 'parseWav: no data chunk' : 'parseWav: no fmt chunk');
}

function downmix(view: DataView, start: number, frames: number, channels: number): Int16Array {
  const out = new Int16Array(frames);
  for (let f = 0; f < frames; f++) {
    let sum = 0;
    const base = start + f * channels * 2;
    for (let c = 0; c < channels; c++) sum += view.getInt16(base + c * 2, true);
    out[f] = channels === 1 ? sum : Math.round(sum / channels);
  }
  return out;
}

/**
 * Encodes signed 16-bit samples as a canonical 44-byte-header WAV file. With more than one
 * channel, `pcm` holds them interleaved (frame by frame: left, right, …), as WAV stores them.
 *
 * @throws Error when `channels` is not a positive integer or `pcm` is not whole frames.
 */
export function encodeWav(pcm: Int16Array, sampleRateHz: number, channels = 1): Uint8Array {
  if (!Number.isInteger(channels) || channels < 1) throw new Error(`encodeWav: channels must be a positive integer (got ${channels})`);
  if (pcm.length % channels !== 0) throw new Error(`encodeWav: ${pcm.length} samples are not whole frames of ${channels} channels`);
  const dataBytes = pcm.length * 2;
  const blockAlign = channels * 2;
  const out = new Uint8Array(44 + dataBytes);
  const view = new DataView(out.buffer);
  const ascii = (at: number, text: string): void => {
    for (let i = 0; i < text.length; i++) out[at + i] = text.charCodeAt(i);
  };
  ascii(0, 'RIFF');
  view.setUint32(4, 36 + dataBytes, true);
  ascii(8, 'WAVE');
  ascii(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, WAVE_FORMAT_PCM, true);
  view.setUint16(22, channels, true);
  view.setUint32(24, sampleRateHz, true);
  view.setUint32(28, sampleRateHz * blockAlign, true); // byte rate
  view.setUint16(32, blockAlign, true);
  view.setUint16(34, 16, true); // bits per sample
  ascii(36, 'data');
  view.setUint32(40, dataBytes, true);
  out.set(pcm16ToBytesLE(pcm), 44);
  return out;
}
