/**
 * The "recogniser" inside the Deepgram simulator: decodes the audio of one connection,
 * runs an energy VAD over 20 ms frames and turns each speech segment into the next line
 * of a script, producing the messages Deepgram would (reference/stt.md §1.3).
 *
 * Time is the AUDIO timeline (samples received / sample rate), never the wall clock, so a
 * test may send audio faster than real time and still get the same timestamps.
 */
import { alawDecode, mulawDecode } from '../../audio/g711.js';
import { pcm16FromBytesLE } from '../../audio/pcm.js';
import { EnergyVad } from '../../audio/vad.js';
import type { DeepgramResults, DeepgramServerMessage, DeepgramWord, ListenSettings } from './wire.js';

/** Tuning of the simulated recogniser; all durations in ms of audio. */
export interface SimTranscriberTuning {
  /** Speech shorter than this is noise (a cough): no transcript, no script line consumed. */
  minSpeechMs: number;
  /** Interim results are sent every this much audio while a segment is in progress. */
  interimIntervalMs: number;
  /** Sustained speech needed before `SpeechStarted` (Deepgram's VAD onset). */
  onsetMs: number;
  /**
   * Pauses shorter than this never end a segment, whatever `endpointing` says: the
   * simulator cannot tell a pause between words from one between utterances.
   */
  minPauseMs: number;
  /** With `endpointing=false`, the silence after which a segment is still made final (without `speech_final`). */
  noEndpointingFinalMs: number;
  /** How fast interims reveal the line's words. */
  msPerWord: number;
}

/** Tuning the simulator uses unless `DeepgramSimulator.start({ tuning })` overrides it. */
export const DEFAULT_TUNING: SimTranscriberTuning = {
  // 200, not 120: the caller cough clip (audio/caller-speech.ts, 150 ms plus its decay)
  // keeps the energy VAD on for 160 ms, while the shortest espeak word measured ~220 ms.
  minSpeechMs: 200,
  interimIntervalMs: 250,
  onsetMs: 60,
  minPauseMs: 150,
  noEndpointingFinalMs: 600,
  msPerWord: 300,
};

const FRAME_MS = 20;

interface Segment {
  startMs: number;
  lastSpeechEndMs: number;
  speechMs: number;
  /** Current run of consecutive speech frames, for the onset rule. */
  runMs: number;
  speechStarted: boolean;
  lastInterimAtMs: number;
  /** The script line, taken once the segment is long enough to be speech. */
  line: string | undefined;
}

/** Output of the recogniser: messages in the order Deepgram would send them. */
export type EmitMessage = (message: DeepgramServerMessage) => void;

/**
 * One connection's recogniser. Feed it audio, `Finalize` and `CloseStream`; it calls
 * `emit` synchronously with Results / SpeechStarted / UtteranceEnd in wire order. Pure
 * computation (no timers, no I/O), so it is unit-tested directly.
 */
export class SimTranscriber {
  private readonly vad: EnergyVad;
  private readonly frameSamples: number;
  private frame: Int16Array;
  private frameFill = 0;
  /** A linear16 byte left over from an odd-sized message. */
  private carry: number | undefined;
  /** Samples of every complete 20 ms frame analysed so far: the VAD's clock. */
  private samples = 0;
  /** Every sample received, including a partial frame. */
  private receivedSamples = 0;
  private segment: Segment | undefined;
  /** End of the audio span the last `Results` covered, ms. */
  private resultEndMs = 0;
  private pendingUtteranceEnd: { lastWordEndMs: number } | undefined;

  constructor(
    private readonly settings: ListenSettings,
    private readonly tuning: SimTranscriberTuning,
    private readonly nextLine: () => string,
    private readonly emit: EmitMessage,
    private readonly resultMetadata: NonNullable<DeepgramResults['metadata']>,
  ) {
    this.vad = new EnergyVad({ sampleRateHz: settings.sample_rate });
    this.frameSamples = Math.round((settings.sample_rate * FRAME_MS) / 1000);
    this.frame = new Int16Array(this.frameSamples);
  }

  /** Milliseconds of audio analysed so far (whole 20 ms frames). */
  get audioMs(): number {
    return (this.samples / this.settings.sample_rate) * 1000;
  }

  /** Milliseconds of audio received so far (one channel), partial frame included. */
  get receivedMs(): number {
    return (this.receivedSamples / this.settings.sample_rate) * 1000;
  }

  /** Feeds raw audio in the connection's encoding; may emit messages synchronously. */
  audio(bytes: Uint8Array): void {
    const pcm = this.decode(bytes);
    this.receivedSamples += pcm.length;
    let i = 0;
    while (i < pcm.length) {
      const n = Math.min(pcm.length - i, this.frameSamples - this.frameFill);
      this.frame.set(pcm.subarray(i, i + n), this.frameFill);
      this.frameFill += n;
      i += n;
      if (this.frameFill === this.frameSamples) {
        const startMs = this.audioMs;
        this.samples += this.frameSamples;
        this.frameFill = 0;
        this.onFrame(this.frame, startMs);
      }
    }
  }

  /** `Finalize`: the segment in progress (or nothing) becomes a final with `from_finalize`. */
  finalize(): void {
    this.flush({ fromFinalize: true });
  }

  /** `CloseStream`: the segment in progress is flushed as a final. */
  closeStream(): void {
    if (this.segment) this.flush({ fromFinalize: false });
  }

  private decode(bytes: Uint8Array): Int16Array {
    if (this.settings.encoding === 'mulaw') return mulawDecode(bytes);
    if (this.settings.encoding === 'alaw') return alawDecode(bytes);
    let b = bytes;
    if (this.carry !== undefined) {
      b = new Uint8Array(bytes.length + 1);
      b[0] = this.carry;
      b.set(bytes, 1);
      this.carry = undefined;
    }
    if (b.length % 2 === 1) this.carry = b[b.length - 1];
    return pcm16FromBytesLE(b);
  }

  private onFrame(frame: Int16Array, startMs: number): void {
    const endMs = startMs + FRAME_MS;
    const { isSpeech } = this.vad.process(frame);
    let seg = this.segment;
    if (isSpeech) {
      if (!seg) {
        seg = { startMs, lastSpeechEndMs: endMs, speechMs: 0, runMs: 0, speechStarted: false, lastInterimAtMs: startMs, line: undefined };
        this.segment = seg;
      }
      seg.lastSpeechEndMs = endMs;
      seg.speechMs += FRAME_MS;
      seg.runMs += FRAME_MS;
      if (this.settings.vad_events && !seg.speechStarted && seg.runMs >= this.tuning.onsetMs) {
        seg.speechStarted = true;
        this.emit({ type: 'SpeechStarted', channel: [0], timestamp: sec(seg.startMs) });
      }
      if (seg.line === undefined && seg.speechMs >= this.tuning.minSpeechMs) {
        seg.line = this.nextLine();
        // New words arrive, so the gap an UtteranceEnd waits for did not happen.
        this.pendingUtteranceEnd = undefined;
      }
    } else if (seg) {
      seg.runMs = 0;
    }
    if (seg && seg.line !== undefined && this.settings.interim_results && endMs - seg.lastInterimAtMs >= this.tuning.interimIntervalMs) {
      seg.lastInterimAtMs = endMs;
      this.emitInterim(seg, endMs);
    }
    if (seg && !isSpeech) {
      const silenceMs = endMs - seg.lastSpeechEndMs;
      const ep = this.settings.endpointing;
      if (ep === false) {
        if (silenceMs >= this.tuning.noEndpointingFinalMs) this.emitFinal(seg, endMs, { speechFinal: false, fromFinalize: false });
      } else if (silenceMs >= Math.max(ep, this.tuning.minPauseMs)) {
        this.emitFinal(seg, endMs, { speechFinal: true, fromFinalize: false });
      }
    }
    const ue = this.pendingUtteranceEnd;
    if (ue && this.settings.utterance_end_ms !== undefined && !this.segmentHasWords() && endMs - ue.lastWordEndMs >= this.settings.utterance_end_ms) {
      this.pendingUtteranceEnd = undefined;
      this.emit({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: sec(ue.lastWordEndMs) });
    }
  }

  private segmentHasWords(): boolean {
    return this.segment?.line !== undefined;
  }

  private flush(flags: { fromFinalize: boolean }): void {
    const nowMs = this.receivedMs;
    if (this.segment) {
      this.emitFinal(this.segment, nowMs, { speechFinal: false, fromFinalize: flags.fromFinalize });
      return;
    }
    // Nothing in progress: Deepgram still answers a Finalize with an (empty) final.
    this.emit(this.results({ startMs: this.resultEndMs, endMs: nowMs, isFinal: true, speechFinal: false, fromFinalize: flags.fromFinalize, words: [], transcript: '' }));
    this.resultEndMs = nowMs;
  }

  private emitInterim(seg: Segment, nowMs: number): void {
    const tokens = tokenize(seg.line ?? '');
    const revealed = Math.min(tokens.length, Math.max(1, Math.ceil((nowMs - seg.startMs) / this.tuning.msPerWord)));
    const shown = tokens.slice(0, revealed);
    const words = this.timeWords(shown, seg.startMs, Math.max(seg.lastSpeechEndMs, seg.startMs + FRAME_MS));
    this.emit(this.results({ startMs: seg.startMs, endMs: nowMs, isFinal: false, speechFinal: false, fromFinalize: false, words, transcript: this.transcriptOf(shown) }));
  }

  private emitFinal(seg: Segment, nowMs: number, flags: { speechFinal: boolean; fromFinalize: boolean }): void {
    this.segment = undefined;
    const startMs = Math.min(this.resultEndMs, seg.startMs);
    if (seg.line === undefined) {
      // Too short to be speech: a real recogniser hears a cough and returns nothing.
      this.emit(this.results({ startMs, endMs: nowMs, isFinal: true, speechFinal: false, fromFinalize: flags.fromFinalize, words: [], transcript: '' }));
    } else {
      const tokens = tokenize(seg.line);
      const words = this.timeWords(tokens, seg.startMs, seg.lastSpeechEndMs);
      this.emit(this.results({ startMs, endMs: nowMs, isFinal: true, ...flags, words, transcript: this.transcriptOf(tokens) }));
      const last = words[words.length - 1];
      if (last) this.pendingUtteranceEnd = { lastWordEndMs: last.end * 1000 };
    }
    this.resultEndMs = nowMs;
  }

  /** Spreads words evenly over [fromMs, toMs], each taking 85% of its slot. */
  private timeWords(tokens: string[], fromMs: number, toMs: number): DeepgramWord[] {
    const slot = (toMs - fromMs) / Math.max(1, tokens.length);
    return tokens.map((token, i) => {
      const word: DeepgramWord = {
        word: normalizeWord(token),
        start: sec(fromMs + i * slot),
        end: sec(fromMs + i * slot + slot * 0.85),
        confidence: confidenceOf(token, i),
      };
      if (this.formatted()) word.punctuated_word = token;
      return word;
    });
  }

  private formatted(): boolean {
    return this.settings.punctuate === true || this.settings.smart_format === true;
  }

  private transcriptOf(tokens: string[]): string {
    return (this.formatted() ? tokens : tokens.map(normalizeWord)).join(' ');
  }

  private results(r: { startMs: number; endMs: number; isFinal: boolean; speechFinal: boolean; fromFinalize: boolean; words: DeepgramWord[]; transcript: string }): DeepgramResults {
    const confidence = r.words.length === 0 ? 0 : round3(r.words.reduce((s, w) => s + w.confidence, 0) / r.words.length);
    const msg: DeepgramResults = {
      type: 'Results',
      channel_index: [0, 1],
      duration: sec(r.endMs - r.startMs),
      start: sec(r.startMs),
      is_final: r.isFinal,
      speech_final: r.speechFinal,
      channel: { alternatives: [{ transcript: r.transcript, confidence, words: r.words }] },
      metadata: this.resultMetadata,
    };
    if (r.fromFinalize) msg.from_finalize = true;
    return msg;
  }
}

const sec = (ms: number): number => Math.round(ms) / 1000;
const round3 = (x: number): number => Math.round(x * 1000) / 1000;

function tokenize(line: string): string[] {
  return line.split(/\s+/).filter((t) => t.length > 0);
}

/** What Deepgram puts in `word`: lower case, no surrounding punctuation. */
function normalizeWord(token: string): string {
  return token.toLowerCase().replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
}

/** Deterministic 0.90–0.99 from the word and its position. */
function confidenceOf(token: string, index: number): number {
  let h = index * 31;
  for (const ch of token) h = (h * 33 + ch.charCodeAt(0)) % 1009;
  return (90 + (h % 10)) / 100;
}
