import type autocannon from 'autocannon';

/** The parts of an autocannon result the report reads. */
export type LoadResult = Pick<autocannon.Result, 'requests' | 'latency' | 'non2xx' | 'errors' | 'timeouts' | 'duration'>;

/** Latency percentiles in milliseconds. */
export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  /** How many latencies they were computed from. */
  samples: number;
}

/** The figures of one measured run against one target. */
export interface ScenarioFigures {
  scenario: string;
  target: 'platform' | 'bare';
  /** Mean of the per-second request counts autocannon sampled. */
  requestsPerSec: number;
  latencyP50Ms: number;
  latencyP99Ms: number;
  /** Responses with a status outside 200-299. */
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  totalRequests: number;
  durationSec: number;
}

/** A platform scenario beside its bare-Fastify baseline. */
export interface Comparison {
  scenario: string;
  platform: ScenarioFigures;
  bare: ScenarioFigures;
  /** platform req/s ÷ bare req/s (the tracked figure; 1 is "as fast as bare Fastify"); null if bare served nothing. */
  ratioRequestsPerSec: number | null;
  /** platform p99 ÷ bare p99; null if the bare p99 is 0. */
  ratioP99: number | null;
}

/** Machine and runtime the figures were taken on. */
export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  node: string;
  platform: string;
  arch: string;
}

/** What `results/*.json` holds. */
export interface BenchReport {
  kind: 'api-bench';
  startedAt: string;
  settings: { durationSec: number; warmupSec: number; connections: number; database: 'external' | 'embedded' };
  machine: MachineInfo;
  comparisons: Comparison[];
  failures: string[];
  ok: boolean;
}

/**
 * The value at quantile `q` (0..1) of ascending `sorted` samples, nearest-rank method
 * (so it is always an observed value). NaN for no samples.
 */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  if (q <= 0) return sorted[0]!;
  const rank = Math.ceil(q * sorted.length);
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

/**
 * p50 and p99 of raw latencies in ms. autocannon's own histogram keeps whole
 * milliseconds, which makes a sub-millisecond bare route read 0 ms and its ratio
 * meaningless, so the load generator keeps every latency and summarises them here.
 */
export function summariseLatencies(latenciesMs: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(latenciesMs).sort();
  return { p50Ms: quantile(sorted, 0.5), p99Ms: quantile(sorted, 0.99), samples: sorted.length };
}

/**
 * The figures of one run. Latencies come from `latency` when given (sub-millisecond,
 * see {@link summariseLatencies}), otherwise from autocannon's whole-millisecond histogram.
 */
export function figuresFrom(scenario: string, target: ScenarioFigures['target'], result: LoadResult, latency?: LatencySummary): ScenarioFigures {
  const precise = latency && latency.samples > 0 ? latency : undefined;
  return {
    scenario,
    target,
    requestsPerSec: result.requests.average,
    latencyP50Ms: precise ? precise.p50Ms : result.latency.p50,
    latencyP99Ms: precise ? precise.p99Ms : result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    totalRequests: result.requests.total,
    durationSec: result.duration,
  };
}

function ratio(numerator: number, denominator: number): number | null {
  return denominator > 0 && Number.isFinite(numerator) ? numerator / denominator : null;
}

/** Puts a platform run beside its bare run and computes the ratios. */
export function compare(scenario: string, platform: ScenarioFigures, bare: ScenarioFigures): Comparison {
  return {
    scenario,
    platform,
    bare,
    ratioRequestsPerSec: ratio(platform.requestsPerSec, bare.requestsPerSec),
    ratioP99: ratio(platform.latencyP99Ms, bare.latencyP99Ms),
  };
}

/**
 * Why the run must not count: a platform or bare run that answered non-2xx, hit
 * connection errors or served nothing. Empty when the figures are trustworthy.
 */
export function failuresOf(comparisons: Comparison[]): string[] {
  const out: string[] = [];
  for (const c of comparisons) {
    for (const f of [c.platform, c.bare]) {
      const label = f.target === 'platform' ? f.scenario : `${f.scenario} (bare)`;
      if (f.non2xx > 0) out.push(`${label}: ${f.non2xx} non-2xx responses`);
      if (f.errors > 0) out.push(`${label}: ${f.errors} connection errors (${f.timeouts} timeouts)`);
      if (f.totalRequests === 0) out.push(`${label}: no requests completed`);
    }
  }
  return out;
}

/** `n` with `digits` decimals; `-` for null, NaN or infinity. */
export function fixed(n: number | null, digits: number): string {
  return n === null || !Number.isFinite(n) ? '-' : n.toFixed(digits);
}

const HEADERS = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'req/s ratio', 'p99 ratio'] as const;

/** Rows of the table: each platform scenario with its ratios, then its bare baseline. */
export function tableRows(comparisons: Comparison[]): string[][] {
  const row = (name: string, f: ScenarioFigures, ratios: [string, string]) => [
    name,
    fixed(f.requestsPerSec, 0),
    fixed(f.latencyP50Ms, 2),
    fixed(f.latencyP99Ms, 2),
    String(f.non2xx),
    ...ratios,
  ];
  return comparisons.flatMap((c) => [
    row(c.scenario, c.platform, [fixed(c.ratioRequestsPerSec, 3), fixed(c.ratioP99, 2)]),
    row(`  bare ${c.bare.scenario}`, c.bare, ['', '']),
  ]);
}

/** A plain-text table under `headers`: first column left-aligned, the others right-aligned. */
export function textTable(headers: readonly string[], body: string[][]): string {
  const rows = [[...headers], ...body];
  const widths = headers.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(rows[0]!), rule, ...rows.slice(1).map(line)].join('\n');
}

/** The API benchmark's table: each scenario with its ratios, then its bare baseline. */
export function formatTable(comparisons: Comparison[]): string {
  return textTable(HEADERS, tableRows(comparisons));
}

/** The JSON document written under `results/`. */
export function buildReport(input: { startedAt: Date; settings: BenchReport['settings']; machine: MachineInfo; comparisons: Comparison[] }): BenchReport {
  const failures = failuresOf(input.comparisons);
  return {
    kind: 'api-bench',
    startedAt: input.startedAt.toISOString(),
    settings: input.settings,
    machine: input.machine,
    comparisons: input.comparisons,
    failures,
    ok: failures.length === 0,
  };
}

/** `<kind>-2026-01-02T03-04-05Z.json` (kind `api-bench` by default): sortable and safe on every file system. */
export function reportFileName(startedAt: Date, kind = 'api-bench'): string {
  return `${kind}-${startedAt.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-')}.json`;
}
