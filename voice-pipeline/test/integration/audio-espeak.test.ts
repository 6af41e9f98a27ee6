import { describe, expect, it } from 'vitest';
import { estimateSpeechMs, hasEspeak, synthesizeSpeech, synthesizeSpeechWithSource } from '../../src/audio/synth.js';
import { EnergyVad } from '../../src/audio/vad.js';
import { frames } from '../unit/audio-signals.js';

// Runs the real espeak-ng binary; skipped on machines without it (the tone fallback is unit-tested).
const espeakInstalled = await hasEspeak();

function speechShare(pcm: Int16Array, rateHz: number): number {
  const vad = new EnergyVad({ sampleRateHz: rateHz });
  const flags = frames(pcm, rateHz / 50).map((f) => vad.process(f).isSpeech);
  return flags.filter(Boolean).length / flags.length;
}

describe('synthesizeSpeech with espeak-ng', () => {
  it('answers hasEspeak the same way every time', async () => {
    expect(await hasEspeak()).toBe(espeakInstalled);
  });

  it.skipIf(!espeakInstalled)('speaks a sentence at a plausible length that an energy VAD calls speech', async () => {
    const text = 'I need to change my booking.';
    const { pcm, source } = await synthesizeSpeechWithSource(text, 16000);
    expect(source).toBe('espeak-ng');
    const ms = pcm.length / 16;
    expect(ms).toBeGreaterThan(0.5 * estimateSpeechMs(text));
    expect(ms).toBeLessThan(1.5 * estimateSpeechMs(text));
    expect(speechShare(pcm, 16000)).toBeGreaterThan(0.5);
  });

  it.skipIf(!espeakInstalled)('renders the same clip at each requested rate', async () => {
    const text = 'Can you repeat that please?';
    const at8k = await synthesizeSpeech(text, 8000);
    const at24k = await synthesizeSpeech(text, 24000);
    expect(Math.abs(at24k.length - 3 * at8k.length)).toBeLessThanOrEqual(3);
  });

  it.skipIf(!espeakInstalled)('serves repeats from the cache as independent copies', async () => {
    const text = 'Yes please.';
    const [a, b] = await Promise.all([synthesizeSpeech(text, 8000), synthesizeSpeech(text, 8000)]);
    expect(Array.from(b)).toEqual(Array.from(a));
    a.fill(0);
    expect((await synthesizeSpeech(text, 8000)).some((s) => s !== 0)).toBe(true);
  });

  it.skipIf(!espeakInstalled)('passes text starting with a dash as text, not as an option', async () => {
    const { pcm, source } = await synthesizeSpeechWithSource('-v is not a voice', 8000);
    expect(source).toBe('espeak-ng');
    expect(pcm.length).toBeGreaterThan(4000);
  });
});
