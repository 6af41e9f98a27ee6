import { describe, expect, it } from 'vitest';
import { encodeWav, parseWav } from '../../src/audio/wav.js';
import { sine } from './audio-signals.js';

/** Builds a RIFF/WAVE file from raw chunks, the way odd writers lay them out. */
function riff(chunks: { id: string; body: Uint8Array; declaredSize?: number }[], riffSize?: number): Uint8Array {
  const parts: number[] = [];
  const u32 = (v: number): number[] => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];
  const ascii = (t: string): number[] => Array.from(t, (c) => c.charCodeAt(0));
  for (const c of chunks) {
    parts.push(...ascii(c.id), ...u32(c.declaredSize ?? c.body.length), ...c.body);
    if (c.declaredSize === undefined && c.body.length % 2 === 1) parts.push(0);
  }
  return new Uint8Array([...ascii('RIFF'), ...u32(riffSize ?? parts.length + 4), ...ascii('WAVE'), ...parts]);
}

function fmt(opts: { format?: number; channels?: number; rateHz?: number; bits?: number }): Uint8Array {
  const { format = 1, channels = 1, rateHz = 22050, bits = 16 } = opts;
  const body = new Uint8Array(16);
  const v = new DataView(body.buffer);
  v.setUint16(0, format, true);
  v.setUint16(2, channels, true);
  v.setUint32(4, rateHz, true);
  v.setUint32(8, (rateHz * channels * bits) / 8, true);
  v.setUint16(12, (channels * bits) / 8, true);
  v.setUint16(14, bits, true);
  return body;
}

function le16(samples: number[]): Uint8Array {
  return new Uint8Array(new Int16Array(samples).buffer);
}

describe('encodeWav and parseWav', () => {
  it('round-trips mono PCM16 through a canonical 44-byte header', () => {
    const pcm = sine(440, 16000, 0.1, 20000);
    const file = encodeWav(pcm, 16000);
    expect(file).toHaveLength(44 + pcm.length * 2);
    expect(new TextDecoder().decode(file.subarray(0, 4))).toBe('RIFF');
    const parsed = parseWav(file);
    expect(parsed.sampleRateHz).toBe(16000);
    expect(parsed.channels).toBe(1);
    expect(Array.from(parsed.pcm)).toEqual(Array.from(pcm));
  });

  it('writes interleaved channels with the block align and byte rate of the channel count', () => {
    const file = encodeWav(new Int16Array([1000, -1000, 3000, -3000, 5000, -5000]), 8000, 2);
    expect(file).toHaveLength(44 + 12);
    const view = new DataView(file.buffer);
    expect(view.getUint16(22, true)).toBe(2);
    expect(view.getUint32(28, true)).toBe(8000 * 4);
    expect(view.getUint16(32, true)).toBe(4);
    expect(view.getUint32(40, true)).toBe(12);
    expect(view.getInt16(44 + 6, true)).toBe(-3000);
    const parsed = parseWav(file);
    expect(parsed.channels).toBe(2);
    expect(Array.from(parsed.pcm)).toEqual([0, 0, 0]); // each frame averages +x and -x
  });

  it('rejects samples that are not whole frames', () => {
    expect(() => encodeWav(new Int16Array(3), 8000, 2)).toThrow(/not whole frames/);
  });

  it('parses a file that sits at an odd offset inside a larger buffer', () => {
    const file = encodeWav(new Int16Array([1, -2, 3]), 8000);
    const shifted = new Uint8Array(file.length + 1);
    shifted.set(file, 1);
    expect(Array.from(parseWav(shifted.subarray(1)).pcm)).toEqual([1, -2, 3]);
  });
});

describe('parseWav', () => {
  it.each([
    ['0x7FFFF000 (espeak-ng 1.51 --stdout)', 0x7ffff000],
    ['0xFFFFFFFF', 0xffffffff],
    ['0', 0],
  ])('takes the rest of the file when the data size is %s', (_label, declaredSize) => {
    const file = riff(
      [
        { id: 'fmt ', body: fmt({}) },
        { id: 'data', body: le16([100, -100, 32767, -32768, 5]), declaredSize },
      ],
      declaredSize,
    );
    const parsed = parseWav(file);
    expect(parsed.sampleRateHz).toBe(22050);
    expect(Array.from(parsed.pcm)).toEqual([100, -100, 32767, -32768, 5]);
  });

  it('stops at the declared data size when trailing chunks follow', () => {
    const file = riff([
      { id: 'fmt ', body: fmt({}) },
      { id: 'data', body: le16([1, 2, 3]) },
      { id: 'LIST', body: new Uint8Array(10) },
    ]);
    expect(Array.from(parseWav(file).pcm)).toEqual([1, 2, 3]);
  });

  it('skips unknown chunks, including odd-sized ones with their pad byte', () => {
    const file = riff([
      { id: 'fmt ', body: fmt({ rateHz: 8000 }) },
      { id: 'LIST', body: new Uint8Array([1, 2, 3]) },
      { id: 'fact', body: new Uint8Array(4) },
      { id: 'data', body: le16([7, -7]) },
    ]);
    const parsed = parseWav(file);
    expect(parsed.sampleRateHz).toBe(8000);
    expect(Array.from(parsed.pcm)).toEqual([7, -7]);
  });

  it('averages stereo down to mono and reports two channels', () => {
    const file = riff([
      { id: 'fmt ', body: fmt({ channels: 2, rateHz: 44100 }) },
      { id: 'data', body: le16([1000, 3000, -1000, -2000, 32767, 32767]) },
    ]);
    const parsed = parseWav(file);
    expect(parsed.channels).toBe(2);
    expect(Array.from(parsed.pcm)).toEqual([2000, -1500, 32767]);
  });

  it('accepts WAVE_FORMAT_EXTENSIBLE with a PCM sub-format', () => {
    const body = new Uint8Array(40);
    body.set(fmt({ format: 0xfffe, rateHz: 48000 }));
    const v = new DataView(body.buffer);
    v.setUint16(16, 22, true); // cbSize
    v.setUint16(24, 1, true); // SubFormat GUID starts with WAVE_FORMAT_PCM
    const file = riff([
      { id: 'fmt ', body },
      { id: 'data', body: le16([42]) },
    ]);
    expect(parseWav(file)).toMatchObject({ sampleRateHz: 48000, channels: 1 });
  });

  it('rejects input that is not RIFF/WAVE', () => {
    expect(() => parseWav(new TextEncoder().encode('ID3 this is an mp3 file'))).toThrow(/not a RIFF\/WAVE/);
    expect(() => parseWav(new Uint8Array(4))).toThrow(/not a RIFF\/WAVE/);
  });

  it('rejects 8-bit and float WAV files, naming the format', () => {
    const eightBit = riff([
      { id: 'fmt ', body: fmt({ bits: 8 }) },
      { id: 'data', body: new Uint8Array(4) },
    ]);
    expect(() => parseWav(eightBit)).toThrow(/only 16-bit PCM.*8 bits/);
    const float = riff([
      { id: 'fmt ', body: fmt({ format: 3, bits: 32 }) },
      { id: 'data', body: new Uint8Array(8) },
    ]);
    expect(() => parseWav(float)).toThrow(/format tag 3/);
  });

  it('rejects files without a fmt chunk before the data or without data', () => {
    expect(() => parseWav(riff([{ id: 'data', body: le16([1]) }]))).toThrow(/data chunk before fmt/);
    expect(() => parseWav(riff([{ id: 'fmt ', body: fmt({}) }]))).toThrow(/no data chunk/);
    expect(() => parseWav(riff([]))).toThrow(/no fmt chunk/);
  });
});
