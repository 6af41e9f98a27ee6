import { describe, expect, it } from 'vitest';
import { estimateSpeechMs, toneSpeech } from '../../src/audio/synth.js';
import { levelDbfs } from '../../src/audio/pcm.js';
import { frames } from './audio-signals.js';

describe('toneSpeech', () => {
  it('lasts exactly estimateSpeechMs at any rate', () => {
    const text = "Thanks, that's all. Goodbye.";
    for (const rateHz of [8000, 16000, 22050, 24000]) {
      expect(toneSpeech(text, rateHz)).toHaveLength(Math.round((estimateSpeechMs(text) * rateHz) / 1000));
    }
  });

  it('grows with the text: 70 ms a letter, 120 ms between words, 120 ms more after punctuation', () => {
    expect(estimateSpeechMs('Hello?')).toBe(350);
    expect(estimateSpeechMs('Yes please.')).toBe(3 * 70 + 120 + 6 * 70);
    expect(estimateSpeechMs('Yes, please.')).toBe(3 * 70 + 240 + 6 * 70);
    const short = toneSpeech('Yes.', 8000).length;
    const long = toneSpeech('Yes, I would like to book a table for four people tomorrow.', 8000).length;
    expect(long).toBeGreaterThan(8 * short);
  });

  it('is deterministic and differs between texts', () => {
    const a = toneSpeech('What are your opening hours?', 8000);
    expect(Array.from(toneSpeech('What are your opening hours?', 8000))).toEqual(Array.from(a));
    const b = toneSpeech('What are your closing hours?', 8000);
    expect(b).toHaveLength(a.length);
    expect(Array.from(b)).not.toEqual(Array.from(a));
  });

  it('is about -20 dBFS while voiced, silent between words, and never clips', () => {
    const pcm = toneSpeech('I need to change my booking.', 8000);
    const levels = frames(pcm, 160).map(levelDbfs);
    const voiced = levels.filter((l) => l > -60);
    const median = voiced.sort((x, y) => x - y)[Math.floor(voiced.length / 2)]!;
    expect(median).toBeGreaterThan(-24);
    expect(median).toBeLessThan(-16);
    expect(levels.filter((l) => l === -100).length).toBeGreaterThan(20); // 5 gaps of 120 ms
    expect(Math.max(...pcm.map(Math.abs))).toBeLessThan(32000);
  });

  it('gives nothing for empty or punctuation-only text', () => {
    expect(toneSpeech('', 8000)).toHaveLength(0);
    expect(toneSpeech(' ?! ', 16000)).toHaveLength(0);
    expect(estimateSpeechMs('  ')).toBe(0);
  });
});
