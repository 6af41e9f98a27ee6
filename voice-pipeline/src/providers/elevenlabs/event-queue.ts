/**
 * A single-consumer async queue behind `TtsStream.events`: the socket pushes, the turn
 * iterates. Three ways to stop: `end()` (drain, then done), `fail(err)` (drain, then throw
 * once) and `drop()` (barge-in: discard what is queued and finish at once, silently).
 */
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | null = null;
  private finished = false;
  private failure: unknown = null;
  private readonly onReturn: () => void;

  /** `onReturn` runs when the consumer stops early (`break` out of `for await`). */
  constructor(onReturn: () => void = () => {}) {
    this.onReturn = onReturn;
  }

  get done(): boolean {
    return this.finished;
  }

  push(item: T): void {
    if (this.finished) return;
    if (this.waiter !== null) {
      const w = this.waiter;
      this.waiter = null;
      w.resolve({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  end(): void {
    if (this.finished) return;
    this.finished = true;
    this.settleWaiter();
  }

  fail(error: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = error;
    this.settleWaiter();
  }

  drop(): void {
    this.items.length = 0;
    this.failure = null;
    this.finished = true;
    this.settleWaiter();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        const item = this.items.shift();
        if (item !== undefined) return Promise.resolve({ value: item, done: false });
        if (this.finished) return this.finish();
        return new Promise((resolve, reject) => {
          this.waiter = { resolve, reject };
        });
      },
      return: () => {
        if (!this.finished) this.onReturn();
        this.drop();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private settleWaiter(): void {
    if (this.waiter === null || this.items.length > 0) return;
    const w = this.waiter;
    this.waiter = null;
    this.finish().then(w.resolve, w.reject);
  }

  private finish(): Promise<IteratorResult<T>> {
    if (this.failure !== null) {
      const failure = this.failure;
      this.failure = null;
      return Promise.reject(failure);
    }
    return Promise.resolve({ value: undefined, done: true });
  }
}
