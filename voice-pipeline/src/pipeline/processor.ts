import type { Frame } from '../frames.js';

/** `down` flows from the caller towards the agent's voice; `up` carries results back. */
export type Direction = 'down' | 'up';

/**
 * A small step of the voice path (STYLE.md §3). It receives frames in `process` and
 * emits through `push`; it never calls another processor, so each can be tested,
 * reordered or replaced alone. Frames it does not handle must be passed on unchanged.
 */
export abstract class Processor {
  /** Set by the pipeline. */
  private downstream: ((frame: Frame) => void) | undefined;
  private upstream: ((frame: Frame) => void) | undefined;

  abstract readonly name: string;

  /** Handles one frame; must not throw (report failures as `error` frames). */
  abstract process(frame: Frame, dir: Direction): void;

  /** Emits a frame to the next processor in that direction. */
  protected push(frame: Frame, dir: Direction = 'down'): void {
    (dir === 'down' ? this.downstream : this.upstream)?.(frame);
  }

  /** @internal Wiring, done once by {@link Pipeline}. */
  link(down: (frame: Frame) => void, up: (frame: Frame) => void): void {
    this.downstream = down;
    this.upstream = up;
  }

  /** Releases sockets and timers. Called once when the call ends. */
  async close(): Promise<void> {}
}
