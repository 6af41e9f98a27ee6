import { describe, expect, it } from 'vitest';
import { distributionOf, histogramOf, measuredOf } from '../src/calls/stats.js';

describe('call bench stats', () => {
  it('gives nearest-rank percentiles, max and mean of unsorted samples', () => {
    // 1..20 shuffled: p50 = rank 10 → 10, p95 = rank 19 → 19, p99 = rank 20 → 20; mean 10.5.
    const samples = [7, 3, 20, 1, 15, 9, 12, 2, 18, 5, 11, 4, 16, 6, 13, 8, 19, 10, 14, 17];
    expect(distributionOf(samples)).toEqual({ count: 20, p50: 10, p95: 19, p99: 20, max: 20, mean: 10.5 });
  });

  it('has count 0 and null figures for no samples', () => {
    expect(distributionOf([])).toEqual({ count: 0, p50: null, p95: null, p99: null, max: null, mean: null });
  });

  it('counts samples into buckets with an open-ended last bucket, bounds inclusive', () => {
    // <=10: 5, 10 | <=20: 10.5, 20 | <=50: 21 | >50: 51, 400
    expect(histogramOf([5, 10, 10.5, 20, 21, 51, 400], [10, 20, 50])).toEqual({ upperBounds: [10, 20, 50], counts: [2, 2, 1, 2] });
  });

  it('puts the distribution and the histogram together', () => {
    const m = measuredOf([100, 200], [150]);
    expect(m.count).toBe(2);
    expect(m.p50).toBe(100);
    expect(m.max).toBe(200);
    expect(m.histogram.counts).toEqual([1, 1]);
  });
});
