/**
 * What a process of the call benchmark measures about itself: CPU, RSS and event-loop
 * delay. The gateway and the relay run the same sampler (so the CPU ratio between them is
 * measured the same way), and so does each caller process (to show the generator is not
 * the bottleneck).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { IntervalHistogram } from 'node:perf_hooks';

/** Milliseconds since the Unix epoch with sub-millisecond precision, comparable across processes. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * The event-loop timer's period. The histogram records whole intervals between timer
 * callbacks, so an idle loop reads ~10 ms: the delay is what exceeds this.
 */
export const LOOP_RESOLUTION_MS = 10;

/** One reading of the process, cumulative where it says so. */
export interface RawSample {
  /** {@link epochNow} when taken. */
  at: number;
  /** Cumulative user + system CPU of the process, ms. */
  cpuMs: number;
  rssBytes: number;
  /** Event-loop delay since the previous sample (beyond the timer's period), ms. */
  loopP99Ms: number;
  /** Calls the process carries now (the gateway's or relay's count; 0 for a caller process). */
  activeCalls: number;
}

/** Event-loop delay over a window, ms beyond the timer period. */
export interface LoopDelaySummary {
  p50: number | null;
  p99: number | null;
  max: number | null;
}

function delayMs(h: IntervalHistogram, q: number | 'max'): number | null {
  if (h.count === 0) return null;
  const ns = q === 'max' ? h.max : h.percentile(q);
  return Math.max(0, ns / 1e6 - LOOP_RESOLUTION_MS);
}

/** Summarises a histogram of loop intervals as delays. */
export function loopDelayOf(h: IntervalHistogram): LoopDelaySummary {
  return { p50: delayMs(h, 50), p99: delayMs(h, 99), max: delayMs(h, 'max') };
}

/**
 * Samples the process every `intervalMs` and hands each sample to `onSample`. A second
 * histogram covers a window given later ({@link ProcessSampler.window}), e.g. the steady state.
 */
export class ProcessSampler {
  private readonly perInterval = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  private readonly whole = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  private readonly windowed = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  private windowSummary: LoopDelaySummary | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly startedCpu = process.cpuUsage();
  private readonly startedAt = epochNow();

  constructor(
    private readonly opts: { intervalMs: number; activeCalls: () => number; onSample: (s: RawSample) => void },
  ) {
    this.perInterval.enable();
    this.whole.enable();
    const t = setInterval(() => this.opts.onSample(this.sample()), opts.intervalMs);
    t.unref();
    this.timers.push(t);
  }

  /** A reading now; resets the per-interval loop histogram. */
  sample(): RawSample {
    const cpu = process.cpuUsage();
    const s: RawSample = {
      at: epochNow(),
      cpuMs: (cpu.user + cpu.system) / 1000,
      rssBytes: process.memoryUsage.rss(),
      loopP99Ms: delayMs(this.perInterval, 99) ?? 0,
      activeCalls: this.opts.activeCalls(),
    };
    this.perInterval.reset();
    return s;
  }

  /** Records loop delay from epoch ms `fromAt` to `toAt` into its own histogram (see {@link windowDelay}). */
  window(fromAt: number, toAt: number): void {
    const now = epochNow();
    const start = setTimeout(() => {
      this.windowed.reset();
      this.windowed.enable();
    }, Math.max(0, fromAt - now));
    const end = setTimeout(() => {
      this.windowed.disable();
      this.windowSummary = loopDelayOf(this.windowed);
    }, Math.max(0, toAt - now));
    this.timers.push(start, end);
  }

  /** Loop delay over the window, or over the whole life of the sampler when no window closed. */
  windowDelay(): LoopDelaySummary {
    return this.windowSummary ?? loopDelayOf(this.whole);
  }

  /** CPU since the sampler started as a percentage of one core, and loop delay p99 over the same time. */
  lifetime(): { cpuPercent: number; loopDelayP99Ms: number | null } {
    const cpu = process.cpuUsage(this.startedCpu);
    const elapsedMs = epochNow() - this.startedAt;
    return { cpuPercent: elapsedMs > 0 ? ((cpu.user + cpu.system) / 1000 / elapsedMs) * 100 : 0, loopDelayP99Ms: delayMs(this.whole, 99) };
  }

  stop(): void {
    for (const t of this.timers) clearTimeout(t);
    this.perInterval.disable();
    this.whole.disable();
    this.windowed.disable();
  }
}
