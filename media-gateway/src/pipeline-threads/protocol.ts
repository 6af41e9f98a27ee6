/**
 * What the gateway's event loop and its pipeline threads say to each other about the calls
 * a thread runs (`pipeline-threads.ts` on the gateway's side, `pipeline-worker-body.ts` in
 * the thread). Messages go in batches ({@link Batch}, in order) over the worker's port: one
 * `postMessage` per turn of the sender's event loop, not one per 20 ms frame.
 */
import type { AgentConfig } from '@vap/shared';
import type { KnowledgePassage, ProviderEndpoints, RecordedMessage, RecordedTurn, SessionStatus, TurnMetrics, Usage } from '@vap/voice-pipeline';

/** The one message outside batches: a thread posts it once, when it has loaded the voice pipeline. */
export const THREAD_READY = 'ready';

/** The {@link THREAD_READY} message, with the thread's OS id (null off Linux) so the gateway can read its CPU time (`thread-cpu.ts`). */
export interface ThreadReady {
  t: typeof THREAD_READY;
  tid: number | null;
}

/** Everything a thread needs to run one call's voice session. Plain data (structured clone). */
export interface SessionInit {
  agent: AgentConfig;
  endpoints: ProviderEndpoints;
  ttsFirstByteTimeoutMs: number | undefined;
  call: { callSid: string; from: string | null; to: string | null; metadata: Record<string, string> };
  /** Epoch ms of the call's start. */
  startedAtMs: number;
  /** The gateway logger's level; the session's log lines come back to the gateway's logger. */
  logLevel: string;
  /** The agent has a knowledge base: its turns ask the gateway (`retrieve`) for passages. */
  knowledge: { timeoutMs: number; maxChars: number } | null;
}

/** A call's end as the gateway needs it: {@link SessionOutcome} with the record's data, not its class. */
export interface SessionResult {
  status: SessionStatus;
  endReason: string;
  error: { code: string; message: string } | null;
  durationMs: number;
  language: string;
  record: { messages: RecordedMessage[]; turns: RecordedTurn[]; usage: Usage; metrics: TurnMetrics[] };
}

/** A {@link ProviderError}'s fields (the class does not survive the thread boundary). */
export interface ProviderErrorFields {
  provider: string;
  capability: 'stt' | 'llm' | 'tts';
  code: string;
  message: string;
  retryable: boolean;
  status: number | undefined;
  requestId: string | undefined;
}

/** Gateway → thread, per call (`s`, the call's number on that thread); caller audio goes as {@link Batcher.audio}. */
export type ToThread =
  | { t: 'open'; s: number; init: SessionInit }
  | { t: 'start'; s: number }
  | { t: 'dtmf'; s: number; digit: string }
  | { t: 'markPlayed'; s: number; name: string }
  | { t: 'transportEnded'; s: number; reason: 'hangup' | 'socket-lost' | 'local' }
  | { t: 'stop'; s: number; reason: string; status: SessionStatus }
  | { t: 'hungUp'; s: number }
  /** The gateway's loop paused the agent on caller speech (`early-barge-in.ts`), `reactionMs` after its onset: the session takes it over. */
  | { t: 'transportPaused'; s: number; reactionMs: number }
  | { t: 'retrieved'; s: number; id: number; passages: KnowledgePassage[] | null; error: string | null }
  /** Not a call's (`s` is 0): asks the thread for its {@link ThreadLoopDelay} since the last ask. */
  | { t: 'stats'; s: 0; id: number }
  /** Not a call's: answered with `pong` as soon as the thread's loop gets to it (how far behind the thread is). */
  | { t: 'ping'; s: 0; id: number };

/**
 * A thread's event-loop delay since the gateway last asked: nanoseconds, as
 * `monitorEventLoopDelay` records them at {@link THREAD_LOOP_DELAY_RESOLUTION_MS} (so the
 * period is included, as in prom-client's `nodejs_eventloop_lag_*` for the gateway's loop);
 * null when no sample was taken.
 */
export type ThreadLoopDelay = { p50Ns: number; p99Ns: number; maxNs: number } | null;

/** The sampling period of a thread's loop-delay histogram, ms (prom-client's default for the gateway's loop); `bench:calls` subtracts it from the gauges (loadtest/src/calls/thread-figures.ts). */
export const THREAD_LOOP_DELAY_RESOLUTION_MS = 10;

/** Thread → gateway, per call: the leg's commands, the session's callbacks, its log lines and its end; agent audio goes as {@link Batcher.audio}. */
export type FromThread =
  | { t: 'sendMark'; s: number; name: string }
  | { t: 'clear'; s: number }
  | { t: 'pause'; s: number }
  | { t: 'resume'; s: number }
  | { t: 'hangup'; s: number }
  | { t: 'message'; s: number; message: RecordedMessage; turn: RecordedTurn }
  | { t: 'error'; s: number; error: ProviderErrorFields; recoverable: boolean }
  | { t: 'turnMetrics'; s: number; metrics: TurnMetrics }
  | { t: 'bargeIn'; s: number; reactionMs: number }
  | { t: 'falseInterruption'; s: number }
  | { t: 'retrieve'; s: number; id: number; query: string }
  | { t: 'log'; s: number; line: string }
  | { t: 'ended'; s: number; result: SessionResult }
  /** Not a call's: the answer to `stats`. */
  | { t: 'stats'; s: 0; id: number; loopDelay: ThreadLoopDelay }
  /** Not a call's: the answer to `ping`. */
  | { t: 'pong'; s: 0; id: number };

/**
 * One post over a thread's port: the messages queued during one turn of the sender's event
 * loop, in order. Audio is packed into one buffer (transferred, not copied) so that a batch
 * costs a few objects to clone instead of one per 20 ms frame: `ops` holds per message
 * either `AUDIO, session, offset, length` (a range of `bytes`) or `OTHER, index` (into `others`).
 */
export interface Batch<M> {
  ops: Int32Array;
  bytes: Uint8Array | null;
  others: M[];
}

const OTHER = 0;
const AUDIO = 1;
/** Smallest audio buffer of a batch; a batch's buffer starts at twice the last one's audio. */
const MIN_AUDIO_BYTES = 1024;

/**
 * Collects messages and posts them as one {@link Batch} when the current turn of the event
 * loop is done (`setImmediate`): the frames of every call that arrived in one poll go together.
 */
export class Batcher<M> {
  private ops: number[] = [];
  private others: M[] = [];
  private bytes: Uint8Array | null = null;
  private used = 0;
  private lastUsed = 0;
  private scheduled = false;

  constructor(private readonly post: (batch: Batch<M>, transfer: ArrayBuffer[]) => void) {}

  send(message: M): void {
    this.ops.push(OTHER, this.others.length);
    this.others.push(message);
    this.schedule();
  }

  /** Audio of session `s`, copied into the batch (the caller may reuse `audio` at once). */
  audio(s: number, audio: Uint8Array): void {
    const n = audio.byteLength;
    if (!this.bytes || this.used + n > this.bytes.byteLength) {
      // Sized to the traffic: the receiver's views keep a batch's buffer alive as long as any frame of it.
      const grown = new Uint8Array(Math.max(MIN_AUDIO_BYTES, 2 * this.lastUsed, (this.used + n) * 2));
      if (this.bytes) grown.set(this.bytes.subarray(0, this.used));
      this.bytes = grown;
    }
    this.bytes.set(audio, this.used);
    this.ops.push(AUDIO, s, this.used, n);
    this.used += n;
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.flush);
  }

  /** Posts what is queued now (also called by the timer). */
  readonly flush = (): void => {
    this.scheduled = false;
    if (this.ops.length === 0) return;
    const ops = Int32Array.from(this.ops);
    const bytes = this.bytes ? this.bytes.subarray(0, this.used) : null;
    const batch: Batch<M> = { ops, bytes, others: this.others };
    this.ops = [];
    this.others = [];
    this.bytes = null;
    this.lastUsed = this.used;
    this.used = 0;
    this.post(batch, bytes ? [ops.buffer, bytes.buffer as ArrayBuffer] : [ops.buffer]);
  };
}

/** Reads a {@link Batch} in order: each audio range (a view into the batch's buffer) and each other message. */
export function unpackBatch<M>(batch: Batch<M>, onAudio: (s: number, audio: Uint8Array) => void, onOther: (message: M) => void): void {
  const { ops, bytes, others } = batch;
  for (let i = 0; i < ops.length; ) {
    if (ops[i] === AUDIO) {
      const offset = ops[i + 2]!;
      onAudio(ops[i + 1]!, bytes!.subarray(offset, offset + ops[i + 3]!));
      i += 4;
    } else {
      onOther(others[ops[i + 1]!]!);
      i += 2;
    }
  }
}
