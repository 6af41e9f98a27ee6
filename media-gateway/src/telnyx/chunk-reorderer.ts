/**
 * A small jitter buffer for Telnyx caller audio: Telnyx states that media frame order is not
 * guaranteed (reference/telephony-telnyx.md §2.1 "media"), so frames are put back in
 * `chunk` order. In-order frames pass straight through (no added latency); a frame ahead of
 * the next expected chunk is held until the gap fills, or until {@link ChunkReorderer.depth}
 * frames wait, when the gap is given up (the missing frame is lost, as a late RTP packet
 * would be). A frame older than what was already passed on is dropped.
 */
export class ChunkReorderer<T> {
  private expected: number | undefined;
  private readonly held = new Map<number, T>();

  /**
   * @param emit receives frames in chunk order
   * @param depth frames held at most while waiting for a missing one (3 = 60 ms)
   */
  constructor(
    private readonly emit: (frame: T) => void,
    readonly depth = 3,
  ) {}

  /** Frames dropped as late or duplicate, and chunks given up as lost. */
  dropped = 0;
  skipped = 0;

  /** One frame; `chunk` undefined or not a positive integer passes straight through. */
  push(chunk: string | undefined, frame: T): void {
    const n = chunk === undefined ? NaN : Number(chunk);
    if (!Number.isSafeInteger(n) || n < 0) return this.emit(frame);
    if (this.expected === undefined) this.expected = n;
    if (n < this.expected || this.held.has(n)) {
      this.dropped++;
      return;
    }
    this.held.set(n, frame);
    this.drain();
    while (this.held.size > this.depth) {
      // Give up on the gap: continue from the oldest frame held.
      this.skipped += Math.min(...this.held.keys()) - this.expected;
      this.expected = Math.min(...this.held.keys());
      this.drain();
    }
  }

  private drain(): void {
    for (let next = this.held.get(this.expected!); next !== undefined; next = this.held.get(this.expected!)) {
      this.held.delete(this.expected!);
      this.expected! += 1;
      this.emit(next);
    }
  }
}
