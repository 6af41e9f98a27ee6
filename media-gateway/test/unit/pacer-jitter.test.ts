import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { OutboundPacer } from '../../src/twilio/pacer.js';
import type { PacerSink } from '../../src/twilio/pacer.js';

/**
 * The pacer under a timer that fires a little off its slot, as Node's does: its loop clock
 * is cached and whole milliseconds, so a timer scheduled from `performance.now()` fires up
 * to ~1 ms early (measured: 3 ticks in 4 early, median −0.3 ms) or a few ms late. Issue #5:
 * at 20 idle calls the gateway counted 50 late frames (gap > 40 ms with audio waiting).
 */

const clock = (): number => Date.now();

function timedSink(): { sink: PacerSink; at: number[] } {
  const at: number[] = [];
  return { at, sink: { sendFrame: () => at.push(clock()), sendMark: () => {} } };
}

function audio(ms: number): Uint8Array {
  return new Uint8Array(ms * 8).fill(0x10);
}

/** A timer that fires `offsets[i]` ms after its due time on its i-th use (negative: early), cycling. */
function jitteryTimer(offsets: number[]): (fn: () => void, ms: number) => unknown {
  let i = 0;
  return (fn, ms) => setTimeout(fn, Math.max(0, ms + offsets[i++ % offsets.length]!));
}

const gaps = (at: number[]): number[] => at.slice(1).map((t, i) => t - at[i]!);

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('OutboundPacer under timer jitter', () => {
  // A stream's lead at the grid's slots depends on when its burst left between two slots;
  // from 1 ms to 10 ms before a slot puts it within a millisecond of the threshold.
  for (const joinMs of [10, 10.5, 11, 19, 29.5]) {
    it(`sends one frame per slot, never a 40 ms gap, when ticks fire up to 1 ms early (leg joins at +${joinMs} ms)`, () => {
      const pacer = new OutboundPacer({ now: clock, setTimer: jitteryTimer([-1, 0, -0.5, 0.5, 0, -1, 1]) });
      const first = timedSink();
      pacer.register(first.sink).enqueueAudio(audio(3000)); // starts the grid at t0
      vi.advanceTimersByTime(joinMs);
      const leg = timedSink();
      const stream = pacer.register(leg.sink);
      stream.enqueueAudio(audio(2000));
      vi.advanceTimersByTime(2500);
      expect(leg.at).toHaveLength(100);
      const steady = gaps(leg.at).slice(3); // after the designed burst and the first slot after it (its phase)
      expect(Math.max(...steady)).toBeLessThanOrEqual(22);
      expect(Math.min(...steady)).toBeGreaterThanOrEqual(18);
      expect(stream.stats.lateFrames).toBe(0);
      pacer.stop();
    });
  }

  it('keeps one frame per slot when more audio arrives mid-slot (the next sentence from TTS)', () => {
    for (const joinMs of [1, 5, 10, 15]) {
      for (const chunkAtMs of [3, 8, 12, 17]) {
        const pacer = new OutboundPacer({ now: clock });
        pacer.register(timedSink().sink).enqueueAudio(audio(3000));
        vi.advanceTimersByTime(joinMs);
        const leg = timedSink();
        const stream = pacer.register(leg.sink);
        stream.enqueueAudio(audio(400));
        vi.advanceTimersByTime(200 - joinMs + chunkAtMs); // between two slots, audio still queued
        stream.enqueueAudio(audio(400));
        vi.advanceTimersByTime(1000);
        expect(leg.at).toHaveLength(40);
        expect(gaps(leg.at).slice(3).filter((g) => g !== 20)).toEqual([]);
        pacer.stop();
      }
    }
  });

  it('sends one frame per slot when ticks fire a few ms late, whatever the leg\'s phase', () => {
    for (const joinMs of [1, 5, 10, 11, 12, 15]) {
      const pacer = new OutboundPacer({ now: clock, setTimer: jitteryTimer([0, 3, 1, 0, 4, 0.5]) });
      pacer.register(timedSink().sink).enqueueAudio(audio(3000));
      vi.advanceTimersByTime(joinMs);
      const leg = timedSink();
      const stream = pacer.register(leg.sink);
      stream.enqueueAudio(audio(2000));
      vi.advanceTimersByTime(2500);
      const steady = gaps(leg.at).slice(3);
      expect(steady.filter((g) => g < 15 || g > 25)).toEqual([]);
      expect(stream.stats.lateFrames).toBe(0);
      pacer.stop();
    }
  });
});
