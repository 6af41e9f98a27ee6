/**
 * A single-consumer async queue: the socket callbacks push, one `for await` pulls.
 * Events are kept until read (a slow consumer loses nothing); `end()` lets the reader
 * drain what is queued and then stop; `fail()` does the same and then throws.
 */
export class EventQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private waiter: { resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void } | undefined;
  private done = false;
  private failure: { error: unknown } | undefined;

  /** True once `end()` or `fail()` was called. */
  get settled(): boolean {
    return this.done;
  }

  push(item: T): void {
    if (this.done) return;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve({ value: item, done: false });
    } else {
      this.items.push(item);
    }
  }

  /** Normal end: queued items are still delivered, then iteration stops. Idempotent. */
  end(): void {
    if (this.done) return;
    this.done = true;
    this.wake();
  }

  /** Failure: queued items are delivered, then the iterator throws `error`. First call wins. */
  fail(error: unknown): void {
    if (this.done) return;
    this.done = true;
    this.failure = { error };
    this.wake();
  }

  private wake(): void {
    if (!this.waiter || this.items.length > 0) return;
    const w = this.waiter;
    this.waiter = undefined;
    if (this.failure) w.reject(this.failure.error);
    else w.resolve({ value: undefined, done: true });
  }

  private next(): Promise<IteratorResult<T>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ value: item, done: false });
    if (this.done) return this.failure ? Promise.reject(this.failure.error) : Promise.resolve({ value: undefined, done: true });
    if (this.waiter) return Promise.reject(new Error('EventQueue supports one reader at a time'));
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
    });
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => this.next(),
      // Breaking out of `for await` only stops reading; the owner decides about the stream.
      return: (): Promise<IteratorResult<T>> => Promise.resolve({ value: undefined, done: true }),
    };
  }
}
