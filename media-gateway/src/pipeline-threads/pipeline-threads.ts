/**
 * Pipeline threads: the voice sessions of the gateway's calls run on a few `worker_threads`
 * while the gateway's own event loop keeps the carrier sockets, the pacer and the
 * recordings. The pipelines make most of the gateway's garbage (provider SDKs, TTS and STT
 * messages, per-turn requests); on their own heaps, their collections no longer stop the
 * loop that sends every call's 20 ms frames (#5). Each call's session lives on one thread;
 * the leg it drives and the callbacks CallSessions gives it are proxied over the thread's
 * port (`protocol.ts`).
 */
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { pino } from 'pino';
import { ProviderError } from '@vap/voice-pipeline';
import type { KnowledgePassage, RecordedMessage, RecordedTurn, SessionStatus, TurnMetrics } from '@vap/voice-pipeline';
import type { CallLeg } from '../call-leg.js';
import { EarlyBargeIn } from '../early-barge-in.js';
import { Batcher, unpackBatch } from './protocol.js';
import type { Batch, FromThread, SessionInit, SessionResult, ThreadLoopDelay, ThreadReady, ToThread } from './protocol.js';
import { threadCpuMs, threadRunQueueWaitMs } from './thread-cpu.js';

/** One call's voice session, wherever it runs: a {@link VoiceSession} satisfies it, so does a session on a pipeline thread. */
export interface SessionHandle {
  start(): void;
  audio(mulaw: Uint8Array): void;
  dtmf(digit: string): void;
  transportEnded(reason: 'hangup' | 'socket-lost' | 'local'): void;
  stop(reason: string, status?: SessionStatus): Promise<SessionResult>;
  readonly ended: Promise<SessionResult>;
}

/** The session's callbacks (those of {@link VoiceSessionOptions}), called on the gateway's loop. */
export interface SessionHooks {
  /** The call's logger: the session's lines are written to it. */
  logger: Logger;
  onMessage(message: RecordedMessage, turn: RecordedTurn): void;
  onError(error: ProviderError, recoverable: boolean): void;
  onTurnMetrics(metrics: TurnMetrics): void;
  onBargeIn(reactionMs: number): void;
  onFalseInterruption(): void;
  /** Knowledge passages for a caller turn (agents with a knowledge base). */
  retrieve?(query: string): Promise<KnowledgePassage[]>;
}

const WORKER_URL = new URL('./pipeline-worker.mjs', import.meta.url);

/** One pipeline thread as {@link PipelineThreads.stats} reads it (the gateway's /metrics). */
export interface PipelineThreadStats {
  /** The thread's place in the pool, from 0; a replacement for a thread that died takes its place. */
  thread: number;
  /** Calls running on it now. */
  calls: number;
  /**
   * Wall time its event loop has spent busy since the thread started, ms (Node's event-loop
   * utilization of the worker, read from the gateway's side: it answers even when the thread
   * is stuck; time waiting for a core counts). A replacement thread starts again from 0.
   */
  busyMs: number;
  /**
   * CPU time it has used since it started, ms (user + system, 10 ms steps; read by the gateway
   * from /proc, so a stuck thread has it too). Null off Linux or before the thread has loaded.
   */
  cpuMs: number | null;
  /** Its OS thread id (Linux; what `top -H`, `perf` and /proc/<pid>/task name it); null off Linux or before the thread has loaded. */
  tid: number | null;
  /**
   * Time it has spent ready to run but waiting for a core since it started, ms (Linux schedstat,
   * read by the gateway as `cpuMs`). Running 10 nice steps below the loop, it waits first when the cores are busy:
   * set against `cpuMs`, this says whether its delays came from its own work or from the machine.
   */
  runQueueWaitMs: number | null;
  /** Its event-loop delay since the previous `stats()`; null when it did not answer in time (a stuck or loading thread) or took no sample. */
  loopDelay: ThreadLoopDelay;
}

interface Thread {
  worker: Worker;
  out: Batcher<ToThread>;
  sessions: Map<number, RemoteSession>;
  /** The thread is gone (exited or failed); its calls have failed. */
  dead: boolean;
  /** It has posted its ready message. */
  loaded: boolean;
  /** The thread has loaded the pipeline and takes calls without a wait; rejects if it died first. */
  ready: Promise<void>;
  /** `stats` asked and not answered yet, by id. */
  statsWaiters: Map<number, (loopDelay: ThreadLoopDelay) => void>;
  /** Its OS thread id, from its ready message (null until then, and off Linux). */
  tid: number | null;
  /** The `ping` not answered yet: its id and when it was sent (performance.now()); null when none is out. */
  ping: { id: number; sentAt: number } | null;
  /** How long the last answered `ping` took, ms. */
  lastPingMs: number;
}

/**
 * The pool: `size` threads started at once (a call never waits for one to load), each call
 * on the thread with the fewest calls. A thread that dies fails its calls (each hung up and
 * ended `failed` with `pipeline_crashed`, keeping the messages already reported) and is
 * replaced for the next call.
 */
export class PipelineThreads {
  private readonly threads: Thread[] = [];
  private nextSession = 1;
  private nextStats = 1;
  private nextPing = 1;
  private closed = false;

  constructor(
    private readonly opts: {
      size: number;
      logger: Logger;
      /** The thread's entry module; default `pipeline-worker.mjs` (tests start others). */
      workerUrl?: URL;
    },
  ) {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new Error('PipelineThreads: size must be a positive integer');
    for (let i = 0; i < opts.size; i++) this.threads.push(this.spawn());
  }

  /**
   * Resolves when every thread has loaded the voice pipeline (about a second: a call
   * opened before that hears its greeting that much later); rejects if one died first.
   */
  ready(): Promise<void> {
    return Promise.all(this.threads.map((t) => t.ready)).then(() => undefined);
  }

  /** Calls running on the threads. */
  get activeSessions(): number {
    return this.threads.reduce((n, t) => n + t.sessions.size, 0);
  }

  /**
   * Each live thread's calls, busy time and event-loop delay (restarting its delay window).
   * A thread that does not answer within `timeoutMs` is listed with `loopDelay: null`.
   */
  async stats(timeoutMs = 1000): Promise<PipelineThreadStats[]> {
    if (this.closed) return [];
    const live = this.threads.map((t, i) => [t, i] as const).filter(([t]) => !t.dead);
    return Promise.all(
      live.map(async ([t, i]): Promise<PipelineThreadStats> => {
        const id = this.nextStats++;
        let timer: NodeJS.Timeout | undefined;
        const loopDelay = await new Promise<ThreadLoopDelay>((resolve) => {
          t.statsWaiters.set(id, resolve);
          timer = setTimeout(() => resolve(null), timeoutMs).unref();
          t.out.send({ t: 'stats', s: 0, id });
        });
        clearTimeout(timer);
        t.statsWaiters.delete(id);
        return { thread: i, calls: t.sessions.size, busyMs: t.worker.performance.eventLoopUtilization().active, cpuMs: t.tid === null ? null : threadCpuMs(t.tid), tid: t.tid, runQueueWaitMs: t.tid === null ? null : threadRunQueueWaitMs(t.tid), loopDelay };
      }),
    );
  }

  /**
   * How far behind the slowest loaded thread is, ms: the longer of its last `ping`'s round
   * trip and the age of a `ping` still unanswered. Each call sends a `ping` to every loaded
   * thread that has none out, so calling it every few hundred ms keeps the figure fresh
   * (the gateway's admission check does, `admission.ts`). A thread that is loading or dead
   * counts 0: calls are not put on it, or it is replaced.
   */
  probeLagMs(): number {
    if (this.closed) return 0;
    const now = performance.now();
    let worst = 0;
    for (const t of this.threads) {
      if (t.dead || !t.loaded) continue;
      if (t.ping) worst = Math.max(worst, now - t.ping.sentAt);
      else {
        t.ping = { id: this.nextPing++, sentAt: now };
        t.out.send({ t: 'ping', s: 0, id: t.ping.id });
      }
      worst = Math.max(worst, t.lastPingMs);
    }
    return worst;
  }

  /** Runs a call's session on the least busy thread, driving `leg`. */
  open(init: SessionInit, leg: CallLeg, hooks: SessionHooks): SessionHandle {
    if (this.closed) throw new Error('PipelineThreads: closed');
    for (let i = 0; i < this.threads.length; i++) if (this.threads[i]!.dead) this.threads[i] = this.spawn();
    const thread = this.threads.reduce((a, b) => (b.sessions.size < a.sessions.size ? b : a));
    const id = this.nextSession++;
    const session = new RemoteSession(id, thread.out, leg, hooks, init);
    thread.sessions.set(id, session);
    void session.ended.then(() => thread.sessions.delete(id));
    thread.out.send({ t: 'open', s: id, init });
    return session;
  }

  /** Stops the threads. Calls still open fail (end their calls first: `CallSessions.close`). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  private spawn(): Thread {
    const worker = new Worker(this.opts.workerUrl ?? WORKER_URL);
    let loaded!: () => void;
    let failed!: (err: Error) => void;
    const ready = new Promise<void>((resolve, reject) => ((loaded = resolve), (failed = reject)));
    // A replacement thread nobody awaits must not report an unhandled rejection.
    ready.catch(() => undefined);
    const thread: Thread = { worker, out: new Batcher((batch, transfer) => worker.postMessage(batch, transfer)), sessions: new Map(), dead: false, loaded: false, ready, statsWaiters: new Map(), tid: null, ping: null, lastPingMs: 0 };
    const onAudio = (s: number, audio: Uint8Array): void => thread.sessions.get(s)?.sendAudio(audio);
    const onOther = (m: FromThread): void => {
      if (m.t === 'stats') return thread.statsWaiters.get(m.id)?.(m.loopDelay);
      if (m.t === 'pong') {
        if (thread.ping?.id === m.id) {
          thread.lastPingMs = performance.now() - thread.ping.sentAt;
          thread.ping = null;
        }
        return;
      }
      try {
        thread.sessions.get(m.s)?.receive(m);
      } catch (err) {
        this.opts.logger.error({ err, kind: m.t }, 'pipeline thread message failed');
      }
    };
    worker.on('message', (m: Batch<FromThread> | ThreadReady) => {
      if ('t' in m) {
        thread.tid = m.tid;
        thread.loaded = true;
        loaded();
      } else unpackBatch(m, onAudio, onOther);
    });
    worker.on('error', (err) => this.opts.logger.error({ err, threadId: worker.threadId }, 'pipeline thread failed'));
    worker.on('exit', (code) => {
      thread.dead = true;
      failed(new Error(`pipeline thread exited with code ${code} before it was ready`));
      if (!this.closed) this.opts.logger.error({ code, threadId: worker.threadId, calls: thread.sessions.size }, 'pipeline thread exited; its calls fail');
      for (const s of [...thread.sessions.values()]) s.crashed();
      for (const answer of thread.statsWaiters.values()) answer(null);
    });
    // An idle pool does not keep the process alive; a loading one does (someone may await `ready()`).
    void ready.then(() => worker.unref(), () => undefined);
    return thread;
  }
}

/** The gateway's side of a session on a thread: forwards the leg's events and the session's commands and callbacks. */
class RemoteSession implements SessionHandle {
  readonly ended: Promise<SessionResult>;
  private resolveEnded!: (r: SessionResult) => void;
  private done = false;
  private readonly openedAt = performance.now();
  private startedAt: number | null = null;
  /** What was reported, for the record of a call whose thread died. */
  private readonly messages: RecordedMessage[] = [];
  private readonly turns: RecordedTurn[] = [];
  private readonly metrics: TurnMetrics[] = [];
  /** Stops the agent on caller speech from this loop, not waiting for the thread (`early-barge-in.ts`). */
  private readonly bargeIn: EarlyBargeIn | null;

  constructor(
    private readonly id: number,
    private readonly out: Batcher<ToThread>,
    private readonly leg: CallLeg,
    private readonly hooks: SessionHooks,
    private readonly init: SessionInit,
  ) {
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.bargeIn = EarlyBargeIn.forAgent(init.agent.interruption);
    leg.onMarkPlayed((name) => !this.done && out.send({ t: 'markPlayed', s: id, name }));
  }

  start(): void {
    this.startedAt = performance.now();
    this.out.send({ t: 'start', s: this.id });
  }

  audio(mulaw: Uint8Array): void {
    if (this.done) return;
    const reactionMs = this.bargeIn?.frame(mulaw) ?? null;
    if (reactionMs !== null && this.leg.agentPlaying) {
      // Before the frame: the thread takes the pause over before its detector reads that
      // frame, so the barge-in is reported once, with the reaction measured here.
      this.leg.pause();
      this.out.send({ t: 'transportPaused', s: this.id, reactionMs });
    }
    this.out.audio(this.id, mulaw);
  }

  /** Agent audio from the session (a view into its batch: the leg keeps it, nothing reuses it). */
  sendAudio(mulaw: Uint8Array): void {
    this.leg.sendAudio(mulaw);
  }

  dtmf(digit: string): void {
    if (!this.done) this.out.send({ t: 'dtmf', s: this.id, digit });
  }

  transportEnded(reason: 'hangup' | 'socket-lost' | 'local'): void {
    if (!this.done) this.out.send({ t: 'transportEnded', s: this.id, reason });
  }

  stop(reason: string, status: SessionStatus = 'failed'): Promise<SessionResult> {
    if (!this.done) this.out.send({ t: 'stop', s: this.id, reason, status });
    return this.ended;
  }

  receive(m: FromThread): void {
    const leg = this.leg;
    const hooks = this.hooks;
    switch (m.t) {
      case 'sendMark':
        return leg.sendMark(m.name);
      case 'clear':
        return leg.clear();
      case 'pause':
        return leg.pause();
      case 'resume':
        return leg.resume();
      case 'hangup':
        void leg
          .hangup()
          .catch((err: unknown) => hooks.logger.warn({ err }, 'hang-up failed'))
          .finally(() => this.out.send({ t: 'hungUp', s: this.id }));
        return;
      case 'message':
        this.messages.push(m.message);
        this.turns.push(m.turn);
        return hooks.onMessage(m.message, m.turn);
      case 'error':
        return hooks.onError(new ProviderError(m.error), m.recoverable);
      case 'turnMetrics':
        this.metrics.push(m.metrics);
        return hooks.onTurnMetrics(m.metrics);
      case 'bargeIn':
        return hooks.onBargeIn(m.reactionMs);
      case 'falseInterruption':
        return hooks.onFalseInterruption();
      case 'retrieve':
        this.retrieve(m.id, m.query);
        return;
      case 'log':
        return relayLogLine(hooks.logger, m.line);
      case 'ended':
        this.finish(m.result);
        return;
    }
  }

  /** The thread died with the call open: the call fails and is hung up; what was said is kept. */
  crashed(): void {
    if (this.done) return;
    this.hooks.logger.error('the call\'s pipeline thread stopped; hanging up');
    void this.leg.hangup().catch(() => undefined);
    this.finish({
      status: 'failed',
      endReason: 'error',
      error: { code: 'pipeline_crashed', message: 'The voice pipeline running the call stopped' },
      durationMs: 0, // finish() measures it
      language: this.init.agent.transcription.language ?? 'en-US',
      record: { messages: this.messages, turns: this.turns, usage: { llmInputTokens: 0, llmOutputTokens: 0, ttsCharacters: 0, sttAudioMs: 0 }, metrics: this.metrics },
    });
  }

  /**
   * The call's duration is the gateway's: from `start()` (the recording's t=0) to now, so
   * that a thread that took the call late (still loading) does not shorten it.
   */
  private finish(result: SessionResult): void {
    if (this.done) return;
    this.done = true;
    this.resolveEnded({ ...result, durationMs: performance.now() - (this.startedAt ?? this.openedAt) });
  }

  private retrieve(id: number, query: string): void {
    const reply = (passages: KnowledgePassage[] | null, error: string | null): void => {
      if (!this.done) this.out.send({ t: 'retrieved', s: this.id, id, passages, error });
    };
    if (!this.hooks.retrieve) return reply(null, 'this call has no knowledge base');
    this.hooks.retrieve(query).then(
      (passages) => reply(passages, null),
      (err: unknown) => reply(null, err instanceof Error ? err.message : String(err)),
    );
  }
}

/** A pino line from a thread, written to the call's logger at its level (the thread's time, pid and host are the gateway's). */
function relayLogLine(logger: Logger, line: string): void {
  const { level, msg, time: _time, pid: _pid, hostname: _hostname, ...fields } = JSON.parse(line) as Record<string, unknown>;
  const label = pino.levels.labels[level as number] as pino.Level | undefined;
  if (!label) return;
  if (isSerializedError(fields['err'])) fields['err'] = reviveError(fields['err']);
  logger[label](fields, typeof msg === 'string' ? msg : undefined);
}

type SerializedError = { type: string; message: string; stack: string } & Record<string, unknown>;

function isSerializedError(v: unknown): v is SerializedError {
  const e = v as SerializedError | null;
  return typeof e === 'object' && e !== null && typeof e.type === 'string' && typeof e.message === 'string' && typeof e.stack === 'string';
}

/**
 * An error the thread's logger serialized, as an Error again, so that the gateway's logger
 * serializes it the same way (its `type` would otherwise read `Object`). The message
 * already holds the causes' messages.
 */
function reviveError(e: SerializedError): Error {
  const { type, message, stack, ...rest } = e;
  const err = Object.assign(new Error(message), rest);
  err.stack = stack;
  // pino names an error by its constructor.
  Object.defineProperty(err, 'constructor', { value: { [type]: function () {} }[type], enumerable: false });
  return err;
}
