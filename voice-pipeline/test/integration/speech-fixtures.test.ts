import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  SPEECH_FIXTURES_DIR,
  callerSpeechMulaw,
  callerSpeechMulawWithSource,
  readSpeechFixture,
  speechFixtureSlug,
} from '../../src/audio/caller-speech.js';
import { FIXTURE_CALLER_LINES } from '../../src/audio/caller-lines.js';
import { mulawDecode } from '../../src/audio/g711.js';
import { estimateSpeechMs, hasEspeak } from '../../src/audio/synth.js';
import { EnergyVad } from '../../src/audio/vad.js';
import { frames } from '../unit/audio-signals.js';

const noEspeak = { hasEspeak: async (): Promise<boolean> => false };
const espeakInstalled = await hasEspeak();

describe('committed caller speech fixtures', () => {
  it.each(FIXTURE_CALLER_LINES)('has a plausible μ-law clip for %j', async (line) => {
    const bytes = await readSpeechFixture(line);
    expect(bytes, `missing fixtures/speech/${speechFixtureSlug(line)}.ulaw`).toBeDefined();
    const ms = bytes!.length / 8;
    expect(ms).toBeGreaterThan(0.4 * estimateSpeechMs(line));
    expect(ms).toBeLessThan(3 * estimateSpeechMs(line) + 500);
  });

  it('contains speech an energy VAD detects', async () => {
    const pcm = mulawDecode((await readSpeechFixture('What are your opening hours?'))!);
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    const flags = frames(pcm, 160).map((f) => vad.process(f).isSpeech);
    expect(flags.filter(Boolean).length / flags.length).toBeGreaterThan(0.5);
  });

  it('returns undefined for a line without a fixture and copies for repeated reads', async () => {
    expect(await readSpeechFixture('A line nobody recorded')).toBeUndefined();
    const a = (await readSpeechFixture('Hello?'))!;
    a.fill(0);
    expect((await readSpeechFixture('Hello?'))!.some((b) => b !== 0)).toBe(true);
  });
});

describe('callerSpeechMulaw without espeak-ng', () => {
  it('uses the committed fixture for a known line', async () => {
    const { mulaw, source } = await callerSpeechMulawWithSource("Seven o'clock works for me.", noEspeak);
    expect(source).toBe('fixture');
    const file = await readFile(new URL('seven-o-clock-works-for-me.ulaw', SPEECH_FIXTURES_DIR));
    expect(Buffer.from(mulaw).equals(file)).toBe(true);
  });

  it('falls back to tone speech for other lines', async () => {
    const line = 'Do you have a table by the window?';
    const { mulaw, source } = await callerSpeechMulawWithSource(line, noEspeak);
    expect(source).toBe('tone');
    expect(mulaw).toHaveLength(estimateSpeechMs(line) * 8);
  });

  it('falls back to tone speech when the fixtures folder is missing', async () => {
    const deps = { ...noEspeak, fixturesDir: new URL('./no-such-folder/', SPEECH_FIXTURES_DIR) };
    expect((await callerSpeechMulawWithSource('Hello?', deps)).source).toBe('tone');
  });
});

describe('callerSpeechMulaw with espeak-ng', () => {
  it.skipIf(!espeakInstalled)('synthesizes live and matches the committed fixture in length', async () => {
    const { mulaw, source } = await callerSpeechMulawWithSource('Yes please.');
    expect(source).toBe('espeak-ng');
    const fixture = (await readSpeechFixture('Yes please.'))!;
    expect(Math.abs(mulaw.length - fixture.length)).toBeLessThan(0.1 * fixture.length);
    expect(await callerSpeechMulaw('Yes please.')).toHaveLength(mulaw.length);
  });
});
