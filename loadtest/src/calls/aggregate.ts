/**
 * Turns what the caller processes and the server process reported into a {@link TargetRun}
 * and the whole {@link CallBenchReport}. Pure: no clocks, no I/O, so it is tested on
 * hand-made inputs.
 */
import type { MachineInfo } from '../report.js';
import type { CallBenchReport, CallBenchSettings, CallFailure, CpuPerCall, GeneratorFigures, ProcessFigures, ProcessSample, StageBreakdown, TargetCheck, TargetRun } from './call-results.js';
import { jitterOf, lateGaps, peakOverlap } from './frame-gaps.js';
import type { CallRecord, CallerSlot, GatewayCallEnd, ServerTarget, TurnMetrics } from './ipc.js';
import { classifyLateGaps } from './late-gaps.js';
import type { CallerArrivals } from './late-gaps.js';
import type { LoopDelaySummary, RawSample } from './process-sampler.js';
import { HISTOGRAM_BOUNDS_MS, measuredOf } from './stats.js';

/** The failures a report lists at most. */
export const MAX_LISTED_FAILURES = 20;

/** When the run's phases were, epoch ms. */
export interface RunWindow {
  /** Planned first dial (ramp start); sample times count from here. */
  startAt: number;
  /** Ramp over: every slot has dialled. */
  rampEndAt: number;
  /** No dial after this. */
  steadyEndAt: number;
  /** Every caller process reported done. */
  finishedAt: number;
}

/** Everything one target's run produced. */
export interface TargetInput {
  target: ServerTarget;
  /** Concurrent calls planned (the slots). */
  concurrentCalls: number;
  records: CallRecord[];
  /** The gateway's end records by callSid (empty for the relay). */
  gatewayEnds: ReadonlyMap<string, GatewayCallEnd>;
  samples: RawSample[];
  steadyLoopDelay: LoopDelaySummary;
  /** The gateway pacer's own late-frame count over the run; null for the relay. */
  lateFramesAtGateway: number | null;
  /** The gateway pacer's own gaps over the run (`vap_outbound_frame_gap_seconds`); null for the relay. */
  gapsAtGateway?: { count: number; within5Ms: number } | null;
  window: RunWindow;
  utteranceBreakMs: number;
  generator: GeneratorFigures[];
  /** Each caller process's late gaps and when it read frames, to sort the late frames by where they became late; absent: not sorted. */
  callerArrivals?: CallerArrivals[];
}

const MB = 1024 * 1024;

/** Cumulative CPU (ms) at epoch ms `at`, linearly between samples, clamped to the first and last. */
export function cpuAt(samples: readonly RawSample[], at: number): number {
  if (samples.length === 0) return 0;
  if (at <= samples[0]!.at) return samples[0]!.cpuMs;
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    if (at <= b.at) return b.at === a.at ? b.cpuMs : a.cpuMs + ((b.cpuMs - a.cpuMs) * (at - a.at)) / (b.at - a.at);
  }
  return samples[samples.length - 1]!.cpuMs;
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.ceil(sorted.length / 2) - 1]!;
}

/** The per-second view of the process for the charts: CPU % of one core between consecutive samples. */
export function processSamples(samples: readonly RawSample[], startAt: number): ProcessSample[] {
  const out: ProcessSample[] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const dt = b.at - a.at;
    out.push({
      t: Math.round((b.at - startAt) / 100) / 10,
      activeCalls: b.activeCalls,
      cpuPercent: dt > 0 ? ((b.cpuMs - a.cpuMs) / dt) * 100 : 0,
      rssMb: b.rssBytes / MB,
      loopDelayP99Ms: b.loopP99Ms,
    });
  }
  return out;
}

function cpuPerCall(cpuSeconds: number, callSeconds: number): CpuPerCall {
  return { cpuSeconds, callSeconds, cpuPerCallSecond: callSeconds > 0 ? cpuSeconds / callSeconds : null };
}

/** Seconds of calls connected within [fromAt, toAt] (each call's overlap with the span). */
export function callSecondsWithin(connected: readonly CallRecord[], fromAt: number, toAt: number): number {
  return connected.reduce((sum, r) => sum + Math.max(0, Math.min(r.endedAt, toAt) - Math.max(r.connectedAt!, fromAt)) / 1000, 0);
}

/**
 * CPU per call-second, RSS before/steady/peak and loop delay of the server process. The CPU
 * figure is the steady state's (ramp end → steady end, while the planned calls are up): both
 * targets are measured at the same concurrency there, whereas only the gateway's calls run on
 * after it, finishing their scripts at ever fewer calls, where each call costs more (per-wakeup
 * costs are shared by fewer calls). The whole run's figure is kept beside it. A run whose
 * steady window held no call (every dial failed) falls back to the whole run.
 */
export function processFigures(input: Pick<TargetInput, 'records' | 'samples' | 'steadyLoopDelay' | 'window' | 'concurrentCalls'>): ProcessFigures {
  const samples = [...input.samples].sort((a, b) => a.at - b.at);
  const connected = input.records.filter((r) => r.connectedAt !== null);
  const firstConnect = Math.min(...connected.map((r) => r.connectedAt!));
  const lastHangup = Math.max(...connected.map((r) => r.endedAt));
  const wholeRun = cpuPerCall(connected.length > 0 ? (cpuAt(samples, lastHangup) - cpuAt(samples, firstConnect)) / 1000 : 0, callSecondsWithin(connected, -Infinity, Infinity));
  const { rampEndAt, steadyEndAt } = input.window;
  const steadyCallSeconds = callSecondsWithin(connected, rampEndAt, steadyEndAt);
  const steady = steadyCallSeconds > 0;
  const cpu = steady ? cpuPerCall((cpuAt(samples, steadyEndAt) - cpuAt(samples, rampEndAt)) / 1000, steadyCallSeconds) : wholeRun;
  const rss = samples.map((s) => s.rssBytes / MB);
  const before = samples.filter((s) => s.at <= (connected.length > 0 ? firstConnect : input.window.startAt)).at(-1) ?? samples[0];
  const rssBeforeMb = before ? before.rssBytes / MB : 0;
  const inSteady = samples.filter((s) => s.at >= input.window.rampEndAt && s.at <= input.window.steadyEndAt).map((s) => s.rssBytes / MB);
  const rssSteadyMb = median(inSteady) ?? rssBeforeMb;
  return {
    cpuWindow: steady ? 'steady' : 'whole-run',
    ...cpu,
    wholeRun,
    rssBeforeMb,
    rssSteadyMb,
    rssPeakMb: rss.length > 0 ? Math.max(...rss) : 0,
    rssGrowthPerCallMb: input.concurrentCalls > 0 && inSteady.length > 0 ? (rssSteadyMb - rssBeforeMb) / input.concurrentCalls : null,
    eventLoopDelay: input.steadyLoopDelay,
    samples: processSamples(samples, input.window.startAt),
  };
}

function stageBreakdown(turns: readonly TurnMetrics[]): StageBreakdown {
  const of = (pick: (t: TurnMetrics) => number, bounds: readonly number[]) => measuredOf(turns.map(pick), bounds);
  return {
    endpointing: of((t) => t.endpointingMs, HISTOGRAM_BOUNDS_MS.latency),
    stt: of((t) => t.sttMs, HISTOGRAM_BOUNDS_MS.latency),
    llmFirstToken: of((t) => t.llmFirstTokenMs, HISTOGRAM_BOUNDS_MS.stage),
    llmFirstPhrase: of((t) => t.llmFirstPhraseMs, HISTOGRAM_BOUNDS_MS.stage),
    ttsFirstByte: of((t) => t.ttsFirstByteMs, HISTOGRAM_BOUNDS_MS.stage),
    overhead: of((t) => t.overheadMs, HISTOGRAM_BOUNDS_MS.stage),
    overheadWithFirstPhrase: of((t) => t.overheadMs + t.llmFirstPhraseMs, HISTOGRAM_BOUNDS_MS.stage),
    total: of((t) => t.totalMs, HISTOGRAM_BOUNDS_MS.latency),
  };
}

/**
 * A call's failure as the report counts it: the caller's own, else the gateway's verdict
 * (a call the gateway ended as failed, though the caller got to the end of its script).
 */
export function failureOf(record: CallRecord, end: GatewayCallEnd | undefined): CallFailure | null {
  if (record.failure) return record.failure;
  if (end && end.status === 'failed') return { callSid: record.callSid, kind: 'script', message: `the gateway ended the call as failed (${end.endReason})` };
  return null;
}

/** One target's {@link TargetRun}. `calls.failed` counts every call with a failure, dropped and refused ones included. */
export function targetRun(input: TargetInput): TargetRun {
  const { records, gatewayEnds } = input;
  const isGateway = input.target === 'gateway';
  const failures = records.map((r) => failureOf(r, gatewayEnds.get(r.callSid))).filter((f): f is CallFailure => f !== null);
  const gaps = records.flatMap((r) => r.frameGapsMs);
  const turns = isGateway ? records.flatMap((r) => gatewayEnds.get(r.callSid)?.turnMetrics ?? []) : [];
  const bargeIns = records.map((r) => r.bargeInReactionMs).filter((v): v is number => typeof v === 'number');
  const notes: string[] = [];
  if (isGateway) {
    const noClear = records.filter((r) => r.bargeInReactionMs === null).length;
    if (noClear > 0) notes.push(`${noClear} barge-in(s) got no clear from the gateway`);
    const noEnd = records.filter((r) => r.connectedAt !== null && !gatewayEnds.has(r.callSid)).length;
    if (noEnd > 0) notes.push(`${noEnd} connected call(s) have no end record from the gateway (no stage breakdown for them)`);
  }
  const connected = records.filter((r) => r.connectedAt !== null);
  return {
    target: input.target,
    calls: {
      planned: records.length,
      connected: connected.length,
      completed: records.filter((r) => r.completed && failureOf(r, gatewayEnds.get(r.callSid)) === null).length,
      failed: failures.length,
      dropped: failures.filter((f) => f.kind === 'dropped').length,
      refused: failures.filter((f) => f.kind === 'refused').length,
    },
    // Under overload the refusals come by the hundred: the calls that failed once taken go first.
    failures: [...failures.filter((f) => f.kind !== 'refused'), ...failures.filter((f) => f.kind === 'refused')].slice(0, MAX_LISTED_FAILURES),
    peakConcurrentCalls: peakOverlap(connected.map((r) => ({ from: r.connectedAt!, to: r.endedAt }))),
    turnLatency: measuredOf(
      records.flatMap((r) => r.turnLatenciesMs),
      HISTOGRAM_BOUNDS_MS.latency,
    ),
    stages: isGateway ? stageBreakdown(turns) : null,
    bargeInReaction: measuredOf(bargeIns, HISTOGRAM_BOUNDS_MS.bargeIn),
    framePacing: {
      frames: records.reduce((n, r) => n + r.framesReceived, 0),
      gaps: measuredOf(gaps, HISTOGRAM_BOUNDS_MS.frameGap),
      jitter: measuredOf(jitterOf(records.flatMap((r) => r.steadyFrameGapsMs)), HISTOGRAM_BOUNDS_MS.jitter),
      lateFramesAtCallers: lateGaps(gaps),
      lateFramesAtGateway: input.lateFramesAtGateway,
      ...(input.callerArrivals ? { lateAtCallersWhere: classifyLateGaps(input.callerArrivals) } : {}),
      gapsAtGateway: input.gapsAtGateway ?? null,
      utteranceBreakMs: input.utteranceBreakMs,
    },
    process: processFigures(input),
    connect: measuredOf(
      connected.map((r) => r.connectedAt! - r.dialledAt),
      HISTOGRAM_BOUNDS_MS.latency,
    ),
    durationSec: (input.window.finishedAt - input.window.startAt) / 1000,
    generator: input.generator,
    ...(notes.length > 0 ? { notes } : {}),
  };
}

/** CPU budget of the capacity figure, percent of each core. */
export const CAPACITY_CPU_BUDGET_PERCENT = 60;

/** The report without its target checks; `checkTargets` fills them, `ok` follows from them. */
export function buildCallReport(input: { startedAt: Date; settings: CallBenchSettings; machine: MachineInfo; cores: number; gateway: TargetRun; relay: TargetRun | null }): CallBenchReport {
  const gw = input.gateway.process.cpuPerCallSecond;
  const relay = input.relay?.process.cpuPerCallSecond ?? null;
  return {
    kind: 'call-bench',
    startedAt: input.startedAt.toISOString(),
    settings: input.settings,
    machine: input.machine,
    gateway: input.gateway,
    relay: input.relay,
    cpuRatioToRelay: gw !== null && relay !== null && relay > 0 ? gw / relay : null,
    capacity: {
      cores: input.cores,
      cpuBudgetPercent: CAPACITY_CPU_BUDGET_PERCENT,
      // The epsilon keeps 1.2 / 0.1 = 11.999… from flooring to 11.
      calls: gw !== null && gw > 0 ? Math.floor((input.cores * CAPACITY_CPU_BUDGET_PERCENT) / 100 / gw + 1e-9) : null,
    },
    targets: [],
    ok: false,
  };
}

/** Sets the checks and `ok`: every measurable target passed and no call failed on either target. */
export function withTargets(report: CallBenchReport, targets: TargetCheck[]): CallBenchReport {
  const noFailures = report.gateway.calls.failed === 0 && (report.relay?.calls.failed ?? 0) === 0;
  return { ...report, targets, ok: noFailures && targets.every((t) => t.pass !== false) };
}

/** Slots `0..calls-1` starting evenly over the ramp, dealt round-robin to the workers. */
export function planSlots(calls: number, workers: number, startAt: number, rampMs: number): CallerSlot[][] {
  const shares: CallerSlot[][] = Array.from({ length: workers }, () => []);
  for (let i = 0; i < calls; i++) shares[i % workers]!.push({ index: i, startAt: startAt + (calls > 1 ? (i * rampMs) / calls : 0) });
  return shares;
}

/** Median connected duration of the calls that completed, ms; the relay's calls last as long. */
export function medianCallMs(records: readonly CallRecord[]): number | null {
  const d = records
    .filter((r) => r.completed && r.connectedAt !== null)
    .map((r) => r.endedAt - r.connectedAt!)
    .sort((a, b) => a - b);
  return d.length > 0 ? d[Math.ceil(d.length / 2) - 1]! : null;
}
