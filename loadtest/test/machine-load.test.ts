import { describe, expect, it } from 'vitest';
import { machineLoadBetween, parseCpuTimes, readCpuTimes } from '../src/machine-load.js';

const STAT = (user: number, idle: number, iowait: number, steal: number) =>
  `cpu  ${user} 10 200 ${idle} ${iowait} 5 15 ${steal} 40 0\ncpu0 1 2 3 4 5 6 7 8 9 0\nintr 12345\n`;

describe('machine load from /proc/stat', () => {
  it('reads the all-CPU line: idle with iowait, steal, and a total without guest time', () => {
    expect(parseCpuTimes(STAT(1000, 5000, 30, 70))).toEqual({ total: 1000 + 10 + 200 + 5000 + 30 + 5 + 15 + 70, idle: 5030, steal: 70 });
    expect(parseCpuTimes('intr 1 2 3\n')).toBeNull();
    expect(parseCpuTimes('cpu  a b c d\n')).toBeNull();
  });

  it('gives busy and steal as shares of the ticks between two readings', () => {
    const a = parseCpuTimes(STAT(1000, 5000, 30, 70));
    // 400 ticks pass: 200 user, 150 idle, 10 iowait, 40 steal.
    const b = parseCpuTimes(STAT(1200, 5150, 40, 110));
    expect(machineLoadBetween(a, b)).toEqual({ busyShare: 240 / 400, stealShare: 40 / 400 });
    expect(machineLoadBetween(a, a)).toBeNull();
    expect(machineLoadBetween(null, b)).toBeNull();
  });

  it("reads this Linux machine's counters, which only grow", async () => {
    const a = readCpuTimes();
    expect(a).not.toBeNull();
    const until = Date.now() + 60;
    while (Date.now() < until); // burn a few ticks
    const b = readCpuTimes()!;
    expect(b.total).toBeGreaterThan(a!.total);
    const load = machineLoadBetween(a, b)!;
    expect(load.busyShare).toBeGreaterThan(0);
    expect(load.busyShare).toBeLessThanOrEqual(1);
  });
});
