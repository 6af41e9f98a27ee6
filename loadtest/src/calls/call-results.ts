/**
 * What the concurrent-call benchmark (`pnpm bench:calls`) measures and writes to
 * `loadtest/results/calls-*.json`: the contract between the generator (which fills it),
 * the terminal table, the HTML report and the target checks.
 *
 * Times are milliseconds unless a name says otherwise. A distribution of no samples has
 * `count: 0` and null figures (JSON has no NaN).
 */
import type { AdmissionLimits, HeapGrowth } from '@vap/media-gateway';
import type { MachineInfo } from '../report.js';
import type { LateFramesWhere } from './late-gaps.js';

/** Percentiles of a set of samples (nearest rank, so each is an observed value). */
export interface Distribution {
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** Counts per bucket for the HTML charts: `counts[i]` samples were <= `upperBounds[i]` and above the previous bound; the last bucket is open-ended (`upperBounds` has one fewer entry than `counts`). */
export interface Histogram {
  upperBounds: number[];
  counts: number[];
}

/** A distribution with its histogram. */
export interface Measured extends Distribution {
  histogram: Histogram;
}

/** Per-stage breakdown of agent replies, from the gateway's own per-turn record (`turnMetrics` of its end record). */
export interface StageBreakdown {
  endpointing: Measured;
  stt: Measured;
  llmFirstToken: Measured;
  /** LLM first token → the reply's first phrase handed to TTS (the LLM's text pace). */
  llmFirstPhrase: Measured;
  ttsFirstByte: Measured;
  /** Our own time: total minus endpointing, retrieval, LLM first token, LLM first phrase and TTS first byte. */
  overhead: Measured;
  /** Overhead with the first-phrase wait counted in, as before that stage was split out (informational). */
  overheadWithFirstPhrase: Measured;
  total: Measured;
}

/** A call that did not complete its script. */
export interface CallFailure {
  callSid: string;
  /**
   * `refused` (the upgrade was answered 503: the gateway's admission turned the call away), `connect` (any other
   * refusal, or a timeout), `script` (a step timed out or the agent never answered), `dropped` (the socket closed
   * before the script ended), `protocol` (a message Twilio would reject).
   */
  kind: 'refused' | 'connect' | 'script' | 'dropped' | 'protocol';
  message: string;
}

/** One sample of the server process under test, taken about every second. */
export interface ProcessSample {
  /** Seconds since the run started. */
  t: number;
  activeCalls: number;
  /** CPU used since the previous sample as a percentage of one core (200 = both cores of a 2-core machine). */
  cpuPercent: number;
  rssMb: number;
  /** Event-loop delay p99 over the last interval. */
  loopDelayP99Ms: number;
}

/** CPU (user + system) of the process under test over a span of the run, against the calls it carried then. */
export interface CpuPerCall {
  /** CPU seconds used over the span. */
  cpuSeconds: number;
  /** Sum over calls of their connected time within the span, in seconds. */
  callSeconds: number;
  /** cpuSeconds / callSeconds. */
  cpuPerCallSecond: number | null;
}

/** What the process under test (gateway or relay) cost over the run. */
export interface ProcessFigures extends CpuPerCall {
  /**
   * The span of `cpuSeconds`/`callSeconds`: `steady`, ramp end → steady end (the planned
   * calls up, on both targets; the ratio to the relay and the capacity use it), or
   * `whole-run` when that span held no call. Absent in reports written before it existed,
   * whose figures are the whole run's.
   */
  cpuWindow?: 'steady' | 'whole-run';
  /** First connect → last hang-up, ramp and the gateway's tail of calls finishing their scripts included (informational). Absent in older reports. */
  wholeRun?: CpuPerCall;
  rssBeforeMb: number;
  /** RSS at steady state (all calls connected), median of the steady-state samples. */
  rssSteadyMb: number;
  rssPeakMb: number;
  /** (rssSteadyMb - rssBeforeMb) / concurrent calls. */
  rssGrowthPerCallMb: number | null;
  /** Event-loop delay over the steady state. */
  eventLoopDelay: { p50: number | null; p99: number | null; max: number | null };
  samples: ProcessSample[];
}

/** Outbound audio pacing as the callers received it. */
export interface FramePacing {
  /** Agent `media` frames received. */
  frames: number;
  /** Gaps between consecutive frames of one agent utterance (a gap > `utteranceBreakMs` starts a new utterance and is not counted). */
  gaps: Measured;
  /** |gap - 20| of the steady-state gaps: each utterance's designed lead (burst and grid alignment, frame-gaps.ts `DESIGNED_LEAD_GAPS`) left out. */
  jitter: Measured;
  /** Gaps > 40 ms inside an utterance, at the callers. */
  lateFramesAtCallers: number;
  /** `vap_outbound_late_frames_total` of the gateway (its pacer's own view); null for the relay. */
  lateFramesAtGateway: number | null;
  /** {@link lateFramesAtCallers} by where each became late, from what the caller processes read during the gap (late-gaps.ts); absent in reports from before. */
  lateAtCallersWhere?: LateFramesWhere;
  /**
   * The gaps the gateway's pacer measured as it wrote (audio waiting), before the network and
   * the callers' own event loops add theirs: how many, and how many within 20 ± 5 ms (the
   * jitter target holds at the gateway when that is >= 99 %). Null for the relay.
   */
  gapsAtGateway: { count: number; within5Ms: number } | null;
  utteranceBreakMs: number;
}

/** One target (gateway or relay) driven by the same callers. */
export interface TargetRun {
  target: 'gateway' | 'relay';
  /** `failed` counts every failure; `dropped` and `refused` are among them. */
  calls: { planned: number; connected: number; completed: number; failed: number; dropped: number; refused: number };
  /** The first failures (at most 20), for the report: those of calls that connected first, then the refused ones. */
  failures: CallFailure[];
  /** Concurrent calls actually reached (peak of active calls seen by the callers). */
  peakConcurrentCalls: number;
  /** End of caller speech → first agent audio at the caller, per turn (gateway only; empty for the relay). */
  turnLatency: Measured;
  /** Per-stage breakdown (gateway only; null for the relay). */
  stages: StageBreakdown | null;
  /** Caller speech onset → `clear` received, one per call (gateway only). */
  bargeInReaction: Measured;
  framePacing: FramePacing;
  process: ProcessFigures;
  durationSec: number;
  /** What each caller process cost over this run (it must stay far from saturated, or the figures measure the generator). */
  generator?: GeneratorFigures[];
  /** Dial → stream open (upgrade answered), ms, per connected call (the gateway's includes scripting the STT simulator). */
  connect?: Measured;
  /** What the provider-simulators process cost over this run (gateway only: the relay uses no provider). */
  simulators?: GeneratorFigures;
  /** The gateway's pipeline threads over the steady state (absent for the relay and with `--pipeline-threads 0`). */
  pipelineThreads?: PipelineThreadFigures;
  /** Where the gateway's CPU went over the steady state (absent for the relay, and off Linux). */
  cpuSplit?: GatewayCpuSplit;
  /** The gateway's event-loop thread over the steady state (scrapes at its start and end; the run's first and last when those failed): ran vs waited for a core (absent for the relay, and off Linux). */
  loopCoreWait?: LoopCoreWait;
  /** Things a reader should know that have no field: barge-ins that got no `clear`, calls without a gateway end record, … */
  notes?: string[];
}

/**
 * Shares (0-1) of the gateway process's CPU over the steady state (/metrics scraped at its start and end): its
 * event-loop thread, its pipeline threads together, and the rest (V8's GC and compiler
 * threads, libuv's pool, recording encoders). They sum to 1.
 */
export interface GatewayCpuSplit {
  loop: number;
  pipelineThreads: number;
  other: number;
}

/**
 * The gateway's event-loop thread over the steady state (/metrics scraped at its start and end), ms per second of
 * wall time: how long it ran (`vap_gateway_loop_cpu_seconds_total`, 10 ms steps) and how long
 * it was ready to run but waited for a core (`vap_gateway_loop_run_queue_wait_seconds_total`).
 * The pacer's timer waits with it: a large wait means late frames come from the machine's
 * busy cores, not from the loop's own work.
 */
export interface LoopCoreWait {
  ranMsPerSec: number;
  waitedMsPerSec: number;
}

/** The gateway's pipeline threads over its run, from its /metrics. */
export interface PipelineThreadFigures {
  /**
   * Each thread's event loop busy, as a percentage of the run's wall time (100 = saturated),
   * in pool order. It counts time the thread waited for a core, so on a busy machine it is
   * above the thread's CPU share (its nice +10 lets the gateway's loop run first).
   */
  busyPercent: number[];
  /** The worst thread's event-loop delay beyond the 10 ms sampling period, ms: p99 and max. */
  loopDelayP99Ms: number | null;
  loopDelayMaxMs: number | null;
  /**
   * Each thread's CPU time and its time ready but waiting for a core, ms per second of the run, in
   * pool order (as {@link LoopCoreWait} for the loop); absent off Linux, where the gateway reads neither.
   */
  coreWait?: { ranMsPerSec: number; waitedMsPerSec: number }[];
}

/** One caller (or simulators) process over one target's run. */
export interface GeneratorFigures {
  /** CPU used over its run as a percentage of one core. */
  cpuPercent: number;
  /** Its event-loop delay p99 (beyond the 10 ms sampling period), ms. */
  loopDelayP99Ms: number | null;
  /**
   * How long its event-loop thread was ready to run but waited for a core, ms per second of
   * its run (Linux `schedstat`; null elsewhere). A caller process that waits reads its
   * frames late: late frames then are the machine's, not the server's. Absent in reports
   * from before, and for the simulators.
   */
  coreWaitMsPerSec?: number | null;
  /** Its garbage collector's pauses over its run: how many lasted over 10 ms, and the longest (null: none). Absent as above. */
  gcPausesOver10Ms?: number;
  gcLongestPauseMs?: number | null;
}

/** One checked target of the issue, e.g. "barge-in reaction p95 <= 150 ms". */
export interface TargetCheck {
  name: string;
  /** Human-readable limit, e.g. "<= 150 ms". */
  limit: string;
  /** The measured figure, formatted; "-" when not measured. */
  measured: string;
  /** null when it could not be measured in this run (e.g. relay skipped). */
  pass: boolean | null;
}

export interface CallBenchSettings {
  calls: number;
  rampSec: number;
  steadySec: number;
  /** Caller processes the calls were spread over. */
  workers: number;
  /** Latency of the simulated STT's results (0 for the barge-in target). */
  sttLatencyMs: number;
  /** Whether the bare relay baseline ran too. */
  relay: boolean;
  /** The gateway's pipeline threads as it ran (`PIPELINE_THREADS`, `--pipeline-threads`); 0: pipelines on its event loop. */
  pipelineThreads: number | null;
  /** The gateway's ElevenLabs socket as it ran (`ELEVENLABS_WEBSOCKET`, `--tts-websocket`); absent in reports written before it was a setting (then `stream-input`). */
  ttsWebSocket?: string | null;
  /** The gateway's admission limits as it ran (`--max-calls`, `--overload-lag-ms`; 0: that rule off). */
  admission: AdmissionLimits | null;
  /** What the gateway did with V8's heap growth (`GATEWAY_HEAP_GROWING_PERCENT`); absent in reports written before it was a setting (then V8's own). */
  heapGrowth?: HeapGrowth | null;
  /** Node and V8 flags the gateway's process ran with (`--gateway-node-flags`); empty: none. */
  gatewayNodeFlags: string[];
  /** What each caller says, in order (the barge-in line marked). */
  script: string[];
}

/** The gateway's heap growth in words, for the terminal and the HTML report. */
export function heapGrowthText(growth: HeapGrowth | null | undefined): string {
  if (growth === undefined) return "V8's own (reports before the setting)";
  if (growth === null) return '-';
  switch (growth.kind) {
    case 'set':
      return `${growth.percent} % (GATEWAY_HEAP_GROWING_PERCENT)`;
    case 'node-flag':
      return `Node's ${growth.flag}`;
    case 'v8-default':
      return "V8's own (GATEWAY_HEAP_GROWING_PERCENT=0)";
  }
}

/** The file `pnpm bench:calls` writes. */
export interface CallBenchReport {
  kind: 'call-bench';
  startedAt: string;
  settings: CallBenchSettings;
  machine: MachineInfo;
  gateway: TargetRun;
  relay: TargetRun | null;
  /** gateway cpuPerCallSecond / relay cpuPerCallSecond (the tracked figure). */
  cpuRatioToRelay: number | null;
  /** Calls a gateway holds at `cpuBudgetPercent` of `cores` cores: cores * budget / cpuPerCallSecond. */
  capacity: { cores: number; cpuBudgetPercent: number; calls: number | null };
  targets: TargetCheck[];
  /** Every target that could be measured passed, and no call failed. */
  ok: boolean;
  /**
   * The machine's 1-minute load average when the run started and ended (`os.loadavg()`):
   * above the core count, other work was competing with the processes measured.
   */
  loadAverage?: { atStart: number; atEnd: number };
}
