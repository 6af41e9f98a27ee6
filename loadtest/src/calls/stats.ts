/**
 * Summaries of raw samples for the call benchmark's report: nearest-rank distributions
 * (every percentile is an observed value) and bucket counts for the HTML charts.
 */
import { quantile } from '../report.js';
import type { Distribution, Histogram, Measured } from './call-results.js';

/** Bucket upper bounds (ms) of the histograms the report draws, per kind of figure. */
export const HISTOGRAM_BOUNDS_MS = {
  /** End of caller speech → first agent audio; turn stages. */
  latency: [10, 25, 50, 75, 100, 150, 200, 300, 400, 500, 600, 800, 1000, 1500, 2000, 3000],
  /** Per-stage figures and our overhead, which are mostly small. */
  stage: [1, 2, 5, 10, 20, 30, 50, 75, 100, 150, 200, 300, 500, 1000],
  /** Caller speech onset → `clear`. */
  bargeIn: [50, 75, 100, 125, 150, 175, 200, 250, 300, 400, 500, 750, 1000],
  /** Gaps between outbound frames (20 ms nominal; > 40 late). */
  frameGap: [10, 15, 18, 19, 20, 21, 22, 25, 30, 40, 60, 100, 200],
  /** |gap - 20 ms|. */
  jitter: [0.5, 1, 2, 3, 5, 10, 20, 40, 100],
} as const;

/** p50/p95/p99/max/mean of `samples` (nearest rank); `count: 0` and nulls for no samples. */
export function distributionOf(samples: ArrayLike<number>): Distribution {
  const sorted = Float64Array.from(samples).sort();
  if (sorted.length === 0) return { count: 0, p50: null, p95: null, p99: null, max: null, mean: null };
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    p50: quantile(sorted, 0.5),
    p95: quantile(sorted, 0.95),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1]!,
    mean: sum / sorted.length,
  };
}

/**
 * Counts of `samples` per bucket: `counts[i]` holds the samples <= `upperBounds[i]` and above
 * the previous bound; the last of `upperBounds.length + 1` counts is everything above the
 * last bound. `upperBounds` must be ascending.
 */
export function histogramOf(samples: ArrayLike<number>, upperBounds: readonly number[]): Histogram {
  const counts = new Array<number>(upperBounds.length + 1).fill(0);
  for (let i = 0; i < samples.length; i++) {
    const v = samples[i]!;
    let b = 0;
    while (b < upperBounds.length && v > upperBounds[b]!) b++;
    counts[b]!++;
  }
  return { upperBounds: [...upperBounds], counts };
}

/** {@link distributionOf} with its {@link histogramOf}. */
export function measuredOf(samples: ArrayLike<number>, upperBounds: readonly number[]): Measured {
  return { ...distributionOf(samples), histogram: histogramOf(samples, upperBounds) };
}
