import { describe, expect, it } from 'vitest';
import { PHASES, simulatorTicker } from '../../src/simulators/simulator-ticker.js';

describe('simulatorTicker', () => {
  it('spreads callers over the phases of the 20 ms period and ticks each one every 20 ms from its own origin', async () => {
    const members = Array.from({ length: 10 }, () => {
      const m = { origin: 0, ticks: [] as number[], tick: (now: number) => m.ticks.push(now) };
      return m;
    });
    for (const m of members) m.origin = simulatorTicker.add(m);
    await new Promise((r) => setTimeout(r, 330));
    for (const m of members) simulatorTicker.remove(m);

    // Round-robin: the first PHASES members start 4 ms apart, the next ones repeat the pattern.
    const offsets = members.map((m) => Math.round((m.origin - members[0]!.origin) % 20));
    expect(offsets).toEqual([0, 4, 8, 12, 16, 0, 4, 8, 12, 16]);
    expect(new Set(offsets).size).toBe(PHASES);
    for (const m of members) {
      expect(m.ticks.length).toBeGreaterThanOrEqual(12);
      // Every tick lands on (or just after) the member's own grid: origin + k × 20 ms.
      for (const t of m.ticks) {
        const phase = (((t - m.origin) % 20) + 20) % 20;
        expect(Math.min(phase, 20 - phase)).toBeLessThan(12);
      }
      // No member is ticked twice for one slot.
      const slots = m.ticks.map((t) => Math.round((t - m.origin) / 20));
      expect(new Set(slots).size).toBe(slots.length);
    }
  });

  it('stops its timer when the last caller leaves and starts a fresh grid for the next', async () => {
    const a = { ticks: 0, tick: () => a.ticks++ };
    simulatorTicker.add(a);
    await new Promise((r) => setTimeout(r, 50));
    simulatorTicker.remove(a);
    const seen = a.ticks;
    expect(seen).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 60));
    expect(a.ticks).toBe(seen);
  });
});
