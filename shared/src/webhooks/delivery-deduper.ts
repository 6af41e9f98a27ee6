/** Senders retry for about half a minute (SPEC "Events": 6 attempts over 31 s); a day covers manual replays of the same event too. */
const DEFAULT_TTL_MS = 24 * 60 * 60 * 1000;
const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * Remembers webhook delivery ids (`X-Webhook-Delivery-Id`) so a receiver processes each
 * event once although the sender retries. In memory and per process: several replicas of a
 * receiver need a shared store instead.
 *
 * Bounded twice: an id is forgotten `ttlMs` after it was first seen, and past `maxEntries`
 * the oldest ids are evicted early (a repeat of an evicted id is then accepted again, the
 * price of bounded memory). Ids live in a `Map`, whose insertion order is also first-seen
 * order and therefore expiry order, so both kinds of removal take from the front.
 */
export class DeliveryDeduper {
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  /** delivery id → expiry time (ms, on `now`'s clock), in first-seen order. */
  private readonly expiresAt = new Map<string, number>();

  /**
   * @param opts.ttlMs how long an id is remembered after first seen (default 24 h).
   * @param opts.maxEntries most ids kept (default 100 000).
   * @param opts.now clock in ms (default `Date.now`); tests inject one.
   */
  constructor(opts: { ttlMs?: number; maxEntries?: number; now?: () => number } = {}) {
    this.ttlMs = opts.ttlMs ?? DEFAULT_TTL_MS;
    this.maxEntries = opts.maxEntries ?? DEFAULT_MAX_ENTRIES;
    this.now = opts.now ?? Date.now;
    if (!(this.ttlMs > 0)) throw new RangeError(`ttlMs must be positive, got ${this.ttlMs}`);
    if (!Number.isInteger(this.maxEntries) || this.maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${this.maxEntries}`);
    }
  }

  /**
   * True the first time `deliveryId` is seen within the TTL, and records it; false for a
   * repeat. A repeat does not extend the TTL, which keeps the map in expiry order.
   */
  firstTime(deliveryId: string): boolean {
    const now = this.now();
    this.dropExpired(now);
    const expiry = this.expiresAt.get(deliveryId);
    if (expiry !== undefined && expiry > now) return false;
    this.expiresAt.delete(deliveryId);
    this.expiresAt.set(deliveryId, now + this.ttlMs);
    for (const oldest of this.expiresAt.keys()) {
      if (this.expiresAt.size <= this.maxEntries) break;
      this.expiresAt.delete(oldest);
    }
    return true;
  }

  /** Forgets `deliveryId`, so its next delivery is accepted: call it when processing failed and the sender's retry should go through. */
  forget(deliveryId: string): void {
    this.expiresAt.delete(deliveryId);
  }

  /** Number of ids currently remembered (expired ones excluded). */
  get size(): number {
    this.dropExpired(this.now());
    return this.expiresAt.size;
  }

  private dropExpired(now: number): void {
    // Stops at the first live entry: everything behind it was seen later and expires later
    // (unless the clock stepped back, in which case entries merely linger until maxEntries).
    for (const [id, expiry] of this.expiresAt) {
      if (expiry > now) break;
      this.expiresAt.delete(id);
    }
  }
}
