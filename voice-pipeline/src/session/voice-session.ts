import type { AgentConfig } from '@vap/shared';
import type { Logger } from 'pino';
import { mulawDecodeInto } from '../audio/g711.js';
import type { Frame, FrameOf, SayPurpose, TurnMetrics, UserTurn } from '../frames.js';
import { Pipeline } from '../pipeline/pipeline.js';
import type { Direction } from '../pipeline/processor.js';
import { AudioOutput } from '../processors/audio-output.js';
import type { AudioTransport } from '../processors/audio-output.js';
import { Conversation } from '../processors/conversation.js';
import { DtmfCollector } from '../processors/dtmf-collector.js';
import { SentenceAggregator } from '../processors/sentence-aggregator.js';
import { SttProcessor } from '../processors/stt-processor.js';
import { Tap } from '../processors/tap.js';
import { TtsProcessor } from '../processors/tts-processor.js';
import type { FrameVad } from '../processors/turn-detector.js';
import { TurnDetector } from '../processors/turn-detector.js';
import type { ProviderError } from '../providers/provider-error.js';
import type { LlmProvider, SttProvider, TtsProvider } from '../providers/types.js';
import { CallRecord } from './call-record.js';
import type { RecordedMessage, RecordedTurn } from './call-record.js';
import { CallTimers } from './call-timers.js';
import type { KnowledgeOptions } from './knowledge.js';
import { buildSystemPrompt } from './prompt.js';

export interface VoiceSessionOptions {
  agent: AgentConfig;
  providers: { stt: SttProvider; llm: LlmProvider; tts: TtsProvider };
  transport: AudioTransport & { hangup(): Promise<void> };
  call: { callSid: string; from: string | null; to: string | null; metadata: Record<string, string> };
  vad: FrameVad;
  logger: Logger;
  /** A message and its transcript turn were recorded (store them now: a crash loses little). */
  onMessage?: (message: RecordedMessage, turn: RecordedTurn) => void;
  /** A provider failed; `recoverable` false means the call is ending because of it. */
  onError?: (error: ProviderError, recoverable: boolean) => void;
  onTurnMetrics?: (metrics: TurnMetrics) => void;
  /**
   * Retrieval from the agent's knowledge base (agents with `knowledgeBaseIds`): passages for
   * each spoken caller turn go with that turn's LLM request. A failure or timeout is logged
   * as a warning and the turn goes on without knowledge.
   */
  knowledge?: KnowledgeOptions;
  /**
   * Caller speech onset → `clear` sent to the carrier, per barge-in: the pause's clear when
   * the sensitivity pauses first (`medium`, `low`), the interrupt's otherwise (`high`).
   */
  onBargeIn?: (reactionMs: number) => void;
  /** A paused agent resumed: the barge-in was a false interruption (cough, backchannel). */
  onFalseInterruption?: () => void;
  /** Epoch ms of the call's start (defaults to now). */
  startedAtMs?: number;
  now?: () => number;
}

export type SessionStatus = 'completed' | 'failed' | 'abandoned';

export interface SessionOutcome {
  status: SessionStatus;
  /** `user_ended`, `agent_ended`, `max_duration`, `idle_timeout`, `error`, `connection_lost`, `gateway_shutdown`. */
  endReason: string;
  error: { code: string; message: string } | null;
  durationMs: number;
  language: string;
  record: CallRecord;
}

const GOODBYE_MAX_DURATION = 'We have reached the time limit for this call. Thank you for calling, goodbye.';
const GOODBYE_IDLE = 'It seems you have stepped away. Goodbye.';
const APOLOGY = 'I am sorry, I am having technical difficulties. Please call back later. Goodbye.';

/**
 * One phone call's voice loop: caller audio in, agent audio out, through the processors
 * STT → turn detection → conversation (LLM) → sentences → TTS → carrier. It owns the
 * call-level rules of the agent: disclosure and first message, idle prompts, maximum
 * duration, end-call phrases, and ending gracefully on provider failure. Everything said
 * is kept in a {@link CallRecord}.
 */
export class VoiceSession {
  readonly record: CallRecord;
  private readonly pipeline: Pipeline;
  private readonly stt: SttProcessor;
  /** The caller frame's PCM decoding, reused frame after frame (see `audio`). */
  private pcm = new Int16Array(160);
  private readonly conversation: Conversation;
  private readonly tts: TtsProcessor;
  private readonly aggregator = new SentenceAggregator();
  private readonly output: AudioOutput;
  private readonly detector: TurnDetector;
  private readonly timers: CallTimers;
  private readonly origin: number;
  private readonly now: () => number;
  private readonly pendingAgentTurns = new Set<string>();
  private readonly replyFor = new Map<string, UserTurn & { decidedAt: number }>();
  private lastUserTurn: (UserTurn & { decidedAt: number }) | null = null;
  private ending: { status: SessionStatus; reason: string; error: { code: string; message: string } | null } | null = null;
  private hangupAfterTurn: string | null = null;
  private finished = false;
  private hangingUp = false;
  /** A tentative barge-in paused the agent and its reaction was reported. */
  private paused = false;
  private resolveEnded!: (o: SessionOutcome) => void;
  /** Resolves once, when the call is over and the record complete. */
  readonly ended: Promise<SessionOutcome>;

  constructor(private readonly opts: VoiceSessionOptions) {
    this.now = opts.now ?? (() => performance.now());
    this.origin = this.now();
    this.record = new CallRecord(opts.startedAtMs ?? Date.now());
    this.ended = new Promise((r) => (this.resolveEnded = r));
    const clock = () => this.now() - this.origin;
    const a = opts.agent;
    this.stt = new SttProcessor({
      provider: opts.providers.stt,
      clock,
      stream: {
        encoding: 'mulaw',
        sampleRateHz: 8000,
        model: a.transcription.model ?? 'nova-2',
        language: a.transcription.language,
        punctuate: a.transcription.punctuate ?? true,
        smartFormat: a.transcription.smartFormat ?? true,
        profanityFilter: a.transcription.profanityFilter ?? false,
        interimResults: true,
        endpointingMs: a.endpointing.silenceDurationMs,
        utteranceEndMs: Math.max(1000, a.endpointing.utteranceEndMs),
        tags: { call_sid: opts.call.callSid },
      },
    });
    this.conversation = new Conversation({
      llm: opts.providers.llm,
      clock,
      systemPrompt: buildSystemPrompt(a, { callerNumber: opts.call.from, calledNumber: opts.call.to, callSid: opts.call.callSid, metadata: opts.call.metadata, now: new Date() }),
      ...(opts.knowledge ? { knowledge: this.knowledgeOptions(opts.knowledge) } : {}),
      settings: { model: a.llm.model, temperature: a.llm.temperature, maxTokens: a.llm.maxTokens, topP: a.llm.topP, frequencyPenalty: a.llm.frequencyPenalty, presencePenalty: a.llm.presencePenalty },
    });
    this.tts = new TtsProcessor({
      provider: opts.providers.tts,
      clock,
      stream: {
        voiceId: a.voice.voiceId,
        outputFormat: 'ulaw_8000',
        language: a.transcription.language?.slice(0, 2),
        voiceSettings: { stability: a.voice.stability, similarityBoost: a.voice.similarityBoost, style: a.voice.style, useSpeakerBoost: a.voice.useSpeakerBoost, speed: a.voice.speed },
      },
    });
    this.output = new AudioOutput(opts.transport, clock);
    this.detector = new TurnDetector({
      silenceDurationMs: a.endpointing.silenceDurationMs,
      utteranceEndMs: a.endpointing.utteranceEndMs,
      interruptionEnabled: a.interruption.enabled,
      sensitivity: a.interruption.sensitivity,
      finalizeStt: () => this.stt.finalize(),
      utteranceOpen: (open) => this.stt.setUtteranceOpen(open),
      vad: opts.vad,
    });
    this.pipeline = new Pipeline(
      [
        new DtmfCollector({ enabled: a.dtmfEnabled, clock }),
        this.stt,
        this.detector,
        new Tap('caller-tap', (f, d) => this.observeCaller(f, d)),
        this.conversation,
        new Tap('agent-tap', (f, d) => this.observeAgent(f, d)),
        this.aggregator,
        this.tts,
        this.output,
      ],
      { onUp: (f) => this.onUp(f) },
    );
    this.timers = new CallTimers({
      maxDurationMs: a.maxDurationSeconds * 1000,
      idleMs: a.maxIdleTimeSeconds * 1000,
      promptAfterMs: a.silenceDetection.enabled ? a.silenceDetection.timeoutSeconds * 1000 : null,
      onMaxDuration: () => this.endWithGoodbye(GOODBYE_MAX_DURATION, 'max_duration'),
      onIdlePrompt: () => this.say(a.silenceDetection.message ?? 'Are you still there?', 'idle-prompt'),
      onIdleTimeout: () => this.endWithGoodbye(GOODBYE_IDLE, 'idle_timeout'),
    });
  }

  private knowledgeOptions(k: KnowledgeOptions): KnowledgeOptions {
    return {
      ...k,
      onFailure: (err, timedOut) => {
        this.opts.logger.warn({ err, timedOut }, 'knowledge retrieval failed; the turn goes on without knowledge');
        k.onFailure?.(err, timedOut);
      },
    };
  }

  /** Starts the loop: connects STT, speaks the disclosure and first message as configured. */
  start(): void {
    const a = this.opts.agent;
    this.pipeline.send({ kind: 'call.start', at: 0 });
    this.timers.start();
    if (a.aiDisclosureMessage) this.say(a.aiDisclosureMessage, 'disclosure');
    if (a.firstMessageMode === 'assistant_speaks_first' && a.firstMessage) this.say(a.firstMessage, 'first-message');
    if (this.pendingAgentTurns.size === 0) this.timers.callerTurn();
  }

  /** Caller audio from the carrier: μ-law 8 kHz, normally 20 ms. */
  audio(mulaw: Uint8Array): void {
    // One decoding buffer for the call's 20 ms frames (dispatch is synchronous, see `audio.in`):
    // a pipeline thread otherwise allocates one per frame of every call it runs.
    if (this.pcm.length !== mulaw.length) this.pcm = new Int16Array(mulaw.length);
    this.pipeline.send({ kind: 'audio.in', mulaw, pcm: mulawDecodeInto(mulaw, this.pcm), at: this.clock() });
  }

  /**
   * The transport paused the agent on its own (the gateway's loop saw the caller speak over
   * it for `stopAfterVoicedMs`, with the same VAD, before this session's thread got to those
   * frames), `reactionMs` after the caller's speech onset by its own clock. The turn detector
   * takes the pause over: the rule confirms it (`interrupt`) or the agent resumes. The
   * barge-in is reported with the transport's reaction (`onBargeIn`), once: a detector that
   * paused already ignores it. When no agent turn is audible to the detector, the transport
   * is told to play on.
   */
  transportPaused(reactionMs: number): void {
    if (this.finished) return;
    const at = this.clock();
    // Nothing the caller hears is this session's to pause: the transport plays on (after a
    // `clear` already on its way, a no-op).
    if (this.detector.takeTransportPause({ kind: 'agent.pause', at, speechOnsetAt: at - reactionMs }) === 'not-audible') this.opts.transport.resume();
  }

  dtmf(digit: string): void {
    this.timers.callerActive();
    this.pipeline.send({ kind: 'dtmf', digit, at: this.clock() });
    // With DTMF off the key makes no turn (like a cough): the caller's silence counts afresh
    // instead of the idle clock staying stopped for the rest of the call.
    if (!this.opts.agent.dtmfEnabled && this.pendingAgentTurns.size === 0 && !this.ending) this.timers.callerTurn();
  }

  /** The carrier leg ended (caller hung up, socket lost, or our own hang-up completed). */
  transportEnded(reason: 'hangup' | 'socket-lost' | 'local'): void {
    if (!this.ending) {
      if (reason === 'socket-lost') this.ending = { status: 'failed', reason: 'connection_lost', error: { code: 'connection_lost', message: 'The carrier media stream was lost' } };
      else this.ending = { status: this.record.userTurns === 0 ? 'abandoned' : 'completed', reason: 'user_ended', error: null };
    }
    void this.finish();
  }

  /** Ends the call now from our side (gateway shutdown, admin action). */
  async stop(reason: string, status: SessionStatus = 'failed'): Promise<SessionOutcome> {
    this.ending ??= { status, reason, error: status === 'failed' ? { code: reason, message: `The call was ended: ${reason}` } : null };
    await this.hangup();
    return this.ended;
  }

  private clock(): number {
    return this.now() - this.origin;
  }

  private say(text: string, purpose: SayPurpose): void {
    this.pipeline.sendTo(this.conversation, { kind: 'agent.say', text, purpose, at: this.clock() });
  }

  private observeCaller(frame: Frame, dir: Direction): void {
    if (dir !== 'down') return;
    if (frame.kind === 'user.started-speaking') this.timers.callerActive();
    // Speech that made no turn (a cough, a backchannel): the caller's silence counts again.
    if (frame.kind === 'user.stopped-speaking' && this.pendingAgentTurns.size === 0 && !this.ending) this.timers.callerTurn();
    if (frame.kind === 'user.turn') {
      this.lastUserTurn = { ...frame.turn, decidedAt: frame.at };
      const { message, turn } = this.record.addUser(frame.turn);
      this.opts.onMessage?.(message, turn);
    }
  }

  private observeAgent(frame: Frame, dir: Direction): void {
    if (dir !== 'down' || frame.kind !== 'agent.turn-start') return;
    this.pendingAgentTurns.add(frame.turnId);
    this.timers.agentTurn();
    if (frame.source === 'llm' && this.lastUserTurn) {
      this.replyFor.set(frame.turnId, this.lastUserTurn);
      this.lastUserTurn = null;
    }
  }

  private onUp(frame: Frame): void {
    switch (frame.kind) {
      case 'usage':
        this.record.addUsage(frame.usage);
        return;
      case 'agent.audio-started':
        this.turnMetrics(frame.turnId, frame.at);
        return;
      case 'agent.spoken':
        this.onSpoken(frame);
        return;
      case 'agent.pause':
        this.paused = true;
        this.opts.onBargeIn?.(frame.at - frame.speechOnsetAt);
        return;
      case 'agent.resume':
        this.paused = false;
        this.opts.onFalseInterruption?.();
        return;
      case 'interrupt':
        // A barge-in that paused the agent first was measured at the pause.
        if (frame.cause === 'barge-in' && !this.paused) this.opts.onBargeIn?.(frame.at - frame.speechOnsetAt);
        this.paused = false;
        this.pendingAgentTurns.clear();
        return;
      case 'error':
        this.opts.onError?.(frame.error, !frame.fatal);
        if (frame.fatal) this.fail(frame.error);
        else this.opts.logger.warn({ err: frame.error, code: frame.error.code }, 'provider failed, retrying');
        return;
      default:
    }
  }

  private onSpoken(frame: FrameOf<'agent.spoken'>): void {
    this.pendingAgentTurns.delete(frame.turnId);
    const recorded = this.record.addAgent(frame);
    if (recorded) this.opts.onMessage?.(recorded.message, recorded.turn);
    if (this.hangupAfterTurn === frame.turnId || (this.hangupAfterTurn === '*' && this.pendingAgentTurns.size === 0)) {
      void this.hangup();
      return;
    }
    if (!frame.interrupted && frame.purpose === 'reply' && this.saysEndCallPhrase(frame.text)) {
      this.ending ??= { status: 'completed', reason: 'agent_ended', error: null };
      void this.hangup();
      return;
    }
    if (this.pendingAgentTurns.size === 0 && !this.ending) this.timers.callerTurn();
  }

  private saysEndCallPhrase(text: string): boolean {
    const norm = ` ${text.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, ' ').replace(/\s+/g, ' ')} `;
    return this.opts.agent.endCallPhrases.some((p) => {
      const phrase = p.toLowerCase().replace(/[^\p{L}\p{N}' ]+/gu, ' ').replace(/\s+/g, ' ').trim();
      return phrase.length > 0 && norm.includes(` ${phrase} `);
    });
  }

  private endWithGoodbye(text: string, reason: string): void {
    if (this.ending) return;
    this.ending = { status: 'completed', reason, error: null };
    this.sayThenHangUp(text, 'goodbye');
  }

  private fail(error: ProviderError): void {
    if (this.ending) return;
    this.ending = { status: 'failed', reason: 'error', error: { code: error.code, message: error.message } };
    this.opts.logger.error({ err: error, code: error.code, provider: error.provider }, 'provider failed, ending the call');
    if (error.capability === 'tts') void this.hangup();
    else this.sayThenHangUp(APOLOGY, 'apology');
  }

  private sayThenHangUp(text: string, purpose: SayPurpose): void {
    this.timers.stop();
    this.pipeline.send({ kind: 'interrupt', cause: 'ending', at: this.clock(), speechOnsetAt: this.clock() });
    this.pendingAgentTurns.clear();
    this.hangupAfterTurn = '*';
    this.say(text, purpose);
    // If the goodbye cannot be spoken (TTS down), do not hold the line open.
    setTimeout(() => void this.hangup(), 15_000).unref();
  }

  private turnMetrics(turnId: string, audioAt: number): void {
    const user = this.replyFor.get(turnId);
    if (!user) return;
    this.replyFor.delete(turnId);
    const endpointingMs = Math.max(0, user.decidedAt - user.speechEndAt);
    const retrievalMs = this.conversation.retrievalMs.get(turnId) ?? 0;
    const llmFirstTokenMs = this.conversation.llmFirstTokenMs.get(turnId) ?? 0;
    const ttsFirstByteMs = this.tts.firstByteMs.get(turnId) ?? 0;
    const llmFirstPhraseMs = this.aggregator.firstPhraseMs.get(turnId) ?? 0;
    this.aggregator.firstPhraseMs.delete(turnId);
    // Read once per turn: the maps must not grow over a long call.
    this.conversation.llmFirstTokenMs.delete(turnId);
    this.conversation.retrievalMs.delete(turnId);
    this.tts.firstByteMs.delete(turnId);
    const totalMs = Math.max(0, audioAt - user.speechEndAt);
    const m: TurnMetrics = {
      turnId,
      endpointingMs: Math.round(endpointingMs),
      sttMs: Math.round(Math.max(0, user.sttFinalAt - user.speechEndAt)),
      retrievalMs: Math.round(retrievalMs),
      llmFirstTokenMs: Math.round(llmFirstTokenMs),
      llmFirstPhraseMs: Math.round(llmFirstPhraseMs),
      ttsFirstByteMs: Math.round(ttsFirstByteMs),
      totalMs: Math.round(totalMs),
      overheadMs: Math.round(Math.max(0, totalMs - endpointingMs - retrievalMs - llmFirstTokenMs - llmFirstPhraseMs - ttsFirstByteMs)),
    };
    this.record.metrics.push(m);
    this.opts.onTurnMetrics?.(m);
  }

  private async hangup(): Promise<void> {
    // Once per call: the goodbye's safety timer, an end-call phrase and stop() may all ask,
    // also after the call already ended.
    if (this.hangingUp || this.finished) return;
    this.hangingUp = true;
    await this.opts.transport.hangup().catch(() => undefined);
    await this.finish();
  }

  private async finish(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    this.timers.stop();
    const ending = this.ending ?? { status: 'completed' as const, reason: 'user_ended', error: null };
    const durationMs = this.clock();
    this.record.addUsage({ sttAudioMs: this.stt.audioMs });
    // Agent audio still playing when the line closed (the caller hung up mid-sentence, or we
    // hung up on a failure) reports what was heard of it before the pipeline stops.
    this.pipeline.send({ kind: 'call.end', reason: ending.reason, at: durationMs });
    await this.pipeline.close();
    this.resolveEnded({ status: ending.status, endReason: ending.reason, error: ending.error, durationMs, language: this.opts.agent.transcription.language ?? 'en-US', record: this.record });
  }
}
