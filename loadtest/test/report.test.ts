import { describe, expect, it } from 'vitest';
import type autocannon from 'autocannon';
import { API_TARGETS, buildReport, checkApiTargets, compare, failuresOf, figuresFrom, formatMachineLoad, formatMixTable, formatServerLoop, formatTable, formatTargets, mergeResults, quantile, reportFileName, summariseLatencies } from '../src/report.js';
import type { LatencySummary, LoadResult, OpenLoopSection, ScenarioFigures } from '../src/report.js';

function histogram(values: Partial<autocannon.Histogram>): autocannon.Histogram {
  const zero = { total: 0, average: 0, mean: 0, stddev: 0, min: 0, max: 0, p0_001: 0, p0_01: 0, p0_1: 0, p1: 0, p2_5: 0, p10: 0, p25: 0, p50: 0, p75: 0, p90: 0, p97_5: 0, p99: 0, p99_9: 0, p99_99: 0, p99_999: 0 };
  return { ...zero, ...values };
}

function loadResult(o: { rps: number; total: number; p50: number; p99: number; max?: number; non2xx?: number; errors?: number; timeouts?: number; duration?: number }): LoadResult {
  return {
    requests: { ...histogram({ average: o.rps, mean: o.rps, total: o.total }), sent: o.total },
    latency: histogram({ p50: o.p50, p97_5: o.p99, p99: o.p99, max: o.max ?? o.p99 }),
    non2xx: o.non2xx ?? 0,
    errors: o.errors ?? 0,
    timeouts: o.timeouts ?? 0,
    duration: o.duration ?? 10.01,
  };
}

function latency(p50Ms: number, p95Ms: number, p99Ms: number, maxMs: number, samples = 100): LatencySummary {
  return { p50Ms, p95Ms, p99Ms, maxMs, samples };
}

function figures(target: ScenarioFigures['target'], o: Partial<ScenarioFigures> = {}): ScenarioFigures {
  return { scenario: 'get-by-id', target, requestsPerSec: 1000, latencyP50Ms: 5, latencyP95Ms: 12, latencyP99Ms: 20, latencyMaxMs: 31, non2xx: 0, errors: 0, timeouts: 0, totalRequests: 10_000, durationSec: 10, cpuMsPerRequest: null, machine: null, server: null, ...o };
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
    expect(s).toEqual({ p50Ms: 0.75, p95Ms: 10, p99Ms: 10, maxMs: 10, samples: 5 });
  });

  it('takes p95 and p99 by nearest rank and max as the largest sample', () => {
    const s = summariseLatencies(Array.from({ length: 200 }, (_, i) => 200 - i));
    expect(s).toEqual({ p50Ms: 100, p95Ms: 190, p99Ms: 198, maxMs: 200, samples: 200 });
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
    expect(figuresFrom('create', 'platform', result, latency(7.84, 15.2, 20.87, 40.5, 12_342))).toEqual({
      scenario: 'create',
      target: 'platform',
      requestsPerSec: 1234.5,
      latencyP50Ms: 7.84,
      latencyP95Ms: 15.2,
      latencyP99Ms: 20.87,
      latencyMaxMs: 40.5,
      non2xx: 3,
      errors: 2,
      timeouts: 1,
      totalRequests: 12_345,
      durationSec: 10.01,
      cpuMsPerRequest: null,
      machine: null,
      server: null,
    });
  });

  it("divides the server's CPU over the measured run by its requests, and has none when it was not measured", () => {
    const machine = { busyShare: 0.62, stealShare: 0.01 };
    expect(figuresFrom('create', 'platform', result, undefined, { serverCpuMs: 8641.5, machine })).toMatchObject({ cpuMsPerRequest: expect.closeTo(0.7, 10), machine });
    expect(figuresFrom('create', 'platform', result, undefined, { serverCpuMs: null, machine: null }).cpuMsPerRequest).toBeNull();
    expect(figuresFrom('create', 'platform', loadResult({ rps: 0, total: 0, p50: 0, p99: 0 }), undefined, { serverCpuMs: 120, machine }).cpuMsPerRequest).toBeNull();
  });

  it("falls back to autocannon's histogram when no latency was kept", () => {
    const f = figuresFrom('create', 'bare', result, latency(Number.NaN, Number.NaN, Number.NaN, Number.NaN, 0));
    expect([f.latencyP50Ms, f.latencyP99Ms]).toEqual([8, 21]);
    expect(figuresFrom('create', 'bare', result).latencyP99Ms).toBe(21);
  });
});

describe('compare', () => {
  it('divides platform by bare for throughput and p99', () => {
    const c = compare('get-by-id', figures('platform', { requestsPerSec: 1200, latencyP99Ms: 21 }), figures('bare', { requestsPerSec: 48_000, latencyP99Ms: 0.84 }));
    expect(c.ratioRequestsPerSec).toBeCloseTo(0.025, 10);
    expect(c.ratioP99).toBeCloseTo(25, 10);
    expect(c.ratioCpuPerRequest).toBeNull();
  });

  it('divides platform CPU per request by bare', () => {
    const c = compare('mixed', figures('platform', { cpuMsPerRequest: 0.6 }), figures('bare', { cpuMsPerRequest: 0.15 }));
    expect(c.ratioCpuPerRequest).toBeCloseTo(4, 10);
    expect(compare('mixed', figures('platform', { cpuMsPerRequest: 0.6 }), figures('bare')).ratioCpuPerRequest).toBeNull();
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

describe('mergeResults', () => {
  it('adds counts and per-second averages of phases that ran side by side and keeps the longest duration', () => {
    const m = mergeResults([
      loadResult({ rps: 25, total: 250, p50: 1, p99: 4, max: 9, non2xx: 1, duration: 10.2 }),
      loadResult({ rps: 24.5, total: 245, p50: 2, p99: 3, max: 12, errors: 3, timeouts: 2, duration: 11 }),
    ]);
    expect(m.requests.average).toBe(49.5);
    expect(m.requests.total).toBe(495);
    expect([m.non2xx, m.errors, m.timeouts, m.duration]).toEqual([1, 3, 2, 11]);
    // The whole-millisecond fallback takes the worst phase.
    expect([m.latency.p50, m.latency.p99, m.latency.max]).toEqual([2, 4, 12]);
  });

  it('refuses no results', () => {
    expect(() => mergeResults([])).toThrow();
  });
});

function openLoop(platform: Partial<ScenarioFigures>, achieved: number, requested = 1000): OpenLoopSection {
  const p = figures('platform', { scenario: 'mixed', requestsPerSec: achieved, ...platform });
  const b = figures('bare', { scenario: 'mixed', requestsPerSec: requested, latencyP99Ms: 1.5 });
  return {
    scenario: 'mixed',
    requestedRatePerSec: requested,
    connections: 200,
    phases: 40,
    apiKeys: 4,
    sequence: ['GET /agents/{id}', 'POST /agents'],
    readShare: 0.8,
    comparison: compare('mixed', p, b),
    achievedShare: { platform: achieved / requested, bare: 1 },
    byRequest: {
      platform: [
        { label: 'GET /agents/{id}', kind: 'read', latency: latency(2.5, 6, 9.75, 14) },
        { label: 'POST /agents', kind: 'write', latency: latency(6, 11, 18.25, 30, 20) },
      ],
      bare: [{ label: 'GET /agents/{id}', kind: 'read', latency: latency(0.2, 0.4, 0.9, 2) }],
    },
  };
}

describe('checkApiTargets', () => {
  const getById = (ratio: number) => compare('get-by-id', figures('platform', { requestsPerSec: ratio * 10_000 }), figures('bare', { requestsPerSec: 10_000 }));
  const byName = (targets: ReturnType<typeof checkApiTargets>, part: string) => targets.find((t) => t.name.includes(part))!;

  it('passes GET by id at exactly 0.3x bare and misses just below', () => {
    expect(byName(checkApiTargets([getById(0.3)], null), 'GET agent by id')).toEqual({ name: 'GET agent by id throughput vs bare Fastify', limit: '>= 0.30x', measured: '0.300x', pass: true });
    expect(byName(checkApiTargets([getById(0.299)], null), 'GET agent by id').pass).toBe(false);
  });

  it('passes the open-loop p99 at 25 ms and misses at 25.01 ms', () => {
    expect(byName(checkApiTargets([], openLoop({ latencyP99Ms: API_TARGETS.mixedMaxP99Ms }, 1000)), 'p99')).toEqual({ name: 'open-loop mixed p99 at 1000 req/s', limit: '<= 25 ms', measured: '25.00 ms', pass: true });
    expect(byName(checkApiTargets([], openLoop({ latencyP99Ms: 25.01 }, 1000)), 'p99').pass).toBe(false);
  });

  it('misses the p99 target when nothing answered 2xx rather than passing on NaN', () => {
    const t = byName(checkApiTargets([], openLoop({ latencyP99Ms: Number.NaN }, 0)), 'p99');
    expect(t).toMatchObject({ measured: 'no 2xx answers', pass: false });
  });

  it('misses on a single error or non-2xx answer', () => {
    expect(byName(checkApiTargets([], openLoop({}, 1000)), 'errors').pass).toBe(true);
    expect(byName(checkApiTargets([], openLoop({ non2xx: 1 }, 1000)), 'errors')).toMatchObject({ measured: '0 errors (0 timeouts), 1 non-2xx', pass: false });
    expect(byName(checkApiTargets([], openLoop({ errors: 1, timeouts: 1 }, 1000)), 'errors').pass).toBe(false);
  });

  it('holds the achieved rate within 5 % either way', () => {
    const share = (achieved: number) => byName(checkApiTargets([], openLoop({}, achieved)), 'achieved rate');
    expect(share(950)).toMatchObject({ limit: 'within 5 % of 1000 req/s', measured: '950 req/s (95.0 %)', pass: true });
    expect(share(1050).pass).toBe(true);
    expect(share(949).pass).toBe(false);
    expect(share(1051).pass).toBe(false);
  });

  it('lists every target with pass null and "-" when its scenario did not run', () => {
    const targets = checkApiTargets([], null);
    expect(targets).toHaveLength(4);
    for (const t of targets) expect(t).toMatchObject({ measured: '-', pass: null });
  });
});

describe('formatTable', () => {
  it('lays out each scenario above its baseline with aligned columns and ratios on the platform row', () => {
    const table = formatTable([
      compare(
        'get-by-id',
        figures('platform', { requestsPerSec: 1202.34, latencyP50Ms: 7.8386, latencyP95Ms: 15.5, latencyP99Ms: 20.8745, latencyMaxMs: 44.1, cpuMsPerRequest: 0.8124 }),
        figures('bare', { requestsPerSec: 49626.67, latencyP50Ms: 0.1508, latencyP95Ms: 0.5, latencyP99Ms: 0.8389, latencyMaxMs: 3.2, cpuMsPerRequest: 0.0402 }),
      ),
      compare(
        'create',
        figures('platform', { scenario: 'create', requestsPerSec: 786.67, latencyP50Ms: 11.96, latencyP95Ms: 25, latencyP99Ms: 34.15, latencyMaxMs: 101, non2xx: 2, errors: 3, timeouts: 1 }),
        figures('bare', { scenario: 'create', requestsPerSec: 0, latencyP50Ms: Number.NaN, latencyP95Ms: Number.NaN, latencyP99Ms: Number.NaN, latencyMaxMs: Number.NaN }),
      ),
    ]);
    expect(table.split('\n')).toEqual([
      'scenario          req/s  p50 ms  p95 ms  p99 ms  max ms  non-2xx     errors  CPU µs/req  req/s ratio  p99 ratio  CPU ratio',
      '----------------  -----  ------  ------  ------  ------  -------  ---------  ----------  -----------  ---------  ---------',
      'get-by-id          1202    7.84   15.50   20.87   44.10        0          0         812        0.024      24.88      20.21',
      '  bare get-by-id  49627    0.15    0.50    0.84    3.20        0          0          40',
      'create              787   11.96   25.00   34.15  101.00        2  3 (1 t/o)           -            -          -          -',
      '  bare create         0       -       -       -       -        0          0           -',
    ]);
  });
});

describe('formatMachineLoad', () => {
  it("lists each measured run's busy and steal shares, and warns of the runs whose steal passed 5 %", () => {
    const lines = formatMachineLoad([
      compare('get-by-id', figures('platform', { machine: { busyShare: 0.614, stealShare: 0.012 } }), figures('bare', { machine: { busyShare: 0.7, stealShare: 0.051 } })),
      compare('mixed', figures('platform', { scenario: 'mixed', machine: { busyShare: 0.55, stealShare: 0.1 } }), figures('bare', { scenario: 'mixed', machine: null })),
    ]);
    expect(lines).toEqual([
      'machine CPUs during each measured run, busy / steal %: get-by-id 61 / 1; bare get-by-id 70 / 5; mixed 55 / 10',
      "WARNING steal above 5 % in bare get-by-id, mixed: the hypervisor gave this machine's CPUs to others meanwhile; compare those latencies with care, or run again",
    ]);
  });

  it('says nothing when no run read the machine, and no warning at 5 % or less', () => {
    expect(formatMachineLoad([compare('get-by-id', figures('platform'), figures('bare'))])).toEqual([]);
    expect(formatMachineLoad([compare('get-by-id', figures('platform', { machine: { busyShare: 0.5, stealShare: 0.05 } }), figures('bare'))])).toHaveLength(1);
  });
});

describe('formatServerLoop', () => {
  const server = { loopDelayP50Ms: 0.4, loopDelayP99Ms: 12.34, loopDelayMaxMs: 48.06, loopRanMsPerSec: 512.4, loopWaitedMsPerSec: 287.6, pool: { waitingMax: 7, waitingShare: 0.0425, busyMax: 10, samples: 1000 } };

  it("shows each probed run's loop delay, its thread's time on and waiting for a core, and the pool, with - where a run had no pool or no schedstat", () => {
    const lines = formatServerLoop([
      compare('mixed', figures('platform', { scenario: 'mixed', server }), figures('bare', { scenario: 'mixed', server: { ...server, loopDelayP99Ms: 1.96, loopDelayMaxMs: 4, loopRanMsPerSec: null, loopWaitedMsPerSec: null, pool: null } })),
    ]);
    expect(lines.slice(0, 3)).toEqual(['', 'the serving process during each measured run (its one event loop serves every request; Postgres pool sampled every 10 ms):', '']);
    const table = lines[3]!.split('\n');
    expect(table[0]).toBe('run         loop delay p99 / max ms  loop ran / waited for a core, ms per s  pool: most waiting  pool: samples with a wait  pool: most busy');
    expect(table[2]).toBe('mixed                   12.3 / 48.1                               512 / 288                   7                      4.3 %               10');
    expect(table[3]).toBe('bare mixed                2.0 / 4.0                                       -                   -                          -                -');
    expect(table).toHaveLength(4);
  });

  it('leaves out runs that were not probed, and says nothing when none was (reports from before)', () => {
    expect(formatServerLoop([compare('get-by-id', figures('platform'), figures('bare'))])).toEqual([]);
    const lines = formatServerLoop([compare('get-by-id', figures('platform', { server }), figures('bare'))]);
    expect(lines[3]!.split('\n')).toHaveLength(3);
  });
});

describe('formatMixTable and formatTargets', () => {
  it('shows each request of the mix with its count and percentiles beside the bare p99', () => {
    const lines = formatMixTable(openLoop({}, 1000)).split('\n');
    expect(lines[0]).toBe('request                  2xx  p50 ms  p95 ms  p99 ms  max ms  bare p99 ms');
    expect(lines[2]).toBe('GET /agents/{id} (read)  100    2.50    6.00    9.75   14.00         0.90');
    expect(lines[3]).toBe('POST /agents (write)      20    6.00   11.00   18.25   30.00            -');
  });

  it('marks each target PASS, MISS or - (not measured)', () => {
    const lines = formatTargets([
      { name: 'a', limit: '<= 25 ms', measured: '12.00 ms', pass: true },
      { name: 'b', limit: '0', measured: '3 errors', pass: false },
      { name: 'c', limit: '>= 0.30x', measured: '-', pass: null },
    ]).split('\n');
    expect(lines.slice(2).map((l) => l.trim().split(/\s+/).at(-1))).toEqual(['PASS', 'MISS', '-']);
  });
});

describe('buildReport', () => {
  const settings = { scenario: 'all' as const, durationSec: 10, warmupSec: 2, connections: 10, ratePerSec: 1000, database: 'embedded' as const };
  const machine = { cpus: 2, cpuModel: 'Test CPU', node: 'v20.20.2', platform: 'linux', arch: 'x64' };

  it('is ok without failures and carries settings, machine, ratios, the open loop and the targets', () => {
    const c = compare('get-by-id', figures('platform', { requestsPerSec: 500 }), figures('bare', { requestsPerSec: 2000 }));
    const report = buildReport({ startedAt: new Date('2026-01-02T03:04:05.678Z'), settings, machine, comparisons: [c], openLoop: openLoop({ latencyP99Ms: 12 }, 990) });
    expect(report).toMatchObject({ kind: 'api-bench', startedAt: '2026-01-02T03:04:05.678Z', settings, machine, failures: [], ok: true });
    expect(report.comparisons[0]!.ratioRequestsPerSec).toBe(0.25);
    expect(report.openLoop?.comparison.platform.latencyP99Ms).toBe(12);
    expect(report.targets.map((t) => t.pass)).toEqual([false, true, true, true]);
    expect(JSON.parse(JSON.stringify(report))).toEqual(report);
  });

  it('is not ok when a platform run answered non-2xx, the open loop included', () => {
    const c = compare('create', figures('platform', { scenario: 'create', non2xx: 1 }), figures('bare', { scenario: 'create' }));
    const report = buildReport({ startedAt: new Date(0), settings, machine, comparisons: [c], openLoop: openLoop({ errors: 2, timeouts: 2 }, 1000) });
    expect(report.ok).toBe(false);
    expect(report.failures).toEqual(['create: 1 non-2xx responses', 'mixed: 2 connection errors (2 timeouts)']);
  });

  it('has a null open loop when it did not run', () => {
    expect(buildReport({ startedAt: new Date(0), settings, machine, comparisons: [] }).openLoop).toBeNull();
  });
});

describe('reportFileName', () => {
  it('is sortable by time and free of colons', () => {
    expect(reportFileName(new Date('2026-01-02T03:04:05.678Z'))).toBe('api-bench-2026-01-02T03-04-05Z.json');
  });
});
