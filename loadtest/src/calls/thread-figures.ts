/**
 * The gateway's threads over a `bench:calls` run's steady state, from scrapes of its /metrics at its start and end: how busy
 * each pipeline thread was, how long it ran and waited for a core, and the worst one's
 * event-loop delay (`vap_pipeline_thread_*`), where the process's CPU went (loop, pipeline
 * threads, the rest), and how long the loop thread waited for a core. One pipeline thread can saturate a core before the process
 * reaches 60 % of two, so the process CPU alone does not say which limit comes first.
 */
import { THREAD_LOOP_DELAY_RESOLUTION_MS } from '@vap/media-gateway/pipeline-threads/protocol';
import type { PrometheusExposition } from '@vap/shared';
import { fixed } from '../report.js';
import type { CallBenchReport, GatewayCpuSplit, LoopCoreWait, PipelineThreadFigures, TargetRun } from './call-results.js';

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

/** What each thread added to a per-thread counter between the scrapes; a thread replaced meanwhile restarted its counter, so it counts what the new one did. */
function addedPerThread(before: PrometheusExposition, after: PrometheusExposition, name: string): Map<string, number> {
  const was = perThread(before, name);
  const added = new Map<string, number>();
  for (const [t, a] of perThread(after, name)) {
    const b = was.get(t) ?? 0;
    added.set(t, a >= b ? a - b : a);
  }
  return added;
}

/**
 * Each thread's busy share of the wall time between the scrapes, and the worst thread's loop delay
 * over the same span (the `after` scrape's gauges cover the time since `before`). Null when
 * the gateway ran no threads (`PIPELINE_THREADS=0`: its loop delay is the process's).
 */
export function pipelineThreadFigures(before: TimedScrape, after: TimedScrape): PipelineThreadFigures | null {
  const busy = addedPerThread(before.metrics, after.metrics, 'vap_pipeline_thread_busy_seconds_total');
  if (busy.size === 0 || after.at <= before.at) return null;
  const wallSec = (after.at - before.at) / 1000;
  const threads = [...busy.keys()].sort((a, b) => Number(a) - Number(b));
  const busyPercent = threads.map((t) => (busy.get(t)! / wallSec) * 100);
  const worst = (name: string): number | null => {
    const values = [...perThread(after.metrics, name).values()];
    // The gauges include the sampling period, the report's delays do not (as the process sampler's).
    return values.length === 0 ? null : Math.max(0, Math.max(...values) * 1000 - THREAD_LOOP_DELAY_RESOLUTION_MS);
  };
  const figures: PipelineThreadFigures = { busyPercent, loopDelayP99Ms: worst('vap_pipeline_thread_eventloop_lag_p99_seconds'), loopDelayMaxMs: worst('vap_pipeline_thread_eventloop_lag_max_seconds') };
  const ran = addedPerThread(before.metrics, after.metrics, 'vap_pipeline_thread_cpu_seconds_total');
  const waited = addedPerThread(before.metrics, after.metrics, 'vap_pipeline_thread_run_queue_wait_seconds_total');
  if (threads.every((t) => ran.has(t) && waited.has(t))) {
    figures.coreWait = threads.map((t) => ({ ranMsPerSec: (ran.get(t)! * 1000) / wallSec, waitedMsPerSec: (waited.get(t)! * 1000) / wallSec }));
  }
  return figures;
}

/**
 * Where the gateway's CPU went between the scrapes, as shares of what `process_cpu_seconds_total`
 * added: its event-loop thread (`vap_gateway_loop_cpu_seconds_total`), its pipeline threads
 * together (`vap_pipeline_thread_cpu_seconds_total`), and the rest (V8's GC and compiler
 * threads, libuv's pool, recording encoders). Null without the loop's counter (the gateway
 * reads threads' CPU from Linux's /proc) or when the process used no CPU between the scrapes.
 */
export function gatewayCpuSplit(before: TimedScrape, after: TimedScrape): GatewayCpuSplit | null {
  const has = (m: PrometheusExposition) => m.samples.some((s) => s.name === 'vap_gateway_loop_cpu_seconds_total');
  if (!has(before.metrics) || !has(after.metrics)) return null;
  const added = (name: string) => after.metrics.value(name) - before.metrics.value(name);
  const processSec = added('process_cpu_seconds_total');
  if (!(processSec > 0)) return null;
  const loop = Math.max(0, added('vap_gateway_loop_cpu_seconds_total')) / processSec;
  let threadsSec = 0;
  for (const sec of addedPerThread(before.metrics, after.metrics, 'vap_pipeline_thread_cpu_seconds_total').values()) threadsSec += sec;
  const pipelineThreads = threadsSec / processSec;
  // The threads' counters move in 10 ms steps and the process's does not: the rest is never below 0.
  return { loop, pipelineThreads, other: Math.max(0, 1 - loop - pipelineThreads) };
}

/** {@link LoopCoreWait} between the scrapes; null when the gateway has no run-queue counter (off Linux) or no time passed. */
export function loopCoreWait(before: TimedScrape, after: TimedScrape): LoopCoreWait | null {
  const WAIT = 'vap_gateway_loop_run_queue_wait_seconds_total';
  const has = (m: PrometheusExposition) => m.samples.some((s) => s.name === WAIT);
  if (!has(before.metrics) || !has(after.metrics) || after.at <= before.at) return null;
  const wallSec = (after.at - before.at) / 1000;
  const perSec = (name: string) => (Math.max(0, after.metrics.value(name) - before.metrics.value(name)) * 1000) / wallSec;
  return { ranMsPerSec: perSec('vap_gateway_loop_cpu_seconds_total'), waitedMsPerSec: perSec(WAIT) };
}

/** The process-table row for {@link loopCoreWait}; none without it. */
export function loopCoreWaitRows(wait: LoopCoreWait | undefined): string[][] {
  if (!wait) return [];
  return [['event-loop thread ran / waited for a core, ms per s', `${wait.ranMsPerSec.toFixed(1)} / ${wait.waitedMsPerSec.toFixed(1)}`, '-']];
}

/**
 * A row of the gateway-vs-relay process table: the gateway's CPU per call-second split as
 * {@link gatewayCpuSplit} found it. The relay's whole process (it has one thread doing the
 * work) compares with the gateway's loop: what the pipeline adds is the rest.
 */
export function cpuSplitRows(split: GatewayCpuSplit | undefined, cpuMsPerCallSecond: number | null): string[][] {
  if (!split || cpuMsPerCallSecond === null) return [];
  const ms = (share: number) => (share * cpuMsPerCallSecond).toFixed(3);
  return [['CPU ms per call-second: event loop / pipeline threads / other', `${ms(split.loop)} / ${ms(split.pipelineThreads)} / ${ms(split.other)}`, '-']];
}

/** Rows of the gateway-vs-relay process tables (terminal and page) for the gateway's pipeline threads; none without threads. */
export function pipelineThreadRows(threads: PipelineThreadFigures | undefined): string[][] {
  if (!threads) return [];
  const ms = (v: number | null) => (v === null ? '-' : v.toFixed(1));
  return [
    ['pipeline threads busy, % of wall time each', threads.busyPercent.map((p) => p.toFixed(0)).join(' '), '-'],
    ['pipeline thread loop delay p99 / max ms (worst)', `${ms(threads.loopDelayP99Ms)} / ${ms(threads.loopDelayMaxMs)}`, '-'],
    ...(threads.coreWait ? [['pipeline threads ran / waited for a core, ms per s each', threads.coreWait.map((w) => `${w.ranMsPerSec.toFixed(1)} / ${w.waitedMsPerSec.toFixed(1)}`).join(', '), '-']] : []),
  ];
}

/** CPU seconds per call-second as CPU milliseconds per call-second (null when not measured). */
export function msOf(cpuSecondsPerCallSecond: number | null | undefined): number | null {
  return cpuSecondsPerCallSecond == null ? null : cpuSecondsPerCallSecond * 1000;
}

/**
 * The CPU rows of the gateway-vs-relay process tables (terminal and page): the figures the
 * ratio and the capacity use (the steady state, where both targets carry the planned calls;
 * reports written before it say "whole run", which is what they measured), the gateway's
 * split, then the whole run's figure (the ramp, and the gateway's tail of calls finishing
 * their scripts at ever fewer calls, included).
 */
export function processCpuRows(report: CallBenchReport): string[][] {
  const label = report.gateway.process.cpuWindow === 'steady' ? 'steady state' : 'whole run';
  const side = (f: (run: TargetRun) => string): string[] => [f(report.gateway), report.relay ? f(report.relay) : '-'];
  const rows = [
    [`CPU seconds, ${label}`, ...side((r) => fixed(r.process.cpuSeconds, 2))],
    [`call-seconds, ${label}`, ...side((r) => fixed(r.process.callSeconds, 0))],
    [`CPU ms per call-second, ${label}`, ...side((r) => fixed(msOf(r.process.cpuPerCallSecond), 3))],
    ...cpuSplitRows(report.gateway.cpuSplit, msOf(report.gateway.process.cpuPerCallSecond)),
  ];
  if (report.gateway.process.wholeRun) rows.push(['CPU ms per call-second, whole run', ...side((r) => fixed(msOf(r.process.wholeRun?.cpuPerCallSecond), 3))]);
  return rows;
}
