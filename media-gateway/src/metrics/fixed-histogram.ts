import type { Registry } from 'prom-client';

/**
 * A Prometheus histogram without labels whose `observe` allocates nothing: counts live in
 * a preallocated array and are turned into samples only when scraped. For per-frame
 * observations (outbound pacing, 50 per second per call), where prom-client's `observe`
 * would allocate a label object and a closure each time.
 */
export class FixedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly counts: Float64Array;
  private sum = 0;
  private count = 0;

  constructor(
    /** Legal Prometheus name, e.g. `vap_outbound_frame_gap_seconds`. */
    readonly name: string,
    readonly help: string,
    /** Upper bounds in the metric's unit, ascending; `+Inf` is implied. */
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
    // prom-client only reads `name`, `help`, `type` and `get()` of a registered metric.
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  /** Count one value (same unit as the bounds). */
  observe(value: number): void {
    let i = 0;
    while (i < this.bounds.length && value > this.bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }

  /** @internal Read by the registry on a scrape. */
  get(): { name: string; help: string; type: string; aggregator: string; values: { labels: Record<string, string | number>; value: number; metricName: string }[] } {
    const values = [];
    let cumulative = 0;
    for (let i = 0; i < this.bounds.length; i++) {
      cumulative += this.counts[i]!;
      values.push({ labels: { le: this.bounds[i]! }, value: cumulative, metricName: `${this.name}_bucket` });
    }
    values.push({ labels: { le: '+Inf' }, value: this.count, metricName: `${this.name}_bucket` });
    values.push({ labels: {}, value: this.sum, metricName: `${this.name}_sum` });
    values.push({ labels: {}, value: this.count, metricName: `${this.name}_count` });
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** @internal `Registry.resetMetrics()`. */
  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}
