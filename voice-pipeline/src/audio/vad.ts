/**
 * Frame-level energy voice activity detection with an adaptive noise floor. It answers
 * only "is this frame louder than speech should be over the background?"; durations,
 * hangover and barge-in decisions belong to the TurnDetector (STYLE.md §3).
 */
import { levelDbfs, SILENCE_DBFS } from './pcm.js';

/** Options of {@link EnergyVad}. */
export interface EnergyVadOptions {
  /** Rate of the frames given to `process` (informational; the level is rate-independent). */
  sampleRateHz: number;
  /** Absolute level in dBFS a frame must exceed to be speech, whatever the floor. Default -45. */
  minSpeechDb?: number;
  /** How far above the noise floor, in dB, a frame must be to be speech. Default 12. */
  marginDb?: number;
}

/** Verdict on one frame. */
export interface VadDecision {
  isSpeech: boolean;
  /** RMS level of the frame in dBFS (-100 for digital silence). */
  levelDb: number;
}

// Smoothing per frame (time constants at 20 ms frames): the floor follows quieter
// frames within ~100 ms, climbs towards louder non-speech in ~0.4 s, and drifts up under
// speech-level frames over ~2 s, so a steady loud background (fan, street) stops
// counting as speech after a couple of seconds while pauses between words pull it back.
const FALL_RATE = 0.2;
const RISE_RATE_QUIET = 0.05;
const RISE_RATE_LOUD = 0.01;

/**
 * Energy VAD: a frame is speech when its level exceeds
 * `max(minSpeechDb, noiseFloorDb + marginDb)`. The floor starts at
 * `minSpeechDb - marginDb` and adapts on every frame (after the decision). Frames of any
 * length work; 20 ms is the intended size. One instance per audio stream.
 */
export class EnergyVad {
  readonly sampleRateHz: number;
  readonly minSpeechDb: number;
  readonly marginDb: number;
  #floorDb: number;

  constructor(opts: EnergyVadOptions) {
    this.sampleRateHz = opts.sampleRateHz;
    this.minSpeechDb = opts.minSpeechDb ?? -45;
    this.marginDb = opts.marginDb ?? 12;
    this.#floorDb = this.#initialFloor();
  }

  /** Classifies one frame of PCM16 and updates the noise floor. */
  process(frame: Int16Array): VadDecision {
    return this.decide(levelDbfs(frame));
  }

  /**
   * Classifies one frame by its level in dBFS (as {@link process} measures it, or
   * `mulawLevelDbfs` from μ-law codes) and updates the noise floor.
   */
  decide(levelDb: number): VadDecision {
    const isSpeech = levelDb > Math.max(this.minSpeechDb, this.#floorDb + this.marginDb);
    const rate = levelDb < this.#floorDb ? FALL_RATE : isSpeech ? RISE_RATE_LOUD : RISE_RATE_QUIET;
    this.#floorDb = Math.max(SILENCE_DBFS, this.#floorDb + rate * (levelDb - this.#floorDb));
    return { isSpeech, levelDb };
  }

  /** Current estimate of the background level in dBFS. */
  get noiseFloorDb(): number {
    return this.#floorDb;
  }

  /** Forgets the learned floor (new call, or a different audio source). */
  reset(): void {
    this.#floorDb = this.#initialFloor();
  }

  #initialFloor(): number {
    return this.minSpeechDb - this.marginDb;
  }
}
