import type { Logger } from 'pino';
import { BusRequestError, SUBJECTS } from '@vap/shared';
import type { AgentConfig, Bus, ReplyPayload } from '@vap/shared';
import { DEFAULT_KNOWLEDGE_MAX_CHARS, DEFAULT_RETRIEVAL_TIMEOUT_MS, EnergyVad, KNOWLEDGE_TOP_K, ProviderError, VoiceSession, createCallProviders, resolveCallEndpoints } from '@vap/voice-pipeline';
import type { KnowledgeOptions, ProviderEndpoints, SessionStatus, TurnMetrics } from '@vap/voice-pipeline';
import type { CallLeg } from './call-leg.js';
import type { CallMetrics } from './metrics/gateway-metrics.js';
import type { CallRecorder } from './recording/call-recorder.js';
import type { PipelineThreads, SessionHandle, SessionHooks } from './pipeline-threads/pipeline-threads.js';
import type { SessionResult } from './pipeline-threads/protocol.js';
import type { CallRecording, RecordingArchiver } from './recording/recording-archiver.js';
import { EndRecordDelivery } from './end-record-delivery.js';

/** How long a gateway shutting down keeps sending end records no control plane has stored (ms). */
const END_RECORD_CLOSE_GRACE_MS = 10_000;

/** Parameters the control plane puts in `<Stream>`; the rest of them is call metadata. */
const ROUTING_PARAMETERS = new Set(['agentId', 'tenantId', 'callSid', 'from', 'to', 'direction', 'streamToken']);

/** What the gateway remembers of a recent call, for the sandbox call command and debugging. */
export interface CallSummary {
  callSid: string;
  conversationId: string | null;
  status: 'in_progress' | SessionStatus | 'rejected';
  endReason: string | null;
  turnMetrics: TurnMetrics[];
  bargeInReactionMs: number[];
  providers: string[];
}

interface ActiveCall {
  conversationId: string;
  session: SessionHandle;
  done: Promise<void>;
}

/**
 * Runs a voice session for each carrier leg the gateway accepts: asks a control plane to
 * take the call (`callPrepare` over the bus), builds the agent's providers, feeds the leg
 * into the session, and reports every message, error and the final record on the bus.
 * Publishes the gateway's heartbeat so a control plane can fail its calls if it dies.
 */
export class CallSessions {
  private readonly active = new Map<string, ActiveCall>();
  /**
   * Calls whose `call.prepare` is on its way (by leg: a duplicated stream has its own). The control plane
   * has created their conversation (or is about to) and has not been heard back from: the
   * heartbeat names them so a conversation answered a moment before a beat is not taken for
   * one this gateway dropped.
   */
  private readonly preparing = new Map<CallLeg, { provider: string; callSid: string }>();
  private readonly recent = new Map<string, CallSummary>();
  private heartbeat: NodeJS.Timeout | undefined;
  private beat: (() => void) | undefined;
  private draining = false;
  private readonly endRecords: EndRecordDelivery;

  constructor(
    private readonly deps: {
      bus: Bus;
      logger: Logger;
      gatewayId: string;
      endpoints: ProviderEndpoints;
      heartbeatIntervalMs: number;
      prepareTimeoutMs?: number;
      /** Stall limit of a call's TTS streams (ms); the adapter's default when absent. */
      ttsFirstByteTimeoutMs?: number;
      /** Records calls of agents with `recording.enabled`; absent: no call is recorded. */
      recordings?: RecordingArchiver;
      /** Where turn latencies, barge-ins, provider errors and call outcomes are counted. */
      metrics?: CallMetrics;
      /** How long a caller turn waits for knowledge-base passages before going on without (ms, default 800). */
      retrievalTimeoutMs?: number;
      /** Where the voice sessions run: these threads; absent, on this event loop. */
      pipelines?: PipelineThreads;
    },
  ) {
    this.endRecords = new EndRecordDelivery({ bus: deps.bus, logger: deps.logger });
  }

  get activeCalls(): number {
    return this.active.size;
  }

  /** Ended calls whose end record no control plane has stored yet (they are retried). */
  get undeliveredEndRecords(): number {
    return this.endRecords.size;
  }

  /** Recent calls by carrier call id (last 200). */
  summary(callSid: string): CallSummary | undefined {
    return this.recent.get(callSid);
  }

  startHeartbeat(): void {
    this.beat = () => {
      void this.deps.bus
        .publish('gatewayHeartbeat', SUBJECTS.gatewayHeartbeat.subject(this.deps.gatewayId), {
          gatewayId: this.deps.gatewayId,
          // A call whose end record waits for a control plane is still this gateway's: not lost.
          activeConversationIds: [...this.active.keys(), ...this.endRecords.conversationIds],
          intervalMs: this.deps.heartbeatIntervalMs,
          at: new Date().toISOString(),
          draining: this.draining,
          preparing: [...this.preparing.values()],
        })
        .catch((err: unknown) => this.deps.logger.warn({ err }, 'heartbeat publish failed'));
    };
    this.beat();
    this.heartbeat = setInterval(this.beat, this.deps.heartbeatIntervalMs);
    this.heartbeat.unref();
  }

  /**
   * From now on the heartbeats say this gateway drains (takes no new call), starting with one
   * sent at once: while every gateway drains, control planes answer carriers' new calls with
   * their apology instead of routing them here to be refused.
   */
  drain(): void {
    if (this.draining) return;
    this.draining = true;
    this.beat?.();
  }

  /** Takes a new leg; never throws (a call that cannot run is hung up and reported). */
  handle(leg: CallLeg): void {
    void this.run(leg).catch((err: unknown) => {
      this.deps.logger.error({ err, callSid: leg.callSid }, 'call session crashed');
      void leg.hangup();
    });
  }

  private remember(s: CallSummary): void {
    this.recent.set(s.callSid, s);
    if (this.recent.size > 200) this.recent.delete(this.recent.keys().next().value!);
  }

  private async run(leg: CallLeg): Promise<void> {
    const p = leg.parameters;
    const log = this.deps.logger.child({ callSid: leg.callSid, agentId: p['agentId'], tenantId: p['tenantId'] });
    // Caller audio keeps coming while the control plane answers: keep it for the session.
    const early: Uint8Array[] = [];
    const earlyDigits: string[] = [];
    let session: SessionHandle | null = null;
    let recorder: CallRecorder | null = null;
    let legEnded: 'hangup' | 'socket-lost' | 'local' | null = null;
    leg.onAudio((a) => {
      if (!session) return void (early.length < 250 && early.push(a));
      recorder?.callerAudio(a, performance.now());
      session.audio(a);
    });
    // A pause's clear and the resumed frames come through this and `onAudioSent` (below,
    // with the recorder: without a listener the leg sends frames without a view of each):
    // the agent track holds what the carrier played, with the pause as silence.
    leg.onCleared((atMs) => recorder?.agentCleared(atMs));
    leg.onDtmf((d) => (session ? session.dtmf(d) : earlyDigits.push(d)));
    leg.onEnd((reason) => {
      legEnded = reason;
      session?.transportEnded(reason);
    });

    const summary: CallSummary = { callSid: leg.callSid, conversationId: null, status: 'rejected', endReason: null, turnMetrics: [], bargeInReactionMs: [], providers: [] };
    const earlier = this.recent.get(leg.callSid);
    this.remember(summary);
    if (!p['agentId'] || !p['tenantId']) {
      log.warn('media stream without agentId/tenantId parameters; hanging up');
      await leg.hangup();
      return;
    }
    const metadata = Object.fromEntries(Object.entries(p).filter(([k]) => !ROUTING_PARAMETERS.has(k)));
    let prepared: ReplyPayload<'callPrepare'>;
    this.preparing.set(leg, { provider: leg.provider, callSid: leg.callSid });
    try {
      prepared = await this.deps.bus.request(
        'callPrepare',
        {
          provider: leg.provider,
          channel: leg.provider === 'webrtc' ? 'webrtc' : 'phone',
          direction: p['direction'] === 'outbound' ? 'outbound' : 'inbound',
          callSid: leg.callSid,
          tenantId: p['tenantId'],
          agentId: p['agentId'],
          from: p['from'] ?? null,
          to: p['to'] ?? null,
          metadata,
          gatewayId: this.deps.gatewayId,
          ...(p['streamToken'] ? { streamToken: p['streamToken'] } : {}),
        },
        { timeoutMs: this.deps.prepareTimeoutMs ?? 5000 },
      );
    } catch (err) {
      log.error({ err, code: err instanceof BusRequestError ? err.code : undefined }, 'no control plane took the call; hanging up');
      await leg.hangup();
      return;
    } finally {
      // An answered call is in `active` before anything awaits (below), so no beat finds it in neither.
      this.preparing.delete(leg);
    }
    if (!prepared.ok) {
      log.warn({ code: prepared.code }, 'control plane refused the call; hanging up');
      await leg.hangup();
      return;
    }
    const { conversationId, agent } = prepared;
    if (this.active.has(conversationId)) {
      // The control plane hands a retry from this gateway the same conversation: a second stream of a call
      // this gateway already carries (a duplicated stream) must not put a second agent on the line.
      log.warn({ conversationId }, 'a second stream for a call this gateway already carries; hanging it up');
      if (earlier) this.remember(earlier);
      await leg.hangup();
      return;
    }
    // From here to `this.active.set` nothing awaits, so no other stream of this call can pass the check meanwhile.
    const tenantId = agent.tenantId;
    summary.conversationId = conversationId;
    summary.status = 'in_progress';
    const bus = this.deps.bus;
    const metrics = this.deps.metrics;
    const callProviders = { stt: agent.config.transcription.provider, llm: agent.config.llm.provider, tts: agent.config.voice.provider };
    const reportError = (error: ProviderError, recoverable: boolean): void => {
      metrics?.providerError(error);
      void bus.publish('sessionError', SUBJECTS.sessionError.subject(tenantId, conversationId), {
        conversationId,
        tenantId,
        agentId: agent.id,
        errorCode: error.code,
        errorMessage: `${error.capability} provider ${error.provider}: ${error.message}`.slice(0, 500),
        recoverable,
        at: new Date().toISOString(),
      });
    };

    let outcome: SessionResult;
    let substituted: string[];
    try {
      // Decided here, wherever the session runs: an agent whose providers cannot be served fails before it starts.
      substituted = resolveCallEndpoints(agent.config, this.deps.endpoints).substituted;
    } catch (err) {
      const error = err instanceof ProviderError ? err : new ProviderError({ provider: 'unknown', capability: 'llm', code: 'provider_unsupported', message: String(err), retryable: false });
      reportError(error, false);
      await leg.hangup();
      await this.sendEnded(leg, agent.id, tenantId, conversationId, null, { status: 'failed', endReason: 'error', error: { code: error.code, message: error.message } }, agent.config);
      summary.status = 'failed';
      summary.endReason = 'error';
      metrics?.callEnded('failed');
      return;
    }
    summary.providers = substituted;
    if (substituted.length > 0) log.info({ substituted }, 'sandbox simulators stand in for providers without adapters');

    // t=0 of the recording is the session's start: the two clocks agree to well under a frame.
    recorder = this.deps.recordings?.recorderFor(agent.config, performance.now()) ?? null;
    if (recorder) leg.onAudioSent(recorder.agentAudioSent.bind(recorder));
    const call = { callSid: leg.callSid, from: p['from'] ?? null, to: p['to'] ?? null, metadata };
    const knowledge = agent.config.knowledgeBaseIds.length > 0 ? this.knowledgeFor(tenantId, agent.id, conversationId, agent.config.knowledgeBaseIds) : undefined;
    const hooks: SessionHooks = {
      logger: log.child({ conversationId }),
      onMessage: (message, turn) => void bus.publish('sessionMessage', SUBJECTS.sessionMessage.subject(tenantId, conversationId), { conversationId, tenantId, message, turn }),
      onError: reportError,
      onTurnMetrics: (m) => {
        summary.turnMetrics.push(m);
        metrics?.turn(m, callProviders);
        log.debug({ metrics: m }, 'turn latency');
      },
      onBargeIn: (ms) => {
        summary.bargeInReactionMs.push(ms);
        metrics?.bargeIn(ms);
      },
      onFalseInterruption: () => metrics?.falseInterruption?.(),
      ...(knowledge ? { retrieve: (query: string) => knowledge.retrieve(query, new AbortController().signal) } : {}),
    };
    const pipelines = this.deps.pipelines;
    const s: SessionHandle = pipelines
      ? pipelines.open(
          {
            agent: agent.config,
            endpoints: this.deps.endpoints,
            ttsFirstByteTimeoutMs: this.deps.ttsFirstByteTimeoutMs,
            call,
            startedAtMs: Date.parse(prepared.startedAt),
            logLevel: log.level,
            knowledge: knowledge ? { timeoutMs: knowledge.timeoutMs!, maxChars: knowledge.maxChars! } : null,
          },
          leg,
          hooks,
        )
      : new VoiceSession({
          agent: agent.config,
          providers: createCallProviders(agent.config, this.deps.endpoints, { ttsFirstByteTimeoutMs: this.deps.ttsFirstByteTimeoutMs }),
          transport: leg,
          call,
          vad: new EnergyVad({ sampleRateHz: 8000 }),
          startedAtMs: Date.parse(prepared.startedAt),
          ...hooks,
          ...(knowledge ? { knowledge } : {}),
        });
    session = s;
    const done = (async () => {
      outcome = await s.ended;
      summary.status = outcome.status;
      summary.endReason = outcome.endReason;
      metrics?.callEnded(outcome.status);
      // SessionEnded means every piece of the call is available: the recording is stored first.
      const recording = recorder ? await this.archive(recorder, { tenantId, agentId: agent.id, conversationId, durationMs: outcome.durationMs, settings: agent.config.recording }, log) : null;
      // The record waits in `endRecords` (and so in the heartbeat) from here until a control plane stored it.
      const delivered = this.sendEnded(leg, agent.id, tenantId, conversationId, outcome, null, agent.config, recording);
      this.active.delete(conversationId);
      log.info({ conversationId, status: outcome.status, endReason: outcome.endReason, durationMs: Math.round(outcome.durationMs) }, 'call ended');
      await delivered;
    })();
    this.active.set(conversationId, { conversationId, session: s, done });
    log.info({ conversationId }, 'call started');
    s.start();
    const replayedAt = performance.now();
    for (const a of early) {
      recorder?.callerAudio(a, replayedAt);
      s.audio(a);
    }
    for (const d of earlyDigits) s.dtmf(d);
    if (legEnded) s.transportEnded(legEnded);
    await done;
  }

  /**
   * Retrieval for an agent with a knowledge base: `knowledge.retrieve` to a control plane, with
   * the session's timeout as the bus timeout. A refusal (`ok: false`) throws, so the session
   * logs it and the turn goes on without knowledge.
   */
  private knowledgeFor(tenantId: string, agentId: string, conversationId: string, documentIds: string[]): KnowledgeOptions {
    const timeoutMs = this.deps.retrievalTimeoutMs ?? DEFAULT_RETRIEVAL_TIMEOUT_MS;
    return {
      timeoutMs,
      maxChars: DEFAULT_KNOWLEDGE_MAX_CHARS,
      retrieve: async (query) => {
        const reply = await this.deps.bus.request(
          'knowledgeRetrieve',
          { tenantId, agentId, conversationId, documentIds, query: query.slice(0, 4000), topK: KNOWLEDGE_TOP_K, maxChars: DEFAULT_KNOWLEDGE_MAX_CHARS },
          { timeoutMs },
        );
        if (!reply.ok) throw new Error(`knowledge.retrieve refused: ${reply.code}: ${reply.message}`);
        return reply.passages;
      },
    };
  }

  /** Builds the call's end record and delivers it (`call.end`, retried until a control plane stored it). */
  private async sendEnded(
    leg: CallLeg,
    agentId: string,
    tenantId: string,
    conversationId: string,
    outcome: SessionResult | null,
    failure: { status: 'failed'; endReason: string; error: { code: string; message: string } } | null,
    config: { llm: { provider: string; model: string }; voice: { provider: string }; transcription: { provider: string; language?: string } },
    recording: CallRecording | null = null,
  ): Promise<void> {
    const r = outcome?.record;
    const durationMs = outcome?.durationMs ?? 0;
    await this.endRecords.deliver({
      conversationId,
      tenantId,
      agentId,
      status: outcome?.status ?? failure!.status,
      endReason: outcome?.endReason ?? failure!.endReason,
      endedAt: new Date().toISOString(),
      durationSeconds: Math.round(durationMs / 1000),
      language: outcome?.language ?? config.transcription.language ?? 'en-US',
      messages: r?.messages ?? [],
      turns: r?.turns ?? [],
      usage: {
        llm: { provider: config.llm.provider, model: config.llm.model, inputTokens: r?.usage.llmInputTokens ?? 0, outputTokens: r?.usage.llmOutputTokens ?? 0 },
        tts: { provider: config.voice.provider, characters: r?.usage.ttsCharacters ?? 0 },
        stt: { provider: config.transcription.provider, audioSeconds: Math.round((r?.usage.sttAudioMs ?? 0) / 10) / 100 },
        telephony: { provider: leg.provider, seconds: Math.round(durationMs / 10) / 100 },
      },
      error: outcome?.error ?? failure?.error ?? null,
      recording,
      turnMetrics: r?.metrics ?? [],
    });
  }

  /**
   * Encodes and stores a finished call's recording. A failure costs the recording, not the
   * call's record: it is logged and reported as a recoverable `recording_failed` error.
   */
  private async archive(
    recorder: CallRecorder,
    call: { tenantId: string; agentId: string; conversationId: string; durationMs: number; settings: AgentConfig['recording'] },
    log: Logger,
  ): Promise<CallRecording | null> {
    const startedAt = performance.now();
    try {
      const recording = await this.deps.recordings!.archive(recorder, call);
      log.info({ conversationId: call.conversationId, key: recording.key, sizeBytes: recording.sizeBytes, tookMs: Math.round(performance.now() - startedAt) }, 'call recording stored');
      return recording;
    } catch (err) {
      log.error({ err, conversationId: call.conversationId }, 'call recording failed');
      await this.deps.bus
        .publish('sessionError', SUBJECTS.sessionError.subject(call.tenantId, call.conversationId), {
          conversationId: call.conversationId,
          tenantId: call.tenantId,
          agentId: call.agentId,
          errorCode: 'recording_failed',
          errorMessage: 'The call recording could not be encoded or stored',
          recoverable: true,
          at: new Date().toISOString(),
        })
        .catch((e: unknown) => log.warn({ err: e }, 'recording error not published'));
      return null;
    }
  }

  /**
   * Ends every call (gateway shutdown) and waits until each end record is stored by a control
   * plane or, after {@link END_RECORD_CLOSE_GRACE_MS}, given up (logged).
   */
  async close(): Promise<void> {
    const records = this.endRecords.close(END_RECORD_CLOSE_GRACE_MS);
    const calls = [...this.active.values()];
    await Promise.all(calls.map((c) => c.session.stop('gateway_shutdown', 'failed')));
    await Promise.all(calls.map((c) => c.done));
    await records;
    clearInterval(this.heartbeat);
  }
}

