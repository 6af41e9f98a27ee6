import { describe, expect, it } from 'vitest';
import { callerSpeechMulaw, coughMulaw, EnergyVad, MULAW_SILENCE, mulawDecode, mulawEncode, silenceMulaw } from '@vap/voice-pipeline';
import { TurnDetector } from '@vap/voice-pipeline/testing';
import type { Frame } from '@vap/voice-pipeline/testing';
import { EarlyBargeIn } from '../../src/early-barge-in.js';

const FRAME = 160;
const loud = mulawEncode(Int16Array.from({ length: FRAME }, (_, i) => Math.round(9000 * Math.sin(i / 2.5))));
const quiet = new Uint8Array(FRAME).fill(MULAW_SILENCE);

/** A watch on a test clock, and how to feed it frames 20 ms apart from `t0` (each frame's result). */
function watchOf(sensitivity: 'low' | 'medium' | 'high') {
  let now = 0;
  const watch = EarlyBargeIn.forAgent({ enabled: true, sensitivity }, () => now)!;
  return {
    /** One frame arriving at `at`. */
    frameAt: (mulaw: Uint8Array, at: number) => ((now = at), watch.frame(mulaw)),
    feed: (frames: Uint8Array[], t0 = 1000): (number | null)[] => frames.map((f, i) => ((now = t0 + 20 * i), watch.frame(f))),
  };
}

function framesOf(mulaw: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at + FRAME <= mulaw.length; at += FRAME) out.push(mulaw.subarray(at, at + FRAME));
  return out;
}

describe('EarlyBargeIn', () => {
  it('says stop on the fifth voiced frame at medium (100 ms) and the sixth at high (120 ms), with the time since the first one arrived', () => {
    expect(watchOf('medium').feed([quiet, quiet, loud, loud, loud, loud, loud, loud])).toEqual([null, null, null, null, null, null, 80, 100]);
    expect(watchOf('high').feed([loud, loud, loud, loud, loud, loud, loud])).toEqual([null, null, null, null, null, 100, 120]);
    expect(EarlyBargeIn.forAgent({ enabled: false, sensitivity: 'high' })).toBeNull();
  });

  it('keeps the run over one quiet frame, as the turn detector does, and starts again after two', () => {
    // Four voiced frames, one quiet, then the fifth voiced one: 100 ms of voice in 120 ms.
    expect(watchOf('medium').feed([loud, loud, loud, loud, quiet, loud])).toEqual([null, null, null, null, null, 100]);
    expect(watchOf('medium').feed([loud, loud, loud, loud, quiet, quiet, loud, loud, loud, loud, loud])).toEqual([null, null, null, null, null, null, null, null, null, null, 80]);
  });

  it('decides on the frame where the turn detector pauses the agent, on real speech and on a cough over the agent, and never before it', async () => {
    const clips = [
      ['speech', await callerSpeechMulaw('Actually, can you tell me where you are located?'), 0],
      ['cough', coughMulaw(), 0],
      // 60 ms of voice, 60 ms quiet, then on: the detector counts the utterance's voice across the
      // gap (60 + 40 ≥ 100 ms) and pauses two frames before the loop, which counts one run.
      ['a word, a pause, words', Uint8Array.from([...Array(3).fill([...loud]).flat(), ...Array(3).fill([...quiet]).flat(), ...Array(10).fill([...loud]).flat()]), 40],
    ] as const;
    for (const [name, clip, loopLaterMs] of clips) {
      // Quiet before and after the clip, as on a line between words.
      const audio = framesOf(Uint8Array.from([...silenceMulaw(600), ...clip, ...silenceMulaw(600)]));
      const detector = new TurnDetector({ silenceDurationMs: 500, utteranceEndMs: 1000, interruptionEnabled: true, sensitivity: 'medium', finalizeStt: () => {}, vad: new EnergyVad({ sampleRateHz: 8000 }) });
      const paused: number[] = [];
      detector.link((f: Frame) => f.kind === 'agent.pause' && paused.push(f.at), () => {});
      detector.process({ kind: 'agent.audio-started', turnId: 't1', at: 0 }, 'up');
      const watch = watchOf('medium');
      const said: number[] = [];
      audio.forEach((mulaw, i) => {
        const at = 20 * i;
        if (watch.frameAt(mulaw, at) !== null) said.push(at);
        detector.process({ kind: 'audio.in', mulaw, pcm: mulawDecode(mulaw), at }, 'down');
      });
      expect(paused, name).toHaveLength(1);
      expect(said[0]! - paused[0]!, name).toBe(loopLaterMs);
    }
  });
});
