/**
 * A pipeline thread's message loop (loaded by `pipeline-worker.mjs`): runs the voice
 * sessions the gateway opens on it, each driving its leg and reporting its callbacks, log
 * lines and end through the gateway (`protocol.ts`).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parentPort } from 'node:worker_threads';
import { pino } from 'pino';
import type { Logger } from 'pino';
import { EnergyVad, VoiceSession, createCallProviders } from '@vap/voice-pipeline';
import type { KnowledgeOptions, KnowledgePassage, ProviderError, SessionOutcome } from '@vap/voice-pipeline';
import { Batcher, THREAD_LOOP_DELAY_RESOLUTION_MS, THREAD_READY, unpackBatch } from './protocol.js';
import type { Batch, FromThread, ProviderErrorFields, SessionInit, SessionResult, ThreadReady, ToThread } from './protocol.js';
import { currentThreadId } from './thread-cpu.js';
import { lowerPipelineThreadPriority } from './thread-priority.js';

const port = parentPort!;

const tid = currentThreadId();
// Below the gateway's loop, whatever the gateway's own priority (thread-priority.ts).
lowerPipelineThreadPriority(tid);
const out = new Batcher<FromThread>((batch, transfer) => port.postMessage(batch, transfer));

interface Call {
  session: VoiceSession | null;
  markListeners: ((name: string) => void)[];
  hangups: (() => void)[];
  retrievals: Map<number, { resolve: (p: KnowledgePassage[]) => void; reject: (err: Error) => void }>;
  nextRetrieval: number;
}

const calls = new Map<number, Call>();

/** This thread's event-loop delay, reported and restarted when the gateway asks (its /metrics scrape). */
const loopDelay = monitorEventLoopDelay({ resolution: THREAD_LOOP_DELAY_RESOLUTION_MS });
loopDelay.enable();

const onAudio = (s: number, audio: Uint8Array): void => calls.get(s)?.session?.audio(audio);
const onOther = (m: ToThread): void => {
  try {
    receive(m);
  } catch (err) {
    // A failing call must not take the thread's other calls with it.
    out.send({ t: 'log', s: m.s, line: JSON.stringify({ level: 50, msg: 'pipeline thread message failed', kind: m.t, err: { message: String(err), stack: err instanceof Error ? err.stack : undefined } }) });
  }
};
port.on('message', (batch: Batch<ToThread>) => unpackBatch(batch, onAudio, onOther));
// Everything is loaded (this module's imports are the pipeline): calls can come.
port.postMessage({ t: THREAD_READY, tid } satisfies ThreadReady);

function receive(m: ToThread): void {
  if (m.t === 'open') return open(m.s, m.init);
  if (m.t === 'ping') return out.send({ t: 'pong', s: 0, id: m.id });
  if (m.t === 'stats') {
    const sampled = loopDelay.count > 0;
    out.send({ t: 'stats', s: 0, id: m.id, loopDelay: sampled ? { p50Ns: loopDelay.percentile(50), p99Ns: loopDelay.percentile(99), maxNs: loopDelay.max } : null });
    loopDelay.reset();
    return;
  }
  const call = calls.get(m.s);
  if (!call) return;
  const session = call.session;
  switch (m.t) {
    case 'start':
      return session?.start();
    case 'dtmf':
      return session?.dtmf(m.digit);
    case 'markPlayed':
      for (const l of call.markListeners) l(m.name);
      return;
    case 'transportEnded':
      return session?.transportEnded(m.reason);
    case 'stop':
      void session?.stop(m.reason, m.status);
      return;
    case 'transportPaused':
      return session?.transportPaused(m.reactionMs);
    case 'hungUp':
      for (const r of call.hangups.splice(0)) r();
      return;
    case 'retrieved': {
      const pending = call.retrievals.get(m.id);
      call.retrievals.delete(m.id);
      if (m.passages) pending?.resolve(m.passages);
      else pending?.reject(new Error(m.error ?? 'knowledge retrieval failed'));
      return;
    }
  }
}

function open(s: number, init: SessionInit): void {
  const call: Call = { session: null, markListeners: [], hangups: [], retrievals: new Map(), nextRetrieval: 1 };
  calls.set(s, call);
  const logger: Logger = pino({ level: init.logLevel, base: null }, { write: (line: string) => out.send({ t: 'log', s, line }) });
  try {
    const providers = createCallProviders(init.agent, init.endpoints, { ttsFirstByteTimeoutMs: init.ttsFirstByteTimeoutMs });
    const knowledge: KnowledgeOptions | undefined = init.knowledge
      ? {
          ...init.knowledge,
          retrieve: (query) =>
            new Promise<KnowledgePassage[]>((resolve, reject) => {
              const id = call.nextRetrieval++;
              call.retrievals.set(id, { resolve, reject });
              out.send({ t: 'retrieve', s, id, query });
            }),
        }
      : undefined;
    const session = new VoiceSession({
      agent: init.agent,
      providers,
      transport: {
        sendAudio: (a) => out.audio(s, a),
        sendMark: (name) => out.send({ t: 'sendMark', s, name }),
        clear: () => out.send({ t: 'clear', s }),
        pause: () => out.send({ t: 'pause', s }),
        resume: () => out.send({ t: 'resume', s }),
        onMarkPlayed: (l) => void call.markListeners.push(l),
        hangup: () =>
          new Promise<void>((resolve) => {
            call.hangups.push(resolve);
            out.send({ t: 'hangup', s });
          }),
      },
      call: init.call,
      vad: new EnergyVad({ sampleRateHz: 8000 }),
      logger,
      startedAtMs: init.startedAtMs,
      onMessage: (message, turn) => out.send({ t: 'message', s, message, turn }),
      onError: (error, recoverable) => out.send({ t: 'error', s, error: errorFields(error), recoverable }),
      onTurnMetrics: (metrics) => out.send({ t: 'turnMetrics', s, metrics }),
      onBargeIn: (reactionMs) => out.send({ t: 'bargeIn', s, reactionMs }),
      onFalseInterruption: () => out.send({ t: 'falseInterruption', s }),
      ...(knowledge ? { knowledge } : {}),
    });
    call.session = session;
    void session.ended.then((o) => {
      calls.delete(s);
      out.send({ t: 'ended', s, result: result(o) });
    });
  } catch (err) {
    // The gateway resolved the providers before opening: this is a defect, and the call fails.
    calls.delete(s);
    logger.error({ err }, 'voice session could not start');
    out.send({ t: 'hangup', s });
    out.send({
      t: 'ended',
      s,
      result: { status: 'failed', endReason: 'error', error: { code: 'pipeline_error', message: 'The voice session could not start' }, durationMs: 0, language: init.agent.transcription.language ?? 'en-US', record: { messages: [], turns: [], usage: { llmInputTokens: 0, llmOutputTokens: 0, ttsCharacters: 0, sttAudioMs: 0 }, metrics: [] } },
    });
  }
}

function result(o: SessionOutcome): SessionResult {
  const r = o.record;
  return { status: o.status, endReason: o.endReason, error: o.error, durationMs: o.durationMs, language: o.language, record: { messages: r.messages, turns: r.turns, usage: r.usage, metrics: r.metrics } };
}

function errorFields(e: ProviderError): ProviderErrorFields {
  return { provider: e.provider, capability: e.capability as ProviderErrorFields['capability'], code: e.code, message: e.message, retryable: e.retryable, status: e.status, requestId: e.requestId };
}
