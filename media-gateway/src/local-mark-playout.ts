/**
 * Marks for a carrier whose socket has no mark or clear messages (Vonage, reference
 * telephony-vonage.md §3): the leg models the caller's playout itself. Each frame handed
 * to the carrier plays from max(sent, end of the previous frame) for 20 ms; a mark is
 * played once that model says the last frame before it has ended. Audio already sent is
 * never recalled: a pause only stops sending (`PacedStream.hold`), so every frame is sent
 * once and the marks already sent play out with their audio.
 */

const FRAME_MS = 20;

/** The local playout model of one leg (see the module comment). */
export class LocalMarkPlayout {
  /** When the caller finishes hearing the audio sent so far (performance.now() ms). */
  private playoutEndsAt = Number.NEGATIVE_INFINITY;
  /** Marks whose audio is still playing, in order, with the timer that reports them. */
  private readonly pending: { name: string; timer: NodeJS.Timeout }[] = [];

  /** `played` is called once a mark's audio has played, unless the mark was cancelled first. */
  constructor(private readonly played: (name: string) => void) {}

  /** A frame went to the carrier at `now`. */
  frameSent(now: number): void {
    this.playoutEndsAt = Math.max(now, this.playoutEndsAt) + FRAME_MS;
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
}
