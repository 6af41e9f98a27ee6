/**
 * What a simulated phone caller sends: 8 kHz G.711 μ-law, the Twilio/Telnyx default
 * (reference/audio-formats.md). Speech comes from espeak-ng when installed, else from the
 * committed clips in `voice-pipeline/fixtures/speech/` (made by
 * `scripts/make-speech-fixtures.ts`), else from tone bursts.
 */
import { readFile } from 'node:fs/promises';
import { mulawEncode, MULAW_SILENCE } from './g711.js';
import { hasEspeak, synthesizeSpeech, toneSpeech } from './synth.js';

/** Rate of every clip this module returns. */
export const CALLER_SAMPLE_RATE_HZ = 8000;

/** Where a caller clip came from. */
export type CallerSpeechSource = 'espeak-ng' | 'fixture' | 'tone';

/** The committed fixture clips, resolved from this file so it works from any working directory. */
export const SPEECH_FIXTURES_DIR = new URL('../../fixtures/speech/', import.meta.url);

/** Collaborators of {@link callerSpeechMulaw}, replaceable in tests. */
export interface CallerSpeechDeps {
  /** Defaults to the memoised espeak-ng probe from synth.ts. */
  hasEspeak?: () => Promise<boolean>;
  /** Folder holding `<slug>.ulaw` files; defaults to {@link SPEECH_FIXTURES_DIR}. */
  fixturesDir?: URL;
}

/**
 * File name stem of a caller line's fixture: lower case, each run of characters other
 * than a–z and 0–9 becomes one `-`, no leading or trailing `-`, at most 60 characters
 * ("Seven o'clock works for me." → `seven-o-clock-works-for-me`).
 */
export function speechFixtureSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
}

const fixtureCache = new Map<string, Promise<Uint8Array | undefined>>();

/**
 * Reads the committed μ-law clip for `text` (raw 8 kHz, no header), or `undefined` when
 * there is none. Reads are cached per file; each call returns its own copy.
 */
export async function readSpeechFixture(text: string, fixturesDir: URL = SPEECH_FIXTURES_DIR): Promise<Uint8Array | undefined> {
  const slug = speechFixtureSlug(text);
  if (slug === '') return undefined;
  const file = new URL(`${slug}.ulaw`, fixturesDir);
  let pending = fixtureCache.get(file.href);
  if (!pending) {
    pending = readFile(file).then(
      (buffer) => new Uint8Array(buffer),
      (error: unknown) => {
        if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
        throw error;
      },
    );
    fixtureCache.set(file.href, pending);
    pending.catch(() => fixtureCache.delete(file.href));
  }
  const bytes = await pending;
  return bytes?.slice();
}

/** {@link callerSpeechMulaw} and which source produced the clip. */
export async function callerSpeechMulawWithSource(
  text: string,
  deps: CallerSpeechDeps = {},
): Promise<{ mulaw: Uint8Array; source: CallerSpeechSource }> {
  if (await (deps.hasEspeak ?? hasEspeak)()) {
    return { mulaw: mulawEncode(await synthesizeSpeech(text, CALLER_SAMPLE_RATE_HZ)), source: 'espeak-ng' };
  }
  const fixture = await readSpeechFixture(text, deps.fixturesDir);
  if (fixture) return { mulaw: fixture, source: 'fixture' };
  return { mulaw: mulawEncode(toneSpeech(text, CALLER_SAMPLE_RATE_HZ)), source: 'tone' };
}

/**
 * A caller saying `text`, as 8 kHz μ-law bytes (a new array the caller owns): espeak-ng
 * when installed, else the committed fixture for that line, else tone speech.
 */
export async function callerSpeechMulaw(text: string, deps: CallerSpeechDeps = {}): Promise<Uint8Array> {
  return (await callerSpeechMulawWithSource(text, deps)).mulaw;
}

const COUGH_MS = 150;
let coughClip: Uint8Array | undefined;

/**
 * A ≈150 ms burst of loud noise (fast attack, exponential decay, about -12 dBFS RMS, peaks
 * near full scale): a caller's cough. An energy VAD calls a few of its frames speech; it is
 * the turn-taking logic's job not to treat it as a barge-in. Deterministic (fixed-seed
 * PRNG); 8 kHz μ-law, a new array per call.
 */
export function coughMulaw(): Uint8Array {
  if (!coughClip) {
    const n = (COUGH_MS * CALLER_SAMPLE_RATE_HZ) / 1000;
    const pcm = new Int16Array(n);
    let seed = 0x2545f491;
    let previous = 0;
    for (let i = 0; i < n; i++) {
      // mulberry32
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      const white = ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000 - 0.5;
      // One-pole low-pass takes the hiss off so it sounds more like a cough than static.
      previous = 0.6 * previous + 0.4 * white;
      const env = Math.min(1, i / 80) * Math.exp(-i / (n * 0.45));
      pcm[i] = Math.round(Math.max(-32768, Math.min(32767, 140000 * env * previous)));
    }
    coughClip = mulawEncode(pcm);
  }
  return coughClip.slice();
}

/** `ms` of μ-law silence at 8 kHz (8 bytes per ms, rounded), a new array. */
export function silenceMulaw(ms: number): Uint8Array {
  return new Uint8Array(Math.max(0, Math.round(ms * (CALLER_SAMPLE_RATE_HZ / 1000)))).fill(MULAW_SILENCE);
}
