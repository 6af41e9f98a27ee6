import type { Frame, UserTurn } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';
import type { SttWord } from '../providers/types.js';

/** Per-frame speech classification; the session passes an energy VAD (audio/vad.ts). */
export interface FrameVad {
  process(frame: Int16Array): { isSpeech: boolean };
}

export interface TurnDetectorOptions {
  /** Local silence after speech that ends the caller's turn (agent `endpointing.silenceDurationMs`). */
  silenceDurationMs: number;
  /** Longest wait for the STT's final transcript after speech stops (agent `endpointing.utteranceEndMs`). */
  utteranceEndMs: number;
  interruptionEnabled: boolean;
  sensitivity: 'low' | 'medium' | 'high';
  /** Asks the STT to finalise now (Deepgram `Finalize`) so the final transcript comes sooner. */
  finalizeStt: () => void;
  /**
   * Told when an utterance opens (speech onset) and closes (the turn taken, or the speech
   * dropped): the STT sends the caller's audio in short chunks only in between (`SttProcessor.setUtteranceOpen`).
   */
  utteranceOpen?: (open: boolean) => void;
  vad: FrameVad;
}

/**
 * Barge-in thresholds by sensitivity. `needsWords`: transcribed words that are not
 * backchannels ("mm-hmm", "yeah") the caller must have said; `minVoicedMs`: voiced caller
 * audio before the agent may be interrupted (with `needsWords` > 0, counted over the whole
 * utterance so far, short pauses between words included; with 0, in one continuous run);
 * `forceMs`: one continuous run of speech this long interrupts even without words.
 *
 * - `high`: 120 ms of voice, no words (a cough may interrupt).
 * - `medium` (default): the first meaningful word, once 100 ms of voice were heard. The
 *   words are what protect the agent: a cough (~150 ms, no words) and a backchannel never
 *   qualify. The word cannot come before the STT heard it (~260 ms after onset with the
 *   Deepgram simulator), hence the pause below: the caller hears the agent stop ~100 ms after
 *   onset (media-gateway/test/integration/barge-in-reaction.test.ts).
 * - `low`: two meaningful words and 500 ms of voice.
 *
 * `pauseAfterMs` (rules that wait for words): voice over the agent this long pauses it at
 * once (`agent.pause`: the carrier's buffer is cleared, the unplayed audio held), so the
 * caller hears the agent stop within ~100 ms although the rule is not yet met. The rule then
 * confirms it (`interrupt`), or, when the caller has been quiet for {@link RESUME_AFTER_MS}
 * without meeting it (a cough, "mm-hmm"), the agent resumes where it stopped (`agent.resume`).
 */
export const BARGE_IN_RULES = {
  high: { minVoicedMs: 120, needsWords: 0, forceMs: 120, pauseAfterMs: null },
  medium: { minVoicedMs: 100, needsWords: 1, forceMs: 900, pauseAfterMs: 100 },
  low: { minVoicedMs: 500, needsWords: 2, forceMs: 1500, pauseAfterMs: 100 },
} as const;

/**
 * The voiced run (ms, short gaps as {@link TurnDetector} counts them) after which caller speech
 * over the agent stops it whatever the words: paused at `medium` and `low`, interrupted at
 * `high`. The gateway's event loop watches for it on every caller frame, with the same VAD,
 * and pauses the agent itself (media-gateway `early-barge-in.ts`): the caller then hears the
 * agent stop when this thread is behind too, and the pause comes here as `agent.pause` from
 * above, which the detector takes over (confirmed by the rule, or resumed).
 */
export function stopAfterVoicedMs(sensitivity: keyof typeof BARGE_IN_RULES): number {
  const rule = BARGE_IN_RULES[sensitivity];
  return rule.pauseAfterMs ?? rule.minVoicedMs;
}

/**
 * A paused agent resumes after this much caller silence with no barge-in confirmed (the
 * false-interruption window). Long enough for the STT's first word of real speech to arrive
 * (the Deepgram simulator sends it ~260 ms after onset, so for a short "Stop." ~100 ms after
 * the speech ends; real Deepgram's interim lag is 200-400 ms), short enough that a cough
 * costs the caller half a second of the agent's silence.
 */
export const RESUME_AFTER_MS = 500;

const BACKCHANNELS = new Set(['mm', 'mmhmm', 'mhm', 'hmm', 'uhhuh', 'uh', 'um', 'yeah', 'yes', 'yep', 'ok', 'okay', 'right', 'sure', 'aha', 'ah', 'oh']);

/** Words of a transcript that are not backchannels. */
export function meaningfulWords(text: string): string[] {
  return text
    .toLowerCase()
    .split(/\s+/)
    .map((w) => w.replace(/[^a-z0-9']/g, '').replace(/'/g, ''))
    .filter((w) => w.length > 0 && !BACKCHANNELS.has(w.replace(/-/g, '')));
}

/** Speech onset needs this much voiced audio in a row, so clicks do not count. */
const ONSET_MS = 60;
/** A gap shorter than this inside speech is part of the same utterance. */
const FRAME_MS = 20;
/**
 * A late final whose first word starts this long after the end of the speech already
 * answered is new speech (the local VAD missed its onset), not that speech's tail.
 */
export const NEW_SPEECH_AFTER_MS = 100;

type State = 'idle' | 'speaking' | 'trailing';

type InterimFrame = Extract<Frame, { kind: 'transcript.interim' }>;
type FinalFrame = Extract<Frame, { kind: 'transcript.final' }>;

/**
 * Decides when the caller speaks, when they have finished, and when they barge in. It
 * combines the local VAD (fast, on every 20 ms frame) with the STT's signals (final
 * transcripts, `speech_final`, utterance end). Endpointing and barge-in thresholds live
 * only here (STYLE.md §3).
 *
 * - Turn end: the caller was heard saying something (a non-empty final transcript) and
 *   then either `silenceDurationMs` of local silence passed, or the STT's endpointer
 *   fired while the line is quiet. Past `silenceDurationMs` without a final it asks the
 *   STT to finalise, and stops waiting `utteranceEndMs` later: the turn is then what the
 *   STT sent so far, its interim words included, since answering them beats leaving the
 *   caller in silence. Only when the STT sent nothing at all is the speech dropped.
 * - Late transcripts (the caller is quiet, no utterance open): a final for speech already
 *   answered is dropped, never carried into the next turn, unless its words start
 *   {@link NEW_SPEECH_AFTER_MS} after that speech (new speech the local VAD missed); a final
 *   for speech that was dropped for want of any transcript becomes the turn when it
 *   arrives. Neither is answered while the agent is speaking. The STT's stale interim and
 *   endpointer signals are cleared at the next onset. The wait is counted on the session
 *   clock, which includes our own lag: under overload a final may come after the deadline,
 *   and the caller must still be answered.
 * - Barge-in: while the agent is audible, caller speech that passes {@link BARGE_IN_RULES}
 *   emits `interrupt` (down). At `medium` and `low`, `agent.pause` comes first (after
 *   `pauseAfterMs` of voice), and `agent.resume` follows instead of `interrupt` when the
 *   caller falls quiet for {@link RESUME_AFTER_MS} without meeting the rule. Backchannels
 *   alone never start a turn while the agent talks. An `agent.pause` from above (the
 *   transport paused first, {@link stopAfterVoicedMs}) is taken over as its own.
 */
export class TurnDetector extends Processor {
  readonly name = 'TurnDetector';
  private state: State = 'idle';
  private voicedRunMs = 0;
  /** Voiced audio since the caller's speech onset (idle → speaking), across short pauses. */
  private utteranceVoicedMs = 0;
  private silenceRunMs = 0;
  private speechOnsetAt = 0;
  private lastVoicedAt = 0;
  private finalizeRequested = false;
  /** Final transcript pieces of the current caller turn. */
  private finals: { text: string; words: SttWord[]; confidence: number; at: number }[] = [];
  /** The STT's latest interim (words not final yet), null when none or cleared. */
  private interim: InterimFrame | null = null;
  private sttSpeechFinal = false;
  /**
   * Agent turns whose audio has reached the carrier and not finished playing. A set, not a
   * flag: turns queue back to back (disclosure, then first message), and the first one's
   * `agent.spoken` arrives while the next is already playing.
   */
  private readonly audibleTurns = new Set<string>();
  /** Caller speech began while the agent was audible and has not (yet) earned an interrupt. */
  private overlapping = false;
  /** The agent is paused by a tentative barge-in (`agent.pause` sent, neither confirmed nor resumed). */
  private paused = false;
  /**
   * What a final transcript arriving while no utterance is open means: `answer`, the words
   * of speech that was dropped for want of a transcript (or that the local VAD missed);
   * `drop`, the tail of speech already answered or ruled out (a backchannel over the agent),
   * unless its words start after that speech ({@link lateFinalAfter}).
   */
  private lateFinal: 'answer' | 'drop' = 'answer';
  /** Where the speech that set {@link lateFinal} ended (session clock): words that start well after it are new speech. */
  private lateFinalAfter = 0;

  constructor(private readonly opts: TurnDetectorOptions) {
    super();
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up') {
      if (frame.kind === 'agent.audio-started') this.audibleTurns.add(frame.turnId);
      if (frame.kind === 'agent.spoken') this.audibleTurns.delete(frame.turnId);
      this.push(frame, 'up');
      return;
    }
    switch (frame.kind) {
      case 'audio.in':
        // Caller audio ends here: the STT above has streamed it, and below this point the
        // voice path works on words and turns. Passing each 20 ms frame through the taps,
        // the conversation, the aggregator, the TTS and the output, none of which reads it,
        // was about a fifth of a pipeline thread's per-frame work (perf, 200 calls, #5).
        this.onAudio(frame.pcm, frame.at);
        return;
      case 'transcript.interim':
        this.interim = frame.text ? frame : null;
        this.push(frame);
        this.maybeBargeIn(frame.at);
        return;
      case 'transcript.final':
        this.push(frame);
        if (this.state === 'idle') {
          this.onLateFinal(frame);
          return;
        }
        if (frame.text.trim()) {
          this.addFinal(frame);
          this.interim = null;
          this.maybeBargeIn(frame.at);
        }
        if (frame.speechFinal) this.sttSpeechFinal = true;
        this.maybeEndTurn(frame.at);
        return;
      case 'stt.utterance-end':
        this.push(frame);
        // After the turn ended (Deepgram sends it after the final): it must not end the next one early.
        if (this.state === 'idle') return;
        this.sttSpeechFinal = true;
        this.maybeEndTurn(frame.at);
        return;
      case 'interrupt':
        this.audibleTurns.clear();
        this.paused = false;
        this.push(frame);
        return;
      case 'agent.pause':
        // From above, a pause can only be the transport's (the session hands it over with `takeTransportPause`).
        this.takeTransportPause(frame);
        return;
      default:
        this.push(frame);
    }
  }

  private onAudio(pcm: Int16Array, at: number): void {
    const { isSpeech } = this.opts.vad.process(pcm);
    if (isSpeech) {
      this.voicedRunMs += FRAME_MS;
      this.utteranceVoicedMs += FRAME_MS;
      this.silenceRunMs = 0;
      this.lastVoicedAt = at + FRAME_MS;
      if (this.state !== 'speaking' && this.voicedRunMs >= ONSET_MS) {
        if (this.state === 'idle') {
          // What the STT said between utterances belongs to none: this one starts clean.
          this.interim = null;
          this.sttSpeechFinal = false;
          this.finalizeRequested = false;
          this.speechOnsetAt = at + FRAME_MS - this.voicedRunMs;
          this.utteranceVoicedMs = this.voicedRunMs;
          this.overlapping = this.audibleTurns.size > 0;
          this.opts.utteranceOpen?.(true);
        }
        this.state = 'speaking';
        this.push({ kind: 'user.started-speaking', at });
      }
      if (this.state === 'speaking') this.maybeBargeIn(at);
      return;
    }
    this.silenceRunMs += FRAME_MS;
    if (this.silenceRunMs >= 2 * FRAME_MS) this.voicedRunMs = 0;
    if (this.paused && this.state !== 'speaking' && at + FRAME_MS - this.lastVoicedAt >= RESUME_AFTER_MS) {
      // The false-interruption window passed without a confirmed barge-in: play on.
      this.paused = false;
      this.push({ kind: 'agent.resume', at, speechOnsetAt: this.speechOnsetAt });
    }
    if (this.state === 'speaking' && this.silenceRunMs >= 2 * FRAME_MS) {
      this.state = 'trailing';
      this.push({ kind: 'user.stopped-speaking', at });
    }
    if (this.state === 'trailing') this.maybeEndTurn(at);
  }

  /**
   * Called on every voiced frame while speaking and on every transcript: the word that
   * qualifies a barge-in may arrive in a short pause between words (state `trailing`).
   */
  private maybeBargeIn(at: number): void {
    if (this.audibleTurns.size === 0 || !this.opts.interruptionEnabled || this.state === 'idle') return;
    const rule = BARGE_IN_RULES[this.opts.sensitivity];
    const forced = this.state === 'speaking' && this.voicedRunMs >= rule.forceMs;
    let qualifies: boolean;
    if (rule.needsWords === 0) qualifies = this.state === 'speaking' && this.voicedRunMs >= rule.minVoicedMs;
    else {
      const heard = [...this.finals.map((f) => f.text), this.interim?.text ?? ''].join(' ');
      qualifies = this.utteranceVoicedMs >= rule.minVoicedMs && meaningfulWords(heard).length >= rule.needsWords;
    }
    if (qualifies || forced) {
      this.audibleTurns.clear();
      this.overlapping = false;
      this.paused = false;
      this.push({ kind: 'interrupt', cause: 'barge-in', at, speechOnsetAt: this.speechOnsetAt });
      return;
    }
    if (rule.pauseAfterMs !== null && !this.paused && this.state === 'speaking' && this.utteranceVoicedMs >= rule.pauseAfterMs) {
      this.paused = true;
      // Whatever it turns out to be, it is said over the agent: a backchannel makes no turn.
      this.overlapping = true;
      this.push({ kind: 'agent.pause', at, speechOnsetAt: this.speechOnsetAt });
    }
  }

  /**
   * The transport paused the agent itself (`VoiceSession.transportPaused`: the gateway's loop
   * saw {@link stopAfterVoicedMs} of voice over the agent before this thread did). Taken over
   * as if decided here (`taken`: sent on down, so that the rule confirms it or the agent resumes
   * after {@link RESUME_AFTER_MS} of quiet); `paused` when this detector paused already (its own
   * pause is on its way, and its end will be too); `not-audible` when no agent turn is audible
   * here, and the transport must play on: an `interrupt` was decided meanwhile (its `clear` ends
   * the pause anyway), or what the transport still had was a turn that made no audio (an empty
   * reply's end mark).
   */
  takeTransportPause(frame: Extract<Frame, { kind: 'agent.pause' }>): 'taken' | 'paused' | 'not-audible' {
    if (this.paused) return 'paused';
    if (this.audibleTurns.size === 0) return 'not-audible';
    this.paused = true;
    this.overlapping = true;
    this.push(frame);
    return 'taken';
  }

  private maybeEndTurn(at: number): void {
    if (this.state !== 'trailing') return;
    const quietMs = at - this.lastVoicedAt;
    // Past the longest wait, the STT's interim words count as said.
    const gaveUp = quietMs >= this.opts.silenceDurationMs + this.opts.utteranceEndMs;
    const finalText = this.finals.map((f) => f.text).join(' ').trim();
    const interim = gaveUp ? this.interim : null;
    const text = interim ? `${finalText} ${interim.text}`.trim() : finalText;
    if (!text) {
      if (quietMs >= this.opts.silenceDurationMs && !this.finalizeRequested && this.interim !== null) {
        this.finalizeRequested = true;
        this.opts.finalizeStt();
      }
      // Noise, a cough, or speech the STT has not read (yet: its final may still come).
      if (gaveUp) this.reset(this.overlapping ? 'drop' : 'answer');
      return;
    }
    if (this.overlapping && meaningfulWords(text).length === 0) {
      // A backchannel over the agent ("mm-hmm"): acknowledged, not a turn.
      if (quietMs >= this.opts.silenceDurationMs) this.reset('drop');
      return;
    }
    const ready = quietMs >= this.opts.silenceDurationMs || (this.sttSpeechFinal && quietMs >= 2 * FRAME_MS);
    if (!ready) return;
    if (this.interim !== null && !gaveUp) {
      // Words are still only interim: ask for them, and wait a little longer.
      if (!this.finalizeRequested) {
        this.finalizeRequested = true;
        this.opts.finalizeStt();
      }
      return;
    }
    this.endTurn(text, at, interim);
  }

  /** A final transcript while no utterance is open (see {@link lateFinal}). */
  private onLateFinal(frame: FinalFrame): void {
    const text = frame.text.trim();
    if (!text || this.audibleTurns.size > 0) return;
    const firstWordAt = frame.words[0]?.startMs ?? frame.startMs;
    if (this.lateFinal === 'drop' && firstWordAt < this.lateFinalAfter + NEW_SPEECH_AFTER_MS) return;
    this.addFinal(frame);
    this.endTurn(text, frame.at, null);
  }

  private addFinal(frame: FinalFrame): void {
    this.finals.push({ text: frame.text.trim(), words: frame.words, confidence: frame.confidence, at: frame.at });
  }

  /** Ends the turn with the finals so far and, when its text includes them, `interim`'s words. */
  private endTurn(text: string, at: number, interim: InterimFrame | null): void {
    const pieces: { words: SttWord[]; confidence: number }[] = interim ? [...this.finals, interim] : this.finals;
    const words = pieces.flatMap((p) => p.words);
    const turn: UserTurn = {
      text,
      source: 'speech',
      words,
      // The pieces' mean; each is the STT's confidence in its transcript, final or interim.
      confidence: pieces.length === 0 ? 0 : pieces.reduce((s, p) => s + p.confidence, 0) / pieces.length,
      startAt: words[0]?.startMs ?? this.speechOnsetAt,
      endAt: words[words.length - 1]?.endMs ?? this.lastVoicedAt,
      speechEndAt: this.lastVoicedAt,
      sttFinalAt: this.finals.length === 0 ? at : Math.max(...this.finals.map((f) => f.at)),
    };
    this.reset('drop');
    this.push({ kind: 'user.turn', turn, at });
  }

  private reset(lateFinal: 'answer' | 'drop'): void {
    this.state = 'idle';
    this.finals = [];
    this.interim = null;
    this.sttSpeechFinal = false;
    this.finalizeRequested = false;
    this.overlapping = false;
    this.lateFinal = lateFinal;
    this.lateFinalAfter = this.lastVoicedAt;
    this.opts.utteranceOpen?.(false);
  }
}
