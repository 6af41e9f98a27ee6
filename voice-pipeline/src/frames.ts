import type { ProviderError } from './providers/provider-error.js';
import type { SttWord, TtsAlignment } from './providers/types.js';

/**
 * Frames are plain immutable objects flowing through processors (STYLE.md §3). `at` is
 * milliseconds since the call started (the session clock), so every timing in a call's
 * record and metrics shares one origin.
 *
 * Three classes: **system** frames jump queues and survive interrupts; **data** and
 * **control** frames keep their order and are dropped by an interrupt when they belong to
 * the aborted agent turn (they carry its `turnId`).
 */
export type Frame =
  // ---- system ----
  | { kind: 'call.start'; at: number }
  | { kind: 'call.end'; reason: string; at: number }
  /** The caller started speaking (local VAD, confirmed). */
  | { kind: 'user.started-speaking'; at: number }
  | { kind: 'user.stopped-speaking'; at: number }
  /** Barge-in: abort every agent turn in flight and drop their queued frames and audio. */
  | { kind: 'interrupt'; cause: 'barge-in' | 'superseded' | 'ending'; at: number; speechOnsetAt: number }
  /**
   * Tentative barge-in: the caller spoke over the agent long enough to stop it, not yet long
   * enough to be sure. The agent's audio pauses at once (the carrier's buffer is cleared, the
   * unplayed audio held); an `interrupt` then confirms it, or `agent.resume` plays on. Sent
   * down by the `TurnDetector`; also handed to it by the session when the transport paused
   * the agent itself, first (`VoiceSession.transportPaused`), `at - speechOnsetAt` then being
   * the reaction the transport measured.
   */
  | { kind: 'agent.pause'; at: number; speechOnsetAt: number }
  /** A false interruption (cough, backchannel): the paused agent audio plays on from where it stopped. */
  | { kind: 'agent.resume'; at: number; speechOnsetAt: number }
  | { kind: 'error'; error: ProviderError; fatal: boolean; at: number }
  // ---- data, caller side ----
  /**
   * 20 ms of caller audio: μ-law as received and its PCM16 decoding, both 8 kHz. `pcm` is
   * valid only while the frame is being dispatched (the session decodes every frame into one
   * buffer); a processor that keeps caller audio keeps `mulaw`, or a copy. It travels down
   * only as far as the `TurnDetector`, its last reader (the session's recording is the
   * gateway's, from the carrier leg): processors below it never see caller audio.
   */
  | { kind: 'audio.in'; mulaw: Uint8Array; pcm: Int16Array; at: number }
  | { kind: 'dtmf'; digit: string; at: number }
  /** The STT's words so far since its last final (each interim replaces the one before), on the session clock like a final's. */
  | { kind: 'transcript.interim'; text: string; words: SttWord[]; confidence: number; at: number }
  | { kind: 'transcript.final'; text: string; words: SttWord[]; confidence: number; startMs: number; endMs: number; speechFinal: boolean; at: number }
  | { kind: 'stt.speech-started'; at: number }
  | { kind: 'stt.utterance-end'; at: number }
  /** The caller finished a turn: what they said (or pressed) goes to the LLM. */
  | { kind: 'user.turn'; turn: UserTurn; at: number }
  // ---- data, agent side ----
  /** Speak fixed text (first message, disclosure, prompts, goodbyes), not from the LLM. */
  | { kind: 'agent.say'; text: string; purpose: SayPurpose; at: number }
  | { kind: 'llm.text'; turnId: string; text: string; at: number }
  | { kind: 'tts.sentence'; turnId: string; text: string; at: number }
  | { kind: 'tts.audio'; turnId: string; mulaw: Uint8Array; alignment: TtsAlignment | null; at: number }
  // ---- control ----
  /** An agent turn began (LLM reply or a fixed `agent.say`). */
  | { kind: 'agent.turn-start'; turnId: string; source: 'llm' | 'system'; purpose: SayPurpose | 'reply'; at: number }
  /** No more text for this turn (LLM finished). */
  | { kind: 'llm.done'; turnId: string; at: number }
  /** No more audio for this turn (TTS finished). */
  | { kind: 'tts.done'; turnId: string; at: number }
  // ---- up: results and measurements back to the session ----
  /** What the caller actually heard of an agent turn; `interrupted` when cut by barge-in. */
  | { kind: 'agent.spoken'; turnId: string; text: string; heardText: string; interrupted: boolean; playedMs: number; startedAt: number; words: SpokenWord[]; purpose: SayPurpose | 'reply'; at: number }
  | { kind: 'agent.audio-started'; turnId: string; at: number }
  | { kind: 'usage'; usage: UsageDelta; at: number }
  | { kind: 'turn.metrics'; metrics: TurnMetrics; at: number };

export type FrameKind = Frame['kind'];
export type FrameOf<K extends FrameKind> = Extract<Frame, { kind: K }>;

export const SYSTEM_FRAMES: ReadonlySet<FrameKind> = new Set(['call.start', 'call.end', 'user.started-speaking', 'user.stopped-speaking', 'interrupt', 'agent.pause', 'agent.resume', 'error']);

export type SayPurpose = 'disclosure' | 'first-message' | 'idle-prompt' | 'goodbye' | 'apology';

export interface UserTurn {
  text: string;
  source: 'speech' | 'dtmf';
  /** Word timings in ms since the call started. */
  words: SttWord[];
  confidence: number;
  startAt: number;
  endAt: number;
  /** Local VAD's last voiced frame (end of speech), for latency accounting. */
  speechEndAt: number;
  /** When the STT's final transcript for the turn arrived. */
  sttFinalAt: number;
}

export interface SpokenWord {
  word: string;
  /** ms since call start when the word began playing. */
  startAt: number;
  endAt: number;
}

export interface UsageDelta {
  llmInputTokens?: number;
  llmOutputTokens?: number;
  ttsCharacters?: number;
  sttAudioMs?: number;
}

/** Where the time between the end of the caller's speech and the agent's first audio went. */
export interface TurnMetrics {
  turnId: string;
  /** Local end of speech → turn decision. */
  endpointingMs: number;
  /** End of speech → STT final transcript. */
  sttMs: number;
  /** Caller turn decided → knowledge-base passages in hand (0 for agents without a knowledge base). */
  retrievalMs: number;
  /** LLM request → first token. */
  llmFirstTokenMs: number;
  /**
   * First token → the first phrase complete and handed to TTS: the LLM's text pace over the
   * words of the reply's first piece (the sentence aggregator's rule decides how many).
   */
  llmFirstPhraseMs: number;
  /** First sentence to TTS → first audio byte. */
  ttsFirstByteMs: number;
  /** End of speech → first agent audio handed to the carrier. */
  totalMs: number;
  /** The rest: queues, pacing, transport, our code. */
  overheadMs: number;
}
