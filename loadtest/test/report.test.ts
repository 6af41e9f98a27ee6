import { describe, expect, it } from 'vitest';
import type autocannon from 'autocannon';
import { buildReport, compare, failuresOf, figuresFrom, formatTable, quantile, reportFileName, summariseLatencies } from '../src/report.js';
import type { LoadResult, ScenarioFigures } from '../src/report.js';

function histogram(values: Partial<autocannon.Histogram>): autocannon.Histogram {
  const zero = { total: 0, average: 0, mean: 0, stddev: 0, min: 0, max: 0, p0_001: 0, p0_01: 0, p0_1: 0, p1: 0, p2_5: 0, p10: 0, p25: 0, p50: 0, p75: 0, p90: 0, p97_5: 0, p99: 0, p99_9: 0, p99_99: 0, p99_999: 0 };
  return { ...zero, ...values };
}

function loadResult(o: { rps: number; total: number; p50: number; p99: number; non2xx?: number; errors?: number; timeouts?: number }): LoadResult {
  return {
    requests: { ...histogram({ average: o.rps, mean: o.rps, total: o.total }), sent: o.total },
    latency: histogram({ p50: o.p50, p99: o.p99 }),
    non2xx: o.non2xx ?? 0,
    errors: o.errors ?? 0,
    timeouts: o.timeouts ?? 0,
    duration: 10.01,
  };
}

function figures(target: ScenarioFigures['target'], o: Partial<ScenarioFigures> = {}): ScenarioFigures {
  return { scenario: 'get-by-id', target, requestsPerSec: 1000, latencyP50Ms: 5, latencyP99Ms: 20, non2xx: 0, errors: 0, timeouts: 0, totalRequests: 10_000, durationSec: 10, ...o };
}

describe('quantile', () => {
  const oneToHundred = Float64Array.from({ length: 100 }, (_, i) => i + 1);

  it('takes the nearest rank, so the answer is always an observed value', () => {
    expect(quantile(oneToHundred, 0.5)).toBe(50);
    expect(quantile(oneToHundred, 0.99)).toBe(99);
    expect(quantile(oneToHundred, 0.995)).toBe(100);
    // Rank 50.1 rounds up to the 51st value: nearest rank, no interpolation.
    expect(quantile(oneToHundred, 0.501)).toBe(51);
    expect(quantile([0.2, 0.4, 0.9], 0.5)).toBe(0.4);
  });

  it('clamps to the smallest and largest sample at the ends', () => {
    expect(quantile(oneToHundred, 0)).toBe(1);
    expect(quantile(oneToHundred, 1)).toBe(100);
    expect(quantile([7], 0.99)).toBe(7);
  });

  it('is NaN without samples', () => {
    expect(quantile([], 0.5)).toBeNaN();
  });
});

describe('summariseLatencies', () => {
  it('sorts numerically before taking percentiles and keeps sub-millisecond values', () => {
    // 10 would sort before 9 as text.
    const s = summariseLatencies([10, 0.25, 9, 0.5, 0.75]);
    expect(s).toEqual({ p50Ms: 0.75, p99Ms: 10, samples: 5 });
  });

  it('reports zero samples as NaN percentiles', () => {
    const s = summariseLatencies([]);
    expect(s.samples).toBe(0);
    expect(s.p50Ms).toBeNaN();
  });
});

describe('figuresFrom', () => {
  const result = loadResult({ rps: 1234.5, total: 12_345, p50: 8, p99: 21, non2xx: 3, errors: 2, timeouts: 1 });

  it('prefers the precise latency summary over the whole-millisecond histogram', () => {
    expect(figuresFrom('create', 'platform', result, { p50Ms: 7.84, p99Ms: 20.87, samples: 12_342 })).toEqual({
      scenario: 'create',
      target: 'platform',
      requestsPerSec: 1234.5,
      latencyP50Ms: 7.84,
      latencyP99Ms: 20.87,
      non2xx: 3,
      errors: 2,
      timeouts: 1,
      totalRequests: 12_345,
      durationSec: 10.01,
    });
  });

  it("falls back to autocannon's histogram when no latency was kept", () => {
    const f = figuresFrom('create', 'bare', result, { p50Ms: Number.NaN, p99Ms: Number.NaN, samples: 0 });
    expect([f.latencyP50Ms, f.latencyP99Ms]).toEqual([8, 21]);
    expect(figuresFrom('create', 'bare', result).latencyP99Ms).toBe(21);
  });
});

describe('compare', () => {
  it('divides platform by bare for throughput and p99', () => {
    const c = compare('get-by-id', figures('platform', { requestsPerSec: 1200, latencyP99Ms: 21 }), figures('bare', { requestsPerSec: 48_000, latencyP99Ms: 0.84 }));
    expect(c.ratioRequestsPerSec).toBeCloseTo(0.025, 10);
    expect(c.ratioP99).toBeCloseTo(25, 10);
  });

  it('has no ratio when the baseline is zero', () => {
    const c = compare('get-by-id', figures('platform'), figures('bare', { requestsPerSec: 0, latencyP99Ms: 0 }));
    expect(c.ratioRequestsPerSec).toBeNull();
    expect(c.ratioP99).toBeNull();
  });
});

describe('failuresOf', () => {
  it('is empty for clean runs', () => {
    expect(failuresOf([compare('get-by-id', figures('platform'), figures('bare'))])).toEqual([]);
  });

  it('names each run with non-2xx answers, connection errors or no completed requests', () => {
    const failures = failuresOf([
      compare('create', figures('platform', { scenario: 'create', non2xx: 17 }), figures('bare', { scenario: 'create', errors: 4, timeouts: 3 })),
      compare('get-by-id', figures('platform', { totalRequests: 0 }), figures('bare')),
    ]);
    expect(failures).toEqual(['create: 17 non-2xx responses', 'create (bare): 4 connection errors (3 timeouts)', 'get-by-id: no requests completed']);
  });
});

describe('formatTable', () => {
  it('lays out each scenario above its baseline with aligned columns and ratios on the platform row', () => {
    const table = formatTable([
      compare('get-by-id', figures('platform', { requestsPerSec: 1202.34, latencyP50Ms: 7.8386, latencyP99Ms: 20.8745 }), figures('bare', { requestsPerSec: 49626.67, latencyP50Ms: 0.1508, latencyP99Ms: 0.8389 })),
      compare(
        'create',
        figures('platform', { scenario: 'create', requestsPerSec: 786.67, latencyP50Ms: 11.96, latencyP99Ms: 34.15, non2xx: 2 }),
        figures('bare', { scenario: 'create', requestsPerSec: 0, latencyP50Ms: Number.NaN, latencyP99Ms: Number.NaN }),
      ),
    ]);
    expect(table.split('\n')).toEqual([
      'scenario          req/s  p50 ms  p99 ms  non-2xx  req/s ratio  p99 ratio',
      '----------------  -----  ------  ------  -------  -----------  ---------',
      'get-by-id          1202    7.84   20.87        0        0.024      24.88',
      '  bare get-by-id  49627    0.15    0.84        0',
      'create              787   11.96   34.15        2            -          -',
      '  bare create         0       -       -        0',
    ]);
  });
});

describe('buildReport', () => {
  const settings = { durationSec: 10, warmupSec: 2, connections: 10, database: 'embedded' as const };
  const machine = { cpus: 2, cpuModel: 'Test CPU', node: 'v20.20.2', platform: 'linux', arch: 'x64' };

  it('is ok without failures and carries settings, machine and ratios', () => {
    const c = compare('get-by-id', figures('platform', { requestsPerSec: 500 }), figures('bare', { requestsPerSec: 2000 }));
    const report = buildReport({ startedAt: new Date('2026-01-02T03:04:05.678Z'), settings, machine, comparisons: [c] });
    expect(report).toMatchObject({ kind: 'api-bench', startedAt: '2026-01-02T03:04:05.678Z', settings, machine, failures: [], ok: true });
    expect(report.comparisons[0]!.ratioRequestsPerSec).toBe(0.25);
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  });

  it('is not ok when a platform run answered non-2xx', () => {
    const c = compare('create', figures('platform', { scenario: 'create', non2xx: 1 }), figures('bare', { scenario: 'create' }));
    const report = buildReport({ startedAt: new Date(0), settings, machine, comparisons: [c] });
    expect(report.ok).toBe(false);
    expect(report.failures).toEqual(['create: 1 non-2xx responses']);
  });
});

describe('reportFileName', () => {
  it('is sortable by time and free of colons', () => {
    expect(reportFileName(new Date('2026-01-02T03:04:05.678Z'))).toBe('api-bench-2026-01-02T03-04-05Z.json');
  });
});
