/**
 * The gateway's pipeline threads over a `bench:calls` run, from two scrapes of its /metrics
 * (`vap_pipeline_thread_*`): how busy each thread was, and the worst thread's event-loop
 * delay. One pipeline thread can saturate a core before the process reaches 60 % of two, so
 * the process CPU alone does not say which limit comes first.
 */
import { THREAD_LOOP_DELAY_RESOLUTION_MS } from '@vap/media-gateway/pipeline-threads/protocol';
import type { PrometheusExposition } from '@vap/shared';
import type { PipelineThreadFigures } from './call-results.js';

/** A scrape and when it was taken (epoch ms). */
export interface TimedScrape {
  at: number;
  metrics: PrometheusExposition;
}

function perThread(m: PrometheusExposition, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of m.samples) if (s.name === name && s.labels['thread'] !== undefined) out.set(s.labels['thread'], s.value);
  return out;
}

/**
 * Each thread's busy share of the wall time between the scrapes, and the worst thread's loop delay
 * over the same span (the `after` scrape's gauges cover the time since `before`). Null when
 * the gateway ran no threads (`PIPELINE_THREADS=0`: its loop delay is the process's).
 */
export function pipelineThreadFigures(before: TimedScrape, after: TimedScrape): PipelineThreadFigures | null {
  const busyAfter = perThread(after.metrics, 'vap_pipeline_thread_busy_seconds_total');
  if (busyAfter.size === 0 || after.at <= before.at) return null;
  const busyBefore = perThread(before.metrics, 'vap_pipeline_thread_busy_seconds_total');
  const wallSec = (after.at - before.at) / 1000;
  const threads = [...busyAfter.keys()].sort((a, b) => Number(a) - Number(b));
  // A thread replaced during the run restarted its counter: count what the new one did.
  const busyPercent = threads.map((t) => {
    const a = busyAfter.get(t)!;
    const b = busyBefore.get(t) ?? 0;
    return ((a >= b ? a - b : a) / wallSec) * 100;
  });
  const worst = (name: string): number | null => {
    const values = [...perThread(after.metrics, name).values()];
    // The gauges include the sampling period, the report's delays do not (as the process sampler's).
    return values.length === 0 ? null : Math.max(0, Math.max(...values) * 1000 - THREAD_LOOP_DELAY_RESOLUTION_MS);
  };
  return { busyPercent, loopDelayP99Ms: worst('vap_pipeline_thread_eventloop_lag_p99_seconds'), loopDelayMaxMs: worst('vap_pipeline_thread_eventloop_lag_max_seconds') };
}

/** Rows of the gateway-vs-relay process tables (terminal and page) for the gateway's pipeline threads; none without threads. */
export function pipelineThreadRows(threads: PipelineThreadFigures | undefined): string[][] {
  if (!threads) return [];
  const ms = (v: number | null) => (v === null ? '-' : v.toFixed(1));
  return [
    ['pipeline threads busy, % of wall time each', threads.busyPercent.map((p) => p.toFixed(0)).join(' '), '-'],
    ['pipeline thread loop delay p99 / max ms (worst)', `${ms(threads.loopDelayP99Ms)} / ${ms(threads.loopDelayMaxMs)}`, '-'],
  ];
}
