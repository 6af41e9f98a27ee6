/**
 * A tiny in-memory counter with one tag, until the gateway has a metrics registry (#4).
 * Readers take a {@link TaggedCounter.snapshot}; values only grow.
 */
export class TaggedCounter<Tag extends string = string> {
  private readonly values = new Map<Tag, number>();

  constructor(
    /** Metric name, e.g. `svc.telephony.media_stream_closed`. */
    readonly name: string,
    /** Tag key, e.g. `reason`. */
    readonly tagKey: string,
  ) {}

  increment(tag: Tag, by = 1): void {
    this.values.set(tag, (this.values.get(tag) ?? 0) + by);
  }

  get(tag: Tag): number {
    return this.values.get(tag) ?? 0;
  }

  /** Current values keyed by tag value. */
  snapshot(): Record<string, number> {
    return Object.fromEntries(this.values);
  }
}
