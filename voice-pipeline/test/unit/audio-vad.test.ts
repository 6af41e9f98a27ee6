import { describe, expect, it } from 'vitest';
import { EnergyVad } from '../../src/audio/vad.js';
import { toneSpeech } from '../../src/audio/synth.js';
import { concatInt16, levelDbfs } from '../../src/audio/pcm.js';
import { frames, sine, whiteNoise } from './audio-signals.js';

const FRAME_8K = 160;

function decisions(vad: EnergyVad, pcm: Int16Array): boolean[] {
  return frames(pcm, FRAME_8K).map((f) => vad.process(f).isSpeech);
}

const share = (flags: boolean[]): number => flags.filter(Boolean).length / Math.max(1, flags.length);

describe('EnergyVad', () => {
  it('does not call digital silence speech and reports -100 dBFS for it', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    for (const frame of frames(new Int16Array(8000), FRAME_8K)) {
      expect(vad.process(frame)).toEqual({ isSpeech: false, levelDb: -100 });
    }
  });

  it('does not call low background noise speech', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    expect(share(decisions(vad, whiteNoise(-60, 16000)))).toBe(0);
    expect(share(decisions(new EnergyVad({ sampleRateHz: 8000 }), whiteNoise(-50, 16000)))).toBe(0);
  });

  it('calls the voiced bursts of tone speech speech and the gaps between words not', () => {
    const pcm = toneSpeech('What are your opening hours?', 8000);
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    const results = frames(pcm, FRAME_8K).map((f) => vad.process(f));
    const loud = results.filter((r) => r.levelDb > -25);
    const silent = results.filter((r) => r.levelDb === -100);
    expect(loud.length).toBeGreaterThan(20);
    expect(silent.length).toBeGreaterThan(5);
    expect(loud.every((r) => r.isSpeech)).toBe(true);
    expect(silent.some((r) => r.isSpeech)).toBe(false);
  });

  it('decides on a level as it does on the frame it was measured from, floor included', () => {
    const signal = concatInt16([whiteNoise(-60, 4000), toneSpeech('Can you tell me where you are located?', 8000), whiteNoise(-60, 4000)]);
    const byFrame = new EnergyVad({ sampleRateHz: 8000 });
    const byLevel = new EnergyVad({ sampleRateHz: 8000 });
    const decisions = frames(signal, 160).map((f) => [byFrame.process(f), byLevel.decide(levelDbfs(f))]);
    for (const [a, b] of decisions) expect(b).toEqual(a);
    expect(decisions.filter(([a]) => a!.isSpeech).length).toBeGreaterThan(10);
    expect(decisions.filter(([a]) => !a!.isSpeech).length).toBeGreaterThan(10);
    expect(byLevel.noiseFloorDb).toBe(byFrame.noiseFloorDb);
  });

  it('reports each frame level in dBFS', () => {
    const vad = new EnergyVad({ sampleRateHz: 16000 });
    expect(vad.process(sine(1000, 16000, 0.02, 32767)).levelDb).toBeCloseTo(-3.01, 1);
  });

  it('adapts its floor to steady background noise until the noise is no longer speech', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    const flags = decisions(vad, whiteNoise(-35, 8000 * 4));
    expect(flags[0]).toBe(true); // louder than the initial floor, so speech at first
    expect(share(flags.slice(-100))).toBe(0); // last 2 s
    expect(vad.noiseFloorDb).toBeGreaterThan(-38);
    expect(vad.noiseFloorDb).toBeLessThan(-32);
  });

  it('still hears speech-level sound over an adapted background', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    decisions(vad, whiteNoise(-40, 8000 * 3));
    const noise = whiteNoise(-40, 8000 * 0.5, 99);
    const voice = sine(200, 8000, 0.5, 8000); // about -15 dBFS
    const mixed = Int16Array.from(voice, (v, i) => v + noise[i]!);
    expect(share(decisions(vad, mixed))).toBe(1);
  });

  it('lowers its floor quickly when the background goes quiet again', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000 });
    decisions(vad, whiteNoise(-35, 8000 * 3));
    decisions(vad, whiteNoise(-65, 8000 * 0.5, 3));
    expect(vad.noiseFloorDb).toBeLessThan(-60);
    expect(vad.process(sine(200, 8000, 0.02, 2000)).isSpeech).toBe(true); // about -27 dBFS
  });

  it('never calls frames below minSpeechDb speech, whatever the floor', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000, minSpeechDb: -30, marginDb: 6 });
    decisions(vad, new Int16Array(8000)); // floor down at silence
    expect(share(decisions(vad, whiteNoise(-33, 1600)))).toBe(0);
    expect(share(decisions(vad, whiteNoise(-25, 1600)))).toBe(1);
  });

  it('starts again from the initial floor after reset', () => {
    const vad = new EnergyVad({ sampleRateHz: 8000, minSpeechDb: -45, marginDb: 12 });
    const initial = vad.noiseFloorDb;
    expect(initial).toBe(-57);
    decisions(vad, concatInt16([whiteNoise(-30, 16000)]));
    expect(vad.noiseFloorDb).not.toBe(initial);
    vad.reset();
    expect(vad.noiseFloorDb).toBe(initial);
  });
});
