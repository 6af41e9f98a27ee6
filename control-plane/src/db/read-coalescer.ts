/**
 * Concurrent reads of one key share a round trip, without ever answering with a read that
 * began before the request arrived.
 *
 * At most one read per key is in flight. A request for a key with nothing in flight starts a
 * read; a request that arrives while one is in flight does not join it (that read may have
 * been sent before a write the caller already saw committed) but waits for the *next* read,
 * which starts as soon as the current one settles and serves every request that arrived in
 * the meantime. Every answer therefore comes from a read issued after its request arrived:
 * a read-after-write through any replica sees the write, as with one query per request.
 *
 * Under load on a hot key (a dashboard's agent, the benchmark's GET by id) this turns N
 * concurrent identical queries into about two round trips; an idle key costs nothing extra.
 * Every `read` passed for one key must be the same query; the value is shared by every
 * caller of one read, so it must not be mutated (freeze it).
 */
export class ReadCoalescer<K, V> {
  private readonly keys = new Map<K, { next: { promise: Promise<V>; start: () => void } | null }>();

  /** `read()` for `key`, or the result of the next read of `key` when one is in flight. */
  read(key: K, read: () => Promise<V>): Promise<V> {
    const state = this.keys.get(key);
    if (!state) {
      const entry: { next: { promise: Promise<V>; start: () => void } | null } = { next: null };
      this.keys.set(key, entry);
      return this.run(key, entry, read);
    }
    if (!state.next) {
      let start!: () => void;
      const promise = new Promise<V>((resolve, reject) => {
        start = () => this.run(key, state, read).then(resolve, reject);
      });
      state.next = { promise, start };
    }
    return state.next.promise;
  }

  /** Keys with a read in flight (for tests). */
  get inFlight(): number {
    return this.keys.size;
  }

  private run(key: K, state: { next: { promise: Promise<V>; start: () => void } | null }, read: () => Promise<V>): Promise<V> {
    const settled = () => {
      const next = state.next;
      if (next) {
        state.next = null;
        next.start();
      } else {
        this.keys.delete(key);
      }
    };
    let p: Promise<V>;
    try {
      p = read();
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then(settled, settled);
    return p;
  }
}
