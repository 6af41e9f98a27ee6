/**
 * The LAME "Info" frame for a constant-bit-rate MP3: a silent first frame whose payload
 * carries the frame and byte counts and, in its LAME extension, the encoder delay and
 * padding. Gapless decoders (mpg123, ffmpeg, browsers) use those to trim the encoder's
 * priming samples (576 + the decoder's 529 ≈ 138 ms at 8 kHz) and the flush padding, so
 * the decoded audio starts at the recording's t=0 and is exactly as long as the call.
 * lamejs's `Mp3Encoder` never writes this frame (its `bWriteVbrTag` is forced off).
 * Layout: the Xing/Info header (flags, frames, bytes, TOC, quality) and the LAME tag
 * revision 1 (version string … delay/padding … music length, music CRC, tag CRC).
 */

/** What goes into the Info frame. */
export interface Mp3InfoFrameInput {
  /** The first 4 bytes (frame header) of the encoded stream's first audio frame. */
  firstHeader: Uint8Array;
  /** Audio frames in the stream (not counting this one). */
  frames: number;
  /** Bytes of the audio frames (not counting this one). */
  audioBytes: number;
  /** Samples the encoder put before the input (LAME: 576). */
  delaySamples: number;
  /** Samples after the input in the last frame. */
  paddingSamples: number;
  bitrateKbps: number;
}

/** Samples per Layer III frame: 1152 (MPEG-1) or 576 (MPEG-2 and 2.5). */
export function samplesPerFrame(header: Uint8Array): number {
  return mpegVersion(header) === 'mpeg1' ? 1152 : 576;
}

function mpegVersion(header: Uint8Array): 'mpeg1' | 'mpeg2' | 'mpeg2.5' {
  const bits = (header[1]! >> 3) & 0b11;
  return bits === 0b11 ? 'mpeg1' : bits === 0b10 ? 'mpeg2' : 'mpeg2.5';
}

const SAMPLE_RATES: Record<'mpeg1' | 'mpeg2' | 'mpeg2.5', readonly number[]> = {
  mpeg1: [44100, 48000, 32000],
  mpeg2: [22050, 24000, 16000],
  'mpeg2.5': [11025, 12000, 8000],
};

function sampleRateOf(header: Uint8Array): number {
  const rate = SAMPLE_RATES[mpegVersion(header)][(header[2]! >> 2) & 0b11];
  if (rate === undefined) throw new Error('mp3: reserved sample-rate index');
  return rate;
}

/** Length in bytes of the Layer III frame that starts with `header` (CBR, bit rate from the caller). */
export function frameBytes(header: Uint8Array, bitrateKbps: number): number {
  const perFrame = samplesPerFrame(header);
  const padding = (header[2]! >> 1) & 1;
  return Math.floor(((perFrame / 8) * bitrateKbps * 1000) / sampleRateOf(header)) + padding;
}

/** Counts the frames of a CBR Layer III stream, checking each frame's sync word. */
export function countFrames(mp3: Uint8Array, bitrateKbps: number): number {
  let frames = 0;
  for (let at = 0; at < mp3.length; ) {
    if (mp3[at] !== 0xff || (mp3[at + 1]! & 0xe0) !== 0xe0) throw new Error(`mp3: no frame sync at byte ${at}`);
    at += frameBytes(mp3.subarray(at, at + 4), bitrateKbps);
    frames++;
  }
  return frames;
}

const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xa001 : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** CRC-16/ARC (polynomial 0x8005, reflected, initial 0): the LAME tag's checksum. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = (crc >>> 8) ^ CRC16_TABLE[(crc ^ b) & 0xff]!;
  return crc;
}

/** Builds the Info frame to put in front of the audio frames. */
export function mp3InfoFrame(input: Mp3InfoFrameInput): Uint8Array {
  const header = input.firstHeader;
  // Same header as the audio (version, rate, bit rate, mode), without padding: the frame is all zeros otherwise.
  const out = new Uint8Array(frameBytes(Uint8Array.of(header[0]!, header[1]!, header[2]! & ~0b10, header[3]!), input.bitrateKbps));
  out.set(header.subarray(0, 4));
  out[2] = out[2]! & ~0b10;
  const mono = (header[3]! >> 6) === 0b11;
  const sideInfoBytes = mpegVersion(header) === 'mpeg1' ? (mono ? 17 : 32) : mono ? 9 : 17;
  const view = new DataView(out.buffer);
  let at = 4 + sideInfoBytes;
  const ascii = (text: string): void => {
    for (let i = 0; i < text.length; i++) out[at++] = text.charCodeAt(i);
  };
  const totalBytes = input.audioBytes + out.length;
  ascii('Info');
  view.setUint32(at, 0x0f, false); // frames, bytes, TOC and quality present
  at += 4;
  view.setUint32(at, input.frames, false);
  at += 4;
  view.setUint32(at, totalBytes, false);
  at += 4;
  for (let i = 0; i < 100; i++) out[at++] = Math.floor((i * 256) / 100); // CBR: a straight line
  view.setUint32(at, 100 - 10 * 4 - 3, false); // quality as LAME computes it (VBR_q 4, quality 3)
  at += 4;
  const tagStart = at;
  ascii('LAME3.100');
  out[at++] = 0x10 | 0x01; // tag revision 1, method CBR
  out[at++] = 0; // lowpass unknown
  at += 4 + 2 + 2; // peak amplitude, radio and audiophile replay gain: not measured
  out[at++] = 0; // encoding flags, ATH type
  out[at++] = Math.min(255, input.bitrateKbps);
  out[at++] = (input.delaySamples >> 4) & 0xff;
  out[at++] = ((input.delaySamples & 0x0f) << 4) | ((input.paddingSamples >> 8) & 0x0f);
  out[at++] = input.paddingSamples & 0xff;
  out[at++] = 0; // misc
  out[at++] = 0; // mp3 gain
  at += 2; // preset and surround
  view.setUint32(at, totalBytes, false); // music length, this frame included
  at += 4;
  at += 2; // music CRC: not computed (readers do not require it)
  view.setUint16(at, crc16(out.subarray(0, at)), false);
  if (at - tagStart !== 34) throw new Error('mp3: LAME tag layout');
  return out;
}
