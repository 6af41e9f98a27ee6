/**
 * Messages between `pnpm bench:calls` (the parent) and the processes it forks: the
 * provider simulators, the server under test (gateway or relay) and the caller processes.
 * Every child is forked with `serialization: 'advanced'` (structured clone), so arrays of
 * numbers cross without JSON.
 */
import type { AdmissionLimits, HeapGrowth } from '@vap/media-gateway';
import type { Payload } from '@vap/shared';
import type { ElevenLabsWebSocket } from '@vap/voice-pipeline';
import type { CallFailure, GeneratorFigures } from './call-results.js';
import type { Span } from './late-gaps.js';
import type { LoopDelaySummary, RawSample } from './process-sampler.js';

/** One agent reply's latency breakdown, as the gateway records it. */
export type TurnMetrics = Payload<'sessionEnded'>['turnMetrics'][number];

/** Where one simulated provider listens, and the key it expects. */
export interface ProviderAddress {
  url: string;
  apiKey: string;
}

// ---------- simulators process ----------

export interface SimsStart {
  kind: 'start';
  /** Latency the STT simulator adds before each result, ms. */
  sttLatencyMs: number;
}

/** Asks the simulators process what it has used so far. */
export interface SimsUsageRequest {
  kind: 'usage';
}

export type ToSims = SimsStart | SimsUsageRequest;

export type SimsMessage =
  | { kind: 'ready'; deepgram: ProviderAddress; openai: ProviderAddress; elevenlabs: ProviderAddress }
  /** Cumulative CPU (ms) at `at` (epoch ms), and the event-loop delay p99 since the previous usage answer. */
  | { kind: 'usage'; at: number; cpuMs: number; loopDelayP99Ms: number | null }
  | { kind: 'failed'; message: string };

// ---------- server under test ----------

export type ServerTarget = 'gateway' | 'relay';

export interface ServerStart {
  kind: 'start';
  target: ServerTarget;
  /** The simulators the gateway's providers point at (unused by the relay). */
  providers: { deepgram: ProviderAddress; openai: ProviderAddress; elevenlabs: ProviderAddress } | null;
  sampleIntervalMs: number;
  /** The gateway's `PIPELINE_THREADS`; null: its default. */
  pipelineThreads: number | null;
  /** The gateway's `ELEVENLABS_WEBSOCKET`; null: its default. */
  ttsWebSocket: ElevenLabsWebSocket | null;
  /** The gateway's `GATEWAY_MAX_CALLS` and `GATEWAY_OVERLOAD_LAG_MS`; null: its defaults. */
  maxCalls: number | null;
  overloadLagMs: number | null;
  /** Where the gateway logs (debug level); null: it is silent. */
  logFile: string | null;
}

/** The parent tells the server when the steady state runs (epoch ms), for its loop-delay window. */
export interface ServerWindow {
  kind: 'window';
  fromAt: number;
  toAt: number;
}

export interface ServerStop {
  kind: 'stop';
}

export type ToServer = ServerStart | ServerWindow | ServerStop;

/** A call the gateway ended, from its end record (`call.end`). */
export interface GatewayCallEnd {
  callSid: string;
  status: string;
  endReason: string;
  turnMetrics: TurnMetrics[];
}

export type ServerMessage =
  /** Listening; `streamUrl` is the Twilio media-stream WebSocket URL, `agentId`/`tenantId` what the stream's custom parameters must carry, `pipelineThreads` the gateway's PIPELINE_THREADS and `admission` its limits as it runs (null: the relay). */
  | { kind: 'ready'; streamUrl: string; metricsUrl: string | null; agentId: string; tenantId: string; pipelineThreads: number | null; ttsWebSocket: ElevenLabsWebSocket | null; admission: AdmissionLimits | null; heapGrowth: HeapGrowth | null }
  | { kind: 'sample'; sample: RawSample }
  | { kind: 'callEnded'; call: GatewayCallEnd }
  /** After `stop`: the steady-state loop delay, then the process exits. */
  | { kind: 'stopped'; steadyLoopDelay: LoopDelaySummary; lastSample: RawSample }
  | { kind: 'failed'; message: string };

// ---------- caller processes ----------

/** One caller slot: it dials at `startAt`, redials after each call until `steadyEndAt`. */
export interface CallerSlot {
  /** 0-based over the whole run. */
  index: number;
  startAt: number;
}

export interface WorkerRun {
  kind: 'run';
  target: ServerTarget;
  streamUrl: string;
  agentId: string;
  tenantId: string;
  /** STT simulator's base URL: each call's lines are scripted over its control API before dialling (gateway only). */
  deepgramUrl: string | null;
  slots: CallerSlot[];
  /** The first slot's dial (epoch ms): failures say when they happened relative to it. */
  runStartAt: number;
  /** No call is dialled at or after this epoch ms. */
  steadyEndAt: number;
  /** Relay calls last this long (they have no agent turns to wait for), ms. */
  relayCallMs: number;
  /** A gateway call still running this long after it was dialled is hung up and counted failed, ms. */
  callTimeoutMs: number;
  /** Gaps between agent frames longer than this start a new utterance, ms. */
  utteranceBreakMs: number;
}

export interface WorkerStop {
  kind: 'stop';
}

export type ToWorker = WorkerRun | WorkerStop;

/** What a caller measured on one call. Times are epoch ms. */
export interface CallRecord {
  callSid: string;
  slot: number;
  dialledAt: number;
  /** When the stream opened; null if it never did. */
  connectedAt: number | null;
  /** When the socket closed (or the connect failed). */
  endedAt: number;
  /** The script ran to its end (gateway) or the call lasted its planned time (relay). */
  completed: boolean;
  failure: CallFailure | null;
  /** End of caller speech → first agent audio, per line the agent answered, ms. */
  turnLatenciesMs: number[];
  /** Caller speech onset → `clear`, ms; null when the barge-in ran but no `clear` came; absent when not reached. */
  bargeInReactionMs?: number | null;
  framesReceived: number;
  /** Gaps between consecutive agent frames inside an utterance, ms. */
  frameGapsMs: number[];
  /** {@link frameGapsMs} without each utterance's designed lead (frame-gaps.ts `steadyGaps`): pacing jitter is measured on these. */
  steadyFrameGapsMs: number[];
  protocolErrors: string[];
}

export type WorkerMessage =
  | { kind: 'ready' }
  | { kind: 'call'; record: CallRecord }
  /**
   * After the last call: what the caller process itself cost; its calls' late gaps, and the
   * milliseconds since `originMs` in which it read at least one agent frame (one byte each,
   * late-gaps.ts `ArrivalMap`).
   */
  | ({ kind: 'done'; lateGaps: Span[]; arrivals: { originMs: number; bytes: Uint8Array } } & Required<GeneratorFigures>)
  | { kind: 'failed'; message: string };
