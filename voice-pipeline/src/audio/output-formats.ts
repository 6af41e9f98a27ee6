/**
 * Raw (headerless) audio formats by the names TTS output formats use (`ulaw_8000`,
 * `pcm_16000`, …): what the TTS processor needs to reckon playback time from bytes, and
 * what the ElevenLabs adapter and simulator put on the wire (reference/tts.md §1).
 */

/** Every raw output format: the adapters' `TtsOutputFormat` is a subset. */
const RAW_OUTPUT_FORMATS = ['ulaw_8000', 'alaw_8000', 'pcm_8000', 'pcm_16000', 'pcm_22050', 'pcm_24000', 'pcm_44100'] as const;
export type RawOutputFormat = (typeof RAW_OUTPUT_FORMATS)[number];

/** Encoding and sample rate behind a raw format (`pcm_*` is s16le mono, `ulaw`/`alaw` raw G.711). */
export interface RawFormatSpec {
  encoding: 'mulaw' | 'alaw' | 'pcm16';
  sampleRateHz: number;
  bytesPerSample: number;
}

/** Parses `ulaw_8000`, `pcm_16000`, …; `null` for mp3/opus or anything unknown (never for a {@link RawOutputFormat}). */
export function rawFormatSpec(format: RawOutputFormat): RawFormatSpec;
export function rawFormatSpec(format: string): RawFormatSpec | null;
export function rawFormatSpec(format: string): RawFormatSpec | null {
  if (!(RAW_OUTPUT_FORMATS as readonly string[]).includes(format)) return null;
  const [kind, rate] = format.split('_') as [string, string];
  const sampleRateHz = Number(rate);
  if (kind === 'ulaw') return { encoding: 'mulaw', sampleRateHz, bytesPerSample: 1 };
  if (kind === 'alaw') return { encoding: 'alaw', sampleRateHz, bytesPerSample: 1 };
  return { encoding: 'pcm16', sampleRateHz, bytesPerSample: 2 };
}
