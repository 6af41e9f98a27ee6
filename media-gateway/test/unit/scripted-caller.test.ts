import { describe, expect, it } from 'vitest';
import type { PlayedChunk } from '../../src/simulators/caller-playback.js';
import { runCallerScript } from '../../src/simulators/scripted-caller.js';
import type { ScriptedCall } from '../../src/simulators/scripted-caller.js';

/**
 * The barge-in reaction the load test and the e2e tests report: caller speech onset → the
 * carrier's `clear` arrived, or, on a carrier without one (Vonage), the agent audio playing
 * at the onset stopped at the caller. A fake call with fixed timelines (performance.now ms):
 * the agent speaks from 900, the caller talks over it from 1000 to 1500.
 */
function fakeCall(agentAudio: [number, number][], clearsWhileSaying: number[] = []): ScriptedCall {
  const clears: number[] = [500]; // an earlier barge-in's clear: not this one's
  const played: PlayedChunk[] = agentAudio.map(([startedAt, endedAt]) => ({ startedAt, endedAt, bytes: (endedAt - startedAt) * 8 }));
  return {
    closed: new Promise<void>(() => {}),
    say: () => {
      clears.push(...clearsWhileSaying);
      return Promise.resolve({ startedAt: 1000, endedAt: 1500 });
    },
    pressDigit: () => {},
    clears,
    agentAudio: played,
    playbackQueuedMs: 0,
    // The agent has started (the script waits for it before talking over it).
    firstAgentAudioAfter: () => 900,
  } as unknown as ScriptedCall;
}

/** 20 ms frames from `from` to `to`. */
const frames = (from: number, to: number): [number, number][] => Array.from({ length: Math.round((to - from) / 20) }, (_, i) => [from + i * 20, from + (i + 1) * 20]);

async function bargeIn(call: ScriptedCall): Promise<{ reaction: number | null | undefined; clearedAt: number | null | undefined }> {
  const [t] = await runCallerScript(call, [{ sayOverAgent: 'wait', afterMs: 0 }], { speech: () => Promise.resolve(new Uint8Array(160)) });
  return { reaction: t!.bargeInReactionMs, clearedAt: t!.clearedAt };
}

describe('runCallerScript barge-in reaction', () => {
  it("uses the carrier's clear when one arrived while the caller spoke", async () => {
    expect(await bargeIn(fakeCall(frames(900, 1200), [1085]))).toEqual({ reaction: 85, clearedAt: 1085 });
  });

  it('without a clear: the end of the stretch of agent audio that was playing at the onset', async () => {
    // Frames end at 1080; the next answer starts at 1700, after the caller finished.
    expect(await bargeIn(fakeCall([...frames(900, 1080), ...frames(1700, 1800)]))).toEqual({ reaction: 80, clearedAt: 1080 });
  });

  it('bridges a gap between frames of up to 30 ms (timer jitter), not a longer one', async () => {
    expect(await bargeIn(fakeCall([...frames(900, 1020), ...frames(1045, 1105)]))).toEqual({ reaction: 105, clearedAt: 1105 });
    expect(await bargeIn(fakeCall([...frames(900, 1020), ...frames(1060, 1120)]))).toEqual({ reaction: 20, clearedAt: 1020 });
  });

  it('is null when the agent audio went on past the end of the caller speech, or nothing was playing', async () => {
    expect(await bargeIn(fakeCall(frames(900, 1600)))).toEqual({ reaction: null, clearedAt: null });
    expect(await bargeIn(fakeCall([...frames(900, 960), ...frames(1700, 1800)]))).toEqual({ reaction: null, clearedAt: null });
  });
});
