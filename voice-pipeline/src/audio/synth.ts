/**
 * Offline speech for simulators and test callers: espeak-ng when the machine has it,
 * otherwise deterministic voiced-like tone bursts that an energy VAD calls speech.
 * Nothing here is production TTS; it exists so tests and load tests have plausible audio
 * without any provider.
 */
import { execFile } from 'node:child_process';
import { parseWav } from './wav.js';
import { resample } from './resampler.js';

/** Which generator produced a clip. */
export type SpeechSource = 'espeak-ng' | 'tone';

/** A synthesized clip and what made it. */
export interface SynthesizedSpeech {
  /** Mono signed 16-bit samples at the requested rate; the caller owns this copy. */
  pcm: Int16Array;
  source: SpeechSource;
}

const ESPEAK_ARGS = ['--stdout', '-v', 'en-us', '-s', '170'];
const ESPEAK_TIMEOUT_MS = 30_000;
const CACHE_MAX_ENTRIES = 500;

const LETTER_MS = 70;
const WORD_GAP_MS = 120;
/** Extra pause after a word ending in , . ; : ? or ! */
const PUNCTUATION_GAP_MS = 120;
/** Letters per tone syllable (one amplitude envelope each). */
const LETTERS_PER_SYLLABLE = 3;

let espeakCheck: Promise<boolean> | undefined;

function isEnoent(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'ENOENT';
}

/** Whether `espeak-ng` can be run (checked once per process with `espeak-ng --version`). */
export function hasEspeak(): Promise<boolean> {
  espeakCheck ??= new Promise((resolve) => {
    execFile('espeak-ng', ['--version'], { timeout: ESPEAK_TIMEOUT_MS }, (error) => resolve(!error));
  });
  return espeakCheck;
}

function runEspeak(text: string): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    // `--` so text starting with "-" is not read as an option; execFile never involves a shell.
    execFile(
      'espeak-ng',
      [...ESPEAK_ARGS, '--', text],
      { encoding: 'buffer', maxBuffer: 256 * 1024 * 1024, timeout: ESPEAK_TIMEOUT_MS },
      (error, stdout) => (error ? reject(error) : resolve(stdout)),
    );
  });
}

const cache = new Map<string, Promise<SynthesizedSpeech>>();

async function synthesizeUncached(text: string, sampleRateHz: number): Promise<SynthesizedSpeech> {
  if (await hasEspeak()) {
    try {
      const wav = parseWav(await runEspeak(text));
      return { pcm: resample(wav.pcm, wav.sampleRateHz, sampleRateHz), source: 'espeak-ng' };
    } catch (error) {
      // Uninstalled since the check: remember and fall through to tones. Other failures surface.
      if (!isEnoent(error)) throw new Error(`espeak-ng failed for ${JSON.stringify(text)}`, { cause: error });
      espeakCheck = Promise.resolve(false);
    }
  }
  return { pcm: toneSpeech(text, sampleRateHz), source: 'tone' };
}

/**
 * Speaks `text` with espeak-ng (voice en-us, 170 words per minute, rendered at 22,050 Hz
 * and resampled to `sampleRateHz`), or with {@link toneSpeech} when espeak-ng is not
 * installed. Results are cached per text and rate (the 500 most recent), and concurrent
 * requests for the same clip share one espeak-ng run. Every call returns its own copy.
 *
 * @throws Error when espeak-ng is installed but fails (the cause is attached).
 */
export async function synthesizeSpeechWithSource(text: string, sampleRateHz: number): Promise<SynthesizedSpeech> {
  const key = `${sampleRateHz}\n${text}`;
  let pending = cache.get(key);
  if (pending) {
    cache.delete(key); // re-insert as most recent
  } else {
    pending = synthesizeUncached(text, sampleRateHz);
    pending.catch(() => cache.delete(key));
    if (cache.size >= CACHE_MAX_ENTRIES) cache.delete(cache.keys().next().value!);
  }
  cache.set(key, pending);
  const { pcm, source } = await pending;
  return { pcm: pcm.slice(), source };
}

/** {@link synthesizeSpeechWithSource} without the source: mono PCM16 at `sampleRateHz`. */
export async function synthesizeSpeech(text: string, sampleRateHz: number): Promise<Int16Array> {
  return (await synthesizeSpeechWithSource(text, sampleRateHz)).pcm;
}

interface ToneWord {
  letters: number;
  pauseAfterMs: number;
}

function toneWords(text: string): ToneWord[] {
  const words: ToneWord[] = [];
  for (const token of text.split(/\s+/)) {
    const letters = token.replace(/[^\p{L}\p{N}]/gu, '').length;
    if (letters === 0) continue;
    words.push({ letters, pauseAfterMs: WORD_GAP_MS + (/[,.;:?!]$/.test(token) ? PUNCTUATION_GAP_MS : 0) });
  }
  return words;
}

/**
 * Duration in ms of {@link toneSpeech} for `text` (exact) and a rough estimate for
 * espeak-ng, which at 170 words per minute is typically 10–30 % shorter on short phrases:
 * 70 ms per letter or digit, 120 ms between words, 120 ms more after punctuation.
 */
export function estimateSpeechMs(text: string): number {
  const words = toneWords(text);
  let ms = 0;
  words.forEach((w, i) => {
    ms += w.letters * LETTER_MS;
    if (i < words.length - 1) ms += w.pauseAfterMs;
  });
  return ms;
}

/** FNV-1a, so tone pitch contours are a pure function of the text. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const HARMONICS = [1, 0.6, 0.4, 0.25, 0.15];
/** Peak of the fundamental; the harmonic stack then sits near -18 dBFS RMS inside a syllable. */
const FUNDAMENTAL_AMPLITUDE = 4600;
const ATTACK_MS = 25;
const DECAY_MS = 40;

/**
 * Deterministic stand-in for speech: one voiced burst per three letters (140–220 Hz
 * fundamental chosen from the text's hash, falling slightly through the syllable, four
 * overtones, raised-cosine attack and decay), silence between words. Loud enough
 * (about -20 dBFS over a word) for an energy VAD to call speech; length is
 * {@link estimateSpeechMs}. Empty or punctuation-only text gives an empty array.
 */
export function toneSpeech(text: string, sampleRateHz: number): Int16Array {
  const words = toneWords(text);
  const out = new Int16Array(Math.round((estimateSpeechMs(text) * sampleRateHz) / 1000));
  let seed = hash32(text);
  const nextUnit = (): number => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 0x1_0000_0000;
  };
  let atMs = 0;
  let phase = 0;
  words.forEach((word, w) => {
    let remaining = word.letters;
    while (remaining > 0) {
      // Avoid a one-letter tail syllable: "hello" is 3 + 2, "four" is 2 + 2.
      const letters = remaining === LETTERS_PER_SYLLABLE + 1 ? 2 : Math.min(LETTERS_PER_SYLLABLE, remaining);
      const durationMs = letters * LETTER_MS;
      const f0 = 140 + 80 * nextUnit();
      const gain = 0.75 + 0.25 * nextUnit();
      const start = Math.round((atMs * sampleRateHz) / 1000);
      const end = Math.min(out.length, Math.round(((atMs + durationMs) * sampleRateHz) / 1000));
      const n = end - start;
      const attack = Math.max(1, Math.round((ATTACK_MS * sampleRateHz) / 1000));
      const decay = Math.max(1, Math.round((DECAY_MS * sampleRateHz) / 1000));
      for (let i = 0; i < n; i++) {
        const env =
          i < attack ? 0.5 - 0.5 * Math.cos((Math.PI * i) / attack) : i >= n - decay ? 0.5 - 0.5 * Math.cos((Math.PI * (n - i)) / decay) : 1;
        const f = f0 * (1 - (0.08 * i) / n); // gentle declination
        phase += (2 * Math.PI * f) / sampleRateHz;
        let v = 0;
        for (let h = 0; h < HARMONICS.length; h++) v += HARMONICS[h]! * Math.sin((h + 1) * phase);
        out[start + i] = Math.round(FUNDAMENTAL_AMPLITUDE * gain * env * v);
      }
      atMs += durationMs;
      remaining -= letters;
    }
    if (w < words.length - 1) atMs += word.pauseAfterMs;
  });
  return out;
}
