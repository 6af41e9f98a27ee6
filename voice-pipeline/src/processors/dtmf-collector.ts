import type { Frame } from '../frames.js';
import type { Direction } from '../pipeline/processor.js';
import { Processor } from '../pipeline/processor.js';

/**
 * Collects keypad digits into one caller turn: the digits pressed until `#`, or until
 * `interDigitMs` passes without another key. With DTMF disabled digits are dropped.
 */
export class DtmfCollector extends Processor {
  readonly name = 'DtmfCollector';
  private digits = '';
  private firstAt = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly opts: { enabled: boolean; interDigitMs?: number; clock: () => number },
  ) {
    super();
  }

  process(frame: Frame, dir: Direction): void {
    if (dir === 'up' || frame.kind !== 'dtmf') {
      this.push(frame, dir);
      return;
    }
    if (!this.opts.enabled) return;
    clearTimeout(this.timer);
    if (frame.digit === '#') {
      this.flush();
      return;
    }
    if (!this.digits) this.firstAt = frame.at;
    this.digits += frame.digit;
    this.timer = setTimeout(() => this.flush(), this.opts.interDigitMs ?? 1500);
  }

  private flush(): void {
    clearTimeout(this.timer);
    if (!this.digits) return;
    const at = this.opts.clock();
    const text = this.digits;
    this.digits = '';
    this.push({ kind: 'user.turn', turn: { text, source: 'dtmf', words: [], confidence: 1, startAt: this.firstAt, endAt: at, speechEndAt: at, sttFinalAt: at }, at });
  }

  override async close(): Promise<void> {
    clearTimeout(this.timer);
  }
}
