import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PHASES, simulatorTicker } from '../../src/simulators/simulator-ticker.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('simulatorTicker', () => {
  it('spreads callers over the phases of the 20 ms period and ticks each one every 20 ms from its own origin', () => {
    const members = Array.from({ length: 10 }, () => {
      const m = { origin: 0, ticks: [] as number[], tick: (now: number) => m.ticks.push(now) };
      return m;
    });
    for (const m of members) m.origin = simulatorTicker.add(m);
    vi.advanceTimersByTime(330);
    for (const m of members) simulatorTicker.remove(m);

    // Round-robin: the first PHASES members start 4 ms apart, the next ones repeat the pattern.
    const offsets = members.map((m) => Math.round((m.origin - members[0]!.origin) % 20));
    expect(offsets).toEqual([0, 4, 8, 12, 16, 0, 4, 8, 12, 16]);
    expect(new Set(offsets).size).toBe(PHASES);
    for (const m of members) {
      expect(m.ticks.length).toBeGreaterThanOrEqual(16);
      // Every tick lands on the member's own grid: origin + k × 20 ms, each slot once.
      const slots = m.ticks.map((t) => (t - m.origin) / 20);
      expect(slots).toEqual(slots.map((_, k) => k));
    }
  });

  it('stops its timer when the last caller leaves', () => {
    const a = { ticks: 0, tick: () => a.ticks++ };
    simulatorTicker.add(a);
    vi.advanceTimersByTime(50);
    simulatorTicker.remove(a);
    const seen = a.ticks;
    expect(seen).toBeGreaterThan(0);
    vi.advanceTimersByTime(60);
    expect(a.ticks).toBe(seen);
    expect(vi.getTimerCount()).toBe(0);
  });
});
