import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';

/** Passes every frame on and shows it to an observer (the session's record keeping). */
export class Tap extends Processor {
  constructor(
    readonly name: string,
    private readonly observe: (frame: Frame, dir: Direction) => void,
  ) {
    super();
  }

  process(frame: Frame, dir: Direction): void {
    this.observe(frame, dir);
    this.push(frame, dir);
  }
}
