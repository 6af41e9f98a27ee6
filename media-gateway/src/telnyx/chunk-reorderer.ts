/**
 * A small jitter buffer for Telnyx caller audio: Telnyx states that media frame order is not
 * guaranteed (reference/telephony-telnyx.md §2.1 "media"), so frames are put back in
 * `chunk` order. In-order frames pass straight through (no added latency); a frame ahead of
 * the next expected chunk is held until the gap fills, or until {@link ChunkReorderer.depth}
 * frames wait, when the gap is given up (the missing frame is lost, as a late RTP packet
 * would be). A frame older than what was already passed on is dropped.
 *
 * A chunk more than {@link ChunkReorderer.window} away from the next expected one, either way,
 * is not reordering but a numbering that started again (a counter that restarts or wraps,
 * which §2.1 does not rule out): the buffer resynchronises on it instead of dropping every
 * later frame as late, or holding the call's audio for a gap that will never fill.
 */
export class ChunkReorderer<T> {
  private expected: number | undefined;
  private readonly held = new Map<number, T>();

  /**
   * @param emit receives frames in chunk order
   * @param depth frames held at most while waiting for a missing one (3 = 60 ms)
   * @param window chunks a frame may be late or early by and still be reordering (50 = 1 s)
   */
  constructor(
    private readonly emit: (frame: T) => void,
    readonly depth = 3,
    readonly window = 50,
  ) {}

  /** Frames dropped as late or duplicate, chunks given up as lost, and restarts of the numbering followed. */
  dropped = 0;
  skipped = 0;
  resyncs = 0;

  /** One frame; `chunk` undefined or not a non-negative integer passes straight through. */
  push(chunk: string | undefined, frame: T): void {
    const n = chunk === undefined ? NaN : Number(chunk);
    if (!Number.isSafeInteger(n) || n < 0) return this.emit(frame);
    if (this.expected === undefined) this.expected = n;
    if (Math.abs(n - this.expected) > this.window) this.resync(n);
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

  /** Pass on what is held, in order (it came before the restart), and expect `n` next. */
  private resync(n: number): void {
    for (const k of [...this.held.keys()].sort((a, b) => a - b)) this.emit(this.held.get(k)!);
    this.held.clear();
    this.expected = n;
    this.resyncs++;
  }

  private drain(): void {
    for (let next = this.held.get(this.expected!); next !== undefined; next = this.held.get(this.expected!)) {
      this.held.delete(this.expected!);
      this.expected! += 1;
      this.emit(next);
    }
  }
}
