/**
 * Marks for a carrier whose socket has no mark or clear messages (Vonage, reference
 * telephony-vonage.md §3): the leg models the caller's playout itself. Each frame handed
 * to the carrier plays from max(sent, end of the previous frame) for 20 ms; a mark is
 * played once that model says the last frame before it has ended. Audio already sent is
 * never recalled, so after a pause the pacer's rewind (which assumes the carrier dropped
 * the unplayed frames, as Twilio's `clear` does) would repeat frames the carrier still
 * has: those are recognised and skipped.
 */

const FRAME_MS = 20;
/** Frames remembered for the pause rewind; the pacer rewinds at most its burst (3) from a history of 32. */
const RECENT_FRAMES = 32;

/** The identity of a frame as the pacer hands it out: its re-sent frames are views at the same place. */
interface FrameRef {
  buffer: ArrayBufferLike;
  byteOffset: number;
}

function sameFrame(a: FrameRef, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.byteOffset === b.byteOffset;
}

/** The local playout model of one leg (see the module comment). */
export class LocalMarkPlayout {
  /** When the caller finishes hearing the audio sent so far (performance.now() ms). */
  private playoutEndsAt = Number.NEGATIVE_INFINITY;
  /** Marks whose audio is still playing, in order, with the timer that reports them. */
  private readonly pending: { name: string; timer: NodeJS.Timeout }[] = [];
  private readonly recent: FrameRef[] = [];
  /** After a pause: frames the carrier already has, which the pacer will offer again on resume. */
  private skip: FrameRef[] | null = null;

  /** `played` is called once a mark's audio has played, unless the mark was cancelled first. */
  constructor(private readonly played: (name: string) => void) {}

  /**
   * True when `frame` is one sent before the last pause (the carrier has it already): it
   * must not be sent again. The first frame that is not ends the skipping.
   */
  alreadySent(frame: Uint8Array): boolean {
    if (!this.skip) return false;
    const i = this.skip.findIndex((f) => sameFrame(f, frame));
    if (i >= 0) {
      this.skip.splice(0, i + 1);
      return true;
    }
    this.skip = null;
    return false;
  }

  /** `frame` went to the carrier at `now`. */
  frameSent(frame: Uint8Array, now: number): void {
    this.playoutEndsAt = Math.max(now, this.playoutEndsAt) + FRAME_MS;
    this.recent.push({ buffer: frame.buffer, byteOffset: frame.byteOffset });
    if (this.recent.length > RECENT_FRAMES) this.recent.shift();
  }

  /** Everything before this mark was sent: report it when that audio has played. */
  markSent(name: string): void {
    const delayMs = Math.max(0, this.playoutEndsAt - performance.now());
    const entry = {
      name,
      timer: setTimeout(() => {
        const i = this.pending.indexOf(entry);
        if (i >= 0) this.pending.splice(i, 1);
        this.played(name);
      }, delayMs),
    };
    this.pending.push(entry);
  }

  /** Drop the marks not yet played: they are never reported. */
  cancelMarks(): void {
    for (const m of this.pending.splice(0)) clearTimeout(m.timer);
  }

  /** A pause: the frames sent so far are still at the carrier, so the pacer's rewind of them is skipped on resume. */
  holdSent(): void {
    this.skip = this.recent.slice();
  }

  /** A clear: what the pacer sends next is new audio. */
  forgetSent(): void {
    this.skip = null;
  }
}
