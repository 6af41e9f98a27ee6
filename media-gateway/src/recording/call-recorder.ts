/**
 * A call's recording while it happens: two μ-law 8 kHz tracks on one timeline whose t=0 is
 * the start of the voice session, held in memory in 1-second chunks (8 KB a second a
 * track), bounded by the call's maximum duration. No encoding here: the hot path only
 * copies bytes (see {@link EncoderPool} for the rest).
 */
import type { RecordingTracks } from './encode-recording.js';

const SAMPLES_PER_MS = 8;
/** One second of μ-law 8 kHz. */
export const RECORDING_CHUNK_SAMPLES = 8000;
const MULAW_SILENCE = 0xff;
/**
 * Caller audio runs this far behind the wall clock (ms) before the track jumps ahead and
 * leaves silence: Twilio sends a frame every 20 ms, so a larger lag means frames were
 * lost (a gap in the stream), while smaller ones are network jitter that later frames make up.
 */
export const CALLER_GAP_MS = 60;

/** One track: lazily allocated chunks, silence where nothing was written. */
class MulawTrack {
  chunks: (Uint8Array | null)[] = [];

  constructor(private readonly capacitySamples: number) {}

  /** Writes `bytes` at sample `at`; what lies beyond the capacity is dropped. */
  write(at: number, bytes: Uint8Array): void {
    const end = Math.min(at + bytes.length, this.capacitySamples);
    for (let pos = at; pos < end; ) {
      const c = Math.floor(pos / RECORDING_CHUNK_SAMPLES);
      const offset = pos - c * RECORDING_CHUNK_SAMPLES;
      const n = Math.min(end - pos, RECORDING_CHUNK_SAMPLES - offset);
      this.chunk(c).set(bytes.subarray(pos - at, pos - at + n), offset);
      pos += n;
    }
  }

  /** Silence over [from, to). */
  erase(from: number, to: number): void {
    const end = Math.min(to, this.capacitySamples);
    for (let pos = from; pos < end; ) {
      const c = Math.floor(pos / RECORDING_CHUNK_SAMPLES);
      const offset = pos - c * RECORDING_CHUNK_SAMPLES;
      const n = Math.min(end - pos, RECORDING_CHUNK_SAMPLES - offset);
      this.chunks[c]?.fill(MULAW_SILENCE, offset, offset + n);
      pos += n;
    }
  }

  private chunk(c: number): Uint8Array {
    while (this.chunks.length <= c) this.chunks.push(null);
    return (this.chunks[c] ??= new Uint8Array(RECORDING_CHUNK_SAMPLES).fill(MULAW_SILENCE));
  }
}

/** How a {@link CallRecorder} is set up. */
export interface CallRecorderOptions {
  /** `performance.now()` at the call's t=0 (the voice session's start). */
  originMs: number;
  /** Longest recording kept (ms); audio beyond it is dropped. The call's maximum duration plus room for the goodbye. */
  maxDurationMs: number;
}

/**
 * The two tracks of one call.
 * - **Caller** (left): frames are laid end to end as they arrive, so jitter does not
 *   chop the audio; when arrival time runs more than {@link CALLER_GAP_MS} ahead of the
 *   write position (frames lost), the track jumps ahead and the gap stays silent.
 * - **Agent** (right): only what the carrier played. A frame handed to the carrier at
 *   time s plays from max(end of the previous frame, s); a `clear` at time T erases what
 *   was scheduled after T (the carrier dropped it unplayed) and playback resumes from T.
 *   A barge-in is therefore heard as the agent stopping mid-word.
 * Times are `performance.now()` ms. Writes after {@link finish} are ignored.
 */
export class CallRecorder {
  private readonly origin: number;
  private readonly capacitySamples: number;
  private readonly caller: MulawTrack;
  private readonly agent: MulawTrack;
  private callerPos = 0;
  private agentCursor = 0;
  private finished = false;

  constructor(opts: CallRecorderOptions) {
    this.origin = opts.originMs;
    this.capacitySamples = Math.ceil(opts.maxDurationMs * SAMPLES_PER_MS);
    this.caller = new MulawTrack(this.capacitySamples);
    this.agent = new MulawTrack(this.capacitySamples);
  }

  /** Caller audio (μ-law) that arrived at `atMs`. Audio from before t=0 is laid from t=0. */
  callerAudio(mulaw: Uint8Array, atMs: number): void {
    if (this.finished || mulaw.length === 0) return;
    const arrived = this.samplesAt(atMs);
    if (arrived - this.callerPos > CALLER_GAP_MS * SAMPLES_PER_MS) this.callerPos = Math.max(this.callerPos, arrived - mulaw.length);
    this.caller.write(this.callerPos, mulaw);
    this.callerPos += mulaw.length;
  }

  /** A frame of agent audio handed to the carrier at `atMs` (the array may be a view: it is copied). */
  agentAudioSent(mulaw: Uint8Array, atMs: number): void {
    if (this.finished || mulaw.length === 0) return;
    const start = Math.max(this.agentCursor, this.samplesAt(atMs));
    this.agent.write(start, mulaw);
    this.agentCursor = start + mulaw.length;
  }

  /** The carrier was told to `clear` at `atMs`: agent audio scheduled after it never played. */
  agentCleared(atMs: number): void {
    if (this.finished) return;
    const at = this.samplesAt(atMs);
    if (this.agentCursor <= at) return;
    this.agent.erase(at, this.agentCursor);
    this.agentCursor = at;
  }

  /**
   * Ends the recording at `durationMs` after t=0 (the call's duration) and hands over the
   * tracks (the recorder keeps no reference to them, so they can be transferred to a worker).
   */
  finish(durationMs: number): RecordingTracks {
    this.finished = true;
    const lengthSamples = Math.max(0, Math.min(this.capacitySamples, Math.round(durationMs * SAMPLES_PER_MS)));
    const chunkCount = Math.ceil(lengthSamples / RECORDING_CHUNK_SAMPLES);
    const take = (t: MulawTrack): (Uint8Array | null)[] => {
      const chunks = t.chunks.slice(0, chunkCount);
      while (chunks.length < chunkCount) chunks.push(null);
      t.chunks = [];
      return chunks;
    };
    return { lengthSamples, chunkSamples: RECORDING_CHUNK_SAMPLES, caller: take(this.caller), agent: take(this.agent) };
  }

  private samplesAt(atMs: number): number {
    return Math.max(0, Math.round((atMs - this.origin) * SAMPLES_PER_MS));
  }
}
