import { readFileSync } from 'node:fs';

/** The machine's CPU time counters (all CPUs together, in clock ticks), from Linux's `/proc/stat`. */
export interface CpuTimes {
  total: number;
  idle: number;
  steal: number;
}

/** How the machine's CPUs were used between two readings, as shares of all their time (0..1). */
export interface MachineLoad {
  /** Running anything: not idle and not waiting for I/O. */
  busyShare: number;
  /** Taken by the hypervisor for other virtual machines while this one had work (`steal`). */
  stealShare: number;
}

/**
 * The `cpu` line of a `/proc/stat` text: user nice system idle iowait irq softirq steal
 * (guest time is already inside user and nice, so it is not added again). Null when absent.
 */
export function parseCpuTimes(procStat: string): CpuTimes | null {
  const line = procStat.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return null;
  const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 4 || f.some((n) => !Number.isFinite(n))) return null;
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = f;
  return { total: user + nice + system + idle + iowait + irq + softirq + steal, idle: idle + iowait, steal };
}

/** The counters now; null where there is no `/proc/stat` (not Linux). */
export function readCpuTimes(): CpuTimes | null {
  try {
    return parseCpuTimes(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return null;
  }
}

/** The machine's load between readings `a` and `b`; null when either is missing or no tick passed. */
export function machineLoadBetween(a: CpuTimes | null, b: CpuTimes | null): MachineLoad | null {
  if (!a || !b) return null;
  const total = b.total - a.total;
  if (total <= 0) return null;
  return { busyShare: (total - (b.idle - a.idle)) / total, stealShare: (b.steal - a.steal) / total };
}
