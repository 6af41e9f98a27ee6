import { describe, expect, it } from 'vitest';
import { coughMulaw, silenceMulaw, speechFixtureSlug } from '../../src/audio/caller-speech.js';
import { MULAW_SILENCE, mulawDecode } from '../../src/audio/g711.js';
import { levelDbfs } from '../../src/audio/pcm.js';
import { EnergyVad } from '../../src/audio/vad.js';
import { frames } from './audio-signals.js';

describe('speechFixtureSlug', () => {
  it('lower-cases and turns each run of other characters into one dash', () => {
    expect(speechFixtureSlug('Hi, I would like to book a table for two tonight.')).toBe('hi-i-would-like-to-book-a-table-for-two-tonight');
    expect(speechFixtureSlug("Seven o'clock works for me.")).toBe('seven-o-clock-works-for-me');
    expect(speechFixtureSlug('mm-hmm')).toBe('mm-hmm');
    expect(speechFixtureSlug('  Hello?  ')).toBe('hello');
    expect(speechFixtureSlug('¿Qué?')).toBe('qu');
    expect(speechFixtureSlug('!!!')).toBe('');
  });

  it('keeps at most 60 characters and no trailing dash', () => {
    const slug = speechFixtureSlug('Actually, can you tell me where you are located and when you open tomorrow?');
    expect(slug.length).toBeLessThanOrEqual(60);
    expect(slug).toBe('actually-can-you-tell-me-where-you-are-located-and-when-you');
    expect(speechFixtureSlug(`${'a'.repeat(59)} b`)).toBe('a'.repeat(59));
  });
});

describe('coughMulaw', () => {
  it('is a deterministic 150 ms burst of loud noise', () => {
    const cough = coughMulaw();
    expect(cough).toHaveLength(1200);
    expect(Array.from(coughMulaw())).toEqual(Array.from(cough));
    const pcm = mulawDecode(cough);
    expect(levelDbfs(pcm)).toBeGreaterThan(-16);
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    expect(frames(pcm, 160).some((f) => vad.process(f).isSpeech)).toBe(true);
  });

  it('returns a fresh copy each time', () => {
    const first = coughMulaw();
    first.fill(0);
    expect(coughMulaw().some((b) => b !== 0)).toBe(true);
  });
});

describe('silenceMulaw', () => {
  it('gives 8 bytes of 0xFF per millisecond', () => {
    const silence = silenceMulaw(20);
    expect(silence).toHaveLength(160);
    expect(silence.every((b) => b === MULAW_SILENCE)).toBe(true);
    expect(silenceMulaw(0)).toHaveLength(0);
    expect(silenceMulaw(0.5)).toHaveLength(4);
  });
});
