/**
 * What the process serving a measured run did meanwhile, to tell where a latency tail came
 * from: its event loop's delay (the server's one loop; a long delay holds every request
 * queued behind it), how long that loop's thread ran and how long it was ready but waited
 * for a core (Linux), and, for the control plane, its Postgres pool: how many requests
 * waited for a connection. A tail with a short loop delay and requests waiting on the pool
 * is Postgres's; one with a long delay and a long wait for a core is the machine's; a long
 * delay with little wait is the loop's own work.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

/** The pool counters a probe reads (`pg.Pool` has them). */
export interface PoolCounts {
  /** Requests queued for a connection. */
  readonly waitingCount: number;
  /** Connections open, busy or idle. */
  readonly totalCount: number;
  readonly idleCount: number;
}

/** A pool's sampled state over a run. */
export interface PoolFigures {
  /** The most requests waiting for a connection in any sample. */
  waitingMax: number;
  /** Share of samples (0..1) in which some request waited for a connection. */
  waitingShare: number;
  /** The most connections busy (open and not idle) in any sample. */
  busyMax: number;
  samples: number;
}

/** The serving process over one measured run. */
export interface ServerFigures {
  /**
   * Event-loop delay over the run, ms: how late the loop's {@link LOOP_DELAY_RESOLUTION_MS} timer
   * fired (the period itself taken off, as `bench:calls` reports the gateway's), p50, p99, max.
   */
  loopDelayP50Ms: number;
  loopDelayP99Ms: number;
  loopDelayMaxMs: number;
  /** The loop's thread on a core, ms per second of the run; null off Linux. */
  loopRanMsPerSec: number | null;
  /** The loop's thread ready to run but waiting for a core, ms per second of the run; null off Linux. */
  loopWaitedMsPerSec: number | null;
  /** The control plane's Postgres pool; null when the run's server has none (bare Fastify). */
  pool: PoolFigures | null;
}

/** The event-loop delay histogram's sampling interval (Node's default). */
export const LOOP_DELAY_RESOLUTION_MS = 10;
/** How often the pool is sampled. */
export const POOL_SAMPLE_MS = 10;

/** Run and run-queue wait of a thread, ns: the first two fields of a Linux `schedstat` file. Null when unreadable. */
export function parseSchedstat(text: string): { runNs: number; waitNs: number } | null {
  const [run, wait] = text.trim().split(/\s+/).map(Number);
  return run !== undefined && wait !== undefined && Number.isFinite(run) && Number.isFinite(wait) ? { runNs: run, waitNs: wait } : null;
}

/** The calling thread's `schedstat`; null off Linux or on a kernel without schedstats. */
export function readOwnSchedstat(): { runNs: number; waitNs: number } | null {
  try {
    return parseSchedstat(readFileSync('/proc/thread-self/schedstat', 'latin1'));
  } catch {
    return null;
  }
}

export interface ServerProbe {
  /** Stops sampling and returns the figures since the probe started. */
  stop(): ServerFigures;
}

/**
 * Starts watching this process's event loop (call it on the thread the server runs on) and,
 * when given, a Postgres pool. Costs a timer every {@link LOOP_DELAY_RESOLUTION_MS} for the loop
 * histogram and one every {@link POOL_SAMPLE_MS} for the pool.
 */
export function startServerProbe(pool?: PoolCounts): ServerProbe {
  const startedAt = performance.now();
  const schedAtStart = readOwnSchedstat();
  const delay = monitorEventLoopDelay({ resolution: LOOP_DELAY_RESOLUTION_MS });
  delay.enable();
  const poolState = { waitingMax: 0, waiting: 0, busyMax: 0, samples: 0 };
  const sample = (p: PoolCounts) => {
    poolState.samples++;
    poolState.waitingMax = Math.max(poolState.waitingMax, p.waitingCount);
    if (p.waitingCount > 0) poolState.waiting++;
    poolState.busyMax = Math.max(poolState.busyMax, p.totalCount - p.idleCount);
  };
  const timer = pool ? setInterval(sample, POOL_SAMPLE_MS, pool) : null;
  let stopped: ServerFigures | null = null;
  return {
    stop(): ServerFigures {
      if (stopped) return stopped;
      if (timer) clearInterval(timer);
      delay.disable();
      const seconds = (performance.now() - startedAt) / 1000;
      const schedAtEnd = readOwnSchedstat();
      const perSec = (ns: number) => (seconds > 0 ? ns / 1e6 / seconds : 0);
      const sampled = delay.count > 0;
      // The histogram holds whole intervals between the timer's runs: the period is not delay.
      const ms = (ns: number) => (sampled ? Math.max(0, ns / 1e6 - LOOP_DELAY_RESOLUTION_MS) : 0);
      stopped = {
        loopDelayP50Ms: ms(delay.percentile(50)),
        loopDelayP99Ms: ms(delay.percentile(99)),
        loopDelayMaxMs: ms(delay.max),
        loopRanMsPerSec: schedAtStart && schedAtEnd ? perSec(schedAtEnd.runNs - schedAtStart.runNs) : null,
        loopWaitedMsPerSec: schedAtStart && schedAtEnd ? perSec(schedAtEnd.waitNs - schedAtStart.waitNs) : null,
        pool: pool ? { waitingMax: poolState.waitingMax, waitingShare: poolState.samples > 0 ? poolState.waiting / poolState.samples : 0, busyMax: poolState.busyMax, samples: poolState.samples } : null,
      };
      return stopped;
    },
  };
}
