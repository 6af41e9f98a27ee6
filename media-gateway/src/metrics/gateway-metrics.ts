import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ProviderError, TurnMetrics } from '@vap/voice-pipeline';
import type { PipelineThreadStats } from '../pipeline-threads/pipeline-threads.js';
import { currentThreadId, threadCpuMs, threadRunQueueWaitMs } from '../pipeline-threads/thread-cpu.js';
import type { PacerStats } from '../twilio/pacer.js';
import type { TaggedCounter } from '../twilio/tagged-counter.js';
import { FixedHistogram } from './fixed-histogram.js';

/** What a call's session reports; {@link GatewayMetrics} implements it. */
export interface CallMetrics {
  /** One agent reply's latency breakdown, with the providers of the call (labels). */
  turn(m: TurnMetrics, providers: { stt: string; llm: string; tts: string }): void;
  /** Caller speech onset → our `clear`, ms. */
  bargeIn(reactionMs: number): void;
  /** A barge-in paused the agent and it resumed (cough, backchannel). */
  falseInterruption?(): void;
  /** A provider failed (retried or fatal). */
  providerError(error: ProviderError): void;
  /** A call that reached a session ended (`completed`, `failed`, …). */
  callEnded(status: string): void;
}

/** Seconds; turn stages run from a few ms (simulators) to seconds (a slow LLM). */
const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds; the barge-in target is p95 <= 150 ms. */
const BARGE_IN_BUCKETS_S = [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2];
/** Seconds; frames are 20 ms apart, a gap over 40 ms is late (the pacer's `lateGapMs`). */
const FRAME_GAP_BUCKETS_S = [0.005, 0.01, 0.015, 0.02, 0.022, 0.025, 0.03, 0.04, 0.06, 0.1, 0.25];

/** Per-stage fields of {@link TurnMetrics} and their `stage` label. */
const STAGES = [
  ['endpointing', 'endpointingMs'],
  ['stt', 'sttMs'],
  ['retrieval', 'retrievalMs'],
  ['llm_first_token', 'llmFirstTokenMs'],
  ['llm_first_phrase', 'llmFirstPhraseMs'],
  ['tts_first_byte', 'ttsFirstByteMs'],
  ['overhead', 'overheadMs'],
  ['total', 'totalMs'],
] as const;

/**
 * The gateway's Prometheus metrics, in a registry of their own (README "Metrics" lists
 * them). Labels are bounded: stages, provider names, capabilities, error codes, statuses
 * and close reasons, never call or conversation ids. Gauges and the counters kept
 * elsewhere (pacer, media-stream close reasons) are read when scraped.
 */
export class GatewayMetrics implements CallMetrics {
  readonly registry = new Registry();
  private readonly turnStage: Histogram<'stage'>;
  private readonly bargeInReaction: Histogram;
  private readonly providerRequest: Histogram<'provider' | 'capability'>;
  private readonly providerErrors: Counter<'provider' | 'capability' | 'code'>;
  private readonly callsEnded: Counter<'status'>;
  private readonly falseInterruptions: Counter;
  private readonly frameGaps: FixedHistogram;
  private lateFrameCount = 0;

  constructor(
    private readonly source: {
      /** Carrier legs connected now. */
      activeCalls: () => number;
      /** The gateway's outbound pacer. */
      pacerStats: () => PacerStats;
      /** `svc.telephony.media_stream_closed` (process-wide: every carrier endpoint counts into one). */
      mediaStreamClosed: TaggedCounter;
      /** Gap above which a frame is late, ms (the pacer's `lateGapMs`). */
      lateGapMs: number;
      /** The pipeline threads' figures (absent when sessions run on the gateway's loop, PIPELINE_THREADS=0). */
      pipelineThreads?: () => Promise<PipelineThreadStats[]>;
      /** Whether a new call would be taken now (`admission.ts`). */
      acceptingCalls: () => boolean;
      /** The lag the overload rule last read, ms (absent when the rule is off, GATEWAY_OVERLOAD_LAG_MS=0: nothing reads it). */
      overloadLagMs?: () => number;
    },
  ) {
    const registers = [this.registry];
    new Gauge({ name: 'vap_active_calls', help: 'Carrier legs (calls) connected to this gateway now', registers, collect() { this.set(source.activeCalls()); } });
    new Gauge({ name: 'vap_accepting_calls', help: '1 while the gateway takes new calls, 0 while it refuses them (at GATEWAY_MAX_CALLS, or overloaded: see vap_overload_lag_seconds); /readyz answers 503 meanwhile', registers, collect() { this.set(source.acceptingCalls() ? 1 : 0); } });
    const lag = source.overloadLagMs;
    if (lag) new Gauge({ name: 'vap_overload_lag_seconds', help: 'How far behind the slowest pipeline thread, or the gateway\'s own event loop, was at the last reading (every 250 ms): over GATEWAY_OVERLOAD_LAG_MS at two readings in a row, new calls are refused', registers, collect() { this.set(lag() / 1000); } });
    this.turnStage = new Histogram({ name: 'vap_turn_stage_seconds', help: 'Agent reply latency by stage: endpointing, stt, retrieval (knowledge base; agents with one only), llm_first_token, llm_first_phrase (first token → first phrase to TTS), tts_first_byte, overhead (ours), total (end of caller speech to first agent audio)', labelNames: ['stage'], buckets: LATENCY_BUCKETS_S, registers });
    this.bargeInReaction = new Histogram({ name: 'vap_barge_in_reaction_seconds', help: 'Caller speech onset to the carrier clear on a barge-in', buckets: BARGE_IN_BUCKETS_S, registers });
    this.falseInterruptions = new Counter({ name: 'vap_false_interruptions_total', help: 'Barge-ins that paused the agent and were not confirmed (cough, backchannel): the agent resumed', registers });
    this.providerRequest = new Histogram({ name: 'vap_provider_request_seconds', help: 'Provider latency per turn: stt end of speech to final transcript, llm request to first token, tts text to first audio byte', labelNames: ['provider', 'capability'], buckets: LATENCY_BUCKETS_S, registers });
    this.providerErrors = new Counter({ name: 'vap_provider_errors_total', help: 'Provider failures reported by call sessions (retried or fatal)', labelNames: ['provider', 'capability', 'code'], registers });
    this.callsEnded = new Counter({ name: 'vap_calls_ended_total', help: 'Calls that reached a voice session and ended, by status', labelNames: ['status'], registers });
    this.frameGaps = new FixedHistogram('vap_outbound_frame_gap_seconds', 'Gap between two outbound 20 ms frames of a call while audio was waiting (pacing jitter)', FRAME_GAP_BUCKETS_S, this.registry);
    const late = () => this.lateFrameCount;
    new Counter({ name: 'vap_outbound_late_frames_total', help: 'Outbound 20 ms frames sent more than 40 ms after the previous one while audio was waiting', registers, collect() { this.reset(); this.inc(late()); } });
    new Counter({ name: 'vap_pacer_late_ticks_total', help: 'Ticks of the outbound pacing timer that fired a whole frame (20 ms) or more late', registers, collect() { this.reset(); this.inc(source.pacerStats().lateTicks); } });
    // Linux only (thread-cpu.ts): with the pipeline threads' counters it tells where process_cpu_seconds_total goes.
    const loopTid = currentThreadId();
    if (loopTid !== null) {
      // A counter whose value is a reading of the loop thread's /proc files (ms); not registered where they cannot be read.
      const loopCounter = (name: string, help: string, readMs: (tid: number) => number | null) => {
        if (readMs(loopTid) === null) return;
        new Counter({
          name,
          help,
          registers,
          collect() {
            const ms = readMs(loopTid);
            this.reset();
            if (ms !== null) this.inc(ms / 1000);
          },
        });
      };
      loopCounter(
        'vap_gateway_loop_cpu_seconds_total',
        "CPU time (user + system, 10 ms steps) of the gateway's event-loop thread: carrier sockets, pacer, batches to and from the pipeline threads (and the voice sessions with PIPELINE_THREADS=0). process_cpu_seconds_total minus it and vap_pipeline_thread_cpu_seconds_total is the helper threads: V8's GC and compiler, libuv's pool, recording encoders",
        threadCpuMs,
      );
      loopCounter(
        'vap_gateway_loop_run_queue_wait_seconds_total',
        "Time the gateway's event-loop thread was ready to run but waited for a core (Linux schedstat): the pacer's timer and the carrier sockets wait with it, so frames go late on a machine whose cores are all busy even when the loop itself is idle enough. Its rate next to rate(vap_gateway_loop_cpu_seconds_total) says how much of the loop's time was queueing",
        threadRunQueueWaitMs,
      );
    }
    if (source.pipelineThreads) this.registerThreadMetrics(source.pipelineThreads);
    new Counter({
      name: 'svc_telephony_media_stream_closed_total',
      help: 'svc.telephony.media_stream_closed: carrier media stream sockets (Twilio, Telnyx, Vonage) closed or refused, by reason',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(source.mediaStreamClosed.snapshot())) this.inc({ reason }, n);
      },
    });
  }

  /**
   * Per pipeline thread (label `thread`, its place in the pool): calls, busy time and the
   * event-loop delay since the previous scrape. One scrape asks the threads once; every
   * family reads that answer.
   */
  private registerThreadMetrics(read: () => Promise<PipelineThreadStats[]>): void {
    const registers = [this.registry];
    let asking: Promise<PipelineThreadStats[]> | null = null;
    const stats = () => (asking ??= read().finally(() => (asking = null)));
    const perThread = async (metric: { reset(): void }, each: (s: PipelineThreadStats, labels: { thread: string }) => void) => {
      const all = await stats();
      metric.reset();
      for (const s of all) each(s, { thread: String(s.thread) });
    };
    new Gauge({ name: 'vap_pipeline_thread_calls', help: 'Calls whose voice session runs on this pipeline thread now', labelNames: ['thread'], registers, async collect() { await perThread(this, (s, l) => this.set(l, s.calls)); } });
    new Counter({ name: 'vap_pipeline_thread_busy_seconds_total', help: 'Wall time the pipeline thread\'s event loop was busy since the thread started (rate() is its utilization, 1 = saturated; it includes time spent waiting for a core, so on a busy machine it exceeds the thread\'s CPU time); a replacement thread starts from 0', labelNames: ['thread'], registers, async collect() { await perThread(this, (s, l) => this.inc(l, s.busyMs / 1000)); } });
    new Counter({ name: 'vap_pipeline_thread_cpu_seconds_total', help: 'CPU time (user + system, 10 ms steps) the pipeline thread has used since it started, read from /proc (Linux only; absent elsewhere); a replacement thread starts from 0', labelNames: ['thread'], registers, async collect() { await perThread(this, (s, l) => s.cpuMs !== null && this.inc(l, s.cpuMs / 1000)); } });
    new Counter({ name: 'vap_pipeline_thread_run_queue_wait_seconds_total', help: 'Time the pipeline thread was ready to run but waited for a core since it started (Linux schedstat; absent elsewhere). Running 10 nice steps below the gateway\'s loop, it waits first on a busy machine: large next to rate(vap_pipeline_thread_cpu_seconds_total), its loop delay, turn latency and barge-in come from the machine\'s busy cores, not its own work; a replacement thread starts from 0', labelNames: ['thread'], registers, async collect() { await perThread(this, (s, l) => s.runQueueWaitMs !== null && this.inc(l, s.runQueueWaitMs / 1000)); } });
    new Gauge({ name: 'vap_pipeline_thread_os_thread_id', help: 'The pipeline thread\'s OS thread id (Linux only; absent elsewhere), to find it in top -H, perf or /proc/<pid>/task; a replacement thread has a new one', labelNames: ['thread'], registers, async collect() { await perThread(this, (s, l) => s.tid !== null && this.set(l, s.tid)); } });
    const lag = (name: string, help: string, pick: (d: NonNullable<PipelineThreadStats['loopDelay']>) => number) =>
      new Gauge({ name, help, labelNames: ['thread'], registers, async collect() { await perThread(this, (s, l) => s.loopDelay && this.set(l, pick(s.loopDelay) / 1e9)); } });
    lag('vap_pipeline_thread_eventloop_lag_p99_seconds', 'The pipeline thread\'s event-loop delay p99 since the previous scrape, 10 ms samples (as nodejs_eventloop_lag_p99_seconds for the gateway\'s loop); absent when the thread did not answer within a second', (d) => d.p99Ns);
    lag('vap_pipeline_thread_eventloop_lag_max_seconds', 'The pipeline thread\'s largest event-loop delay since the previous scrape (as nodejs_eventloop_lag_max_seconds); absent when the thread did not answer within a second', (d) => d.maxNs);
  }

  turn(m: TurnMetrics, providers: { stt: string; llm: string; tts: string }): void {
    for (const [stage, field] of STAGES) {
      // Only turns of agents with a knowledge base retrieve: the others would bury it under zeros.
      if (stage === 'retrieval' && m.retrievalMs === 0) continue;
      this.turnStage.observe({ stage }, m[field] / 1000);
    }
    this.providerRequest.observe({ provider: providers.stt, capability: 'stt' }, m.sttMs / 1000);
    this.providerRequest.observe({ provider: providers.llm, capability: 'llm' }, m.llmFirstTokenMs / 1000);
    this.providerRequest.observe({ provider: providers.tts, capability: 'tts' }, m.ttsFirstByteMs / 1000);
  }

  bargeIn(reactionMs: number): void {
    this.bargeInReaction.observe(reactionMs / 1000);
  }

  falseInterruption(): void {
    this.falseInterruptions.inc();
  }

  providerError(error: ProviderError): void {
    this.providerErrors.inc({ provider: error.provider, capability: error.capability, code: error.code });
  }

  callEnded(status: string): void {
    this.callsEnded.inc({ status });
  }

  /**
   * One gap between two outbound frames of a leg while audio was waiting, ms. Called by
   * the pacer for every such frame: no allocation here, the buckets are a fixed array.
   */
  frameGap(gapMs: number): void {
    this.frameGaps.observe(gapMs / 1000);
    if (gapMs > this.source.lateGapMs) this.lateFrameCount++;
  }
}
