import type { Frame } from '../frames.js';
import type { Direction } from './processor.js';
import type { Processor } from './processor.js';

/**
 * Processors in a row. Frames entering at the top travel `down` through each processor in
 * order; frames a processor pushes `up` travel back towards the top and leave through
 * `onUp`. Frames leaving the bottom go to `onDown`.
 *
 * Dispatch is synchronous: a processor that waits on a provider does so in its own task
 * and pushes frames when results come, so ordering between frames of one source holds
 * and a system frame (interrupt) reaches every processor before anything queued behind it
 * is processed.
 */
export class Pipeline {
  private closed = false;

  constructor(
    private readonly processors: Processor[],
    private readonly sinks: { onDown?: (frame: Frame) => void; onUp?: (frame: Frame) => void } = {},
  ) {
    processors.forEach((p, i) => {
      const down = (frame: Frame) => {
        if (this.closed) return;
        const next = processors[i + 1];
        if (next) next.process(frame, 'down');
        else this.sinks.onDown?.(frame);
      };
      const up = (frame: Frame) => {
        if (this.closed) return;
        const prev = processors[i - 1];
        if (prev) prev.process(frame, 'up');
        else this.sinks.onUp?.(frame);
      };
      p.link(down, up);
    });
  }

  /** Feeds a frame in at the top (down) or the bottom (up). */
  send(frame: Frame, dir: Direction = 'down'): void {
    if (this.closed) return;
    if (dir === 'down') {
      const first = this.processors[0];
      if (first) first.process(frame, 'down');
      else this.sinks.onDown?.(frame);
    } else {
      const last = this.processors[this.processors.length - 1];
      if (last) last.process(frame, 'up');
      else this.sinks.onUp?.(frame);
    }
  }

  /** Feeds a frame into one processor (a controller injecting `agent.say` mid-pipeline). */
  sendTo(processor: Processor, frame: Frame, dir: Direction = 'down'): void {
    if (!this.closed) processor.process(frame, dir);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled(this.processors.map((p) => p.close()));
  }
}
