import type autocannon from 'autocannon';
import type { MachineLoad } from './machine-load.js';
import { POOL_SAMPLE_MS } from './server-probe.js';
import type { ServerFigures } from './server-probe.js';
import type { TargetCheck } from './calls/call-results.js';

/** The parts of an autocannon result the report reads. */
export type LoadResult = Pick<autocannon.Result, 'requests' | 'latency' | 'non2xx' | 'errors' | 'timeouts' | 'duration'>;

/** Latency percentiles in milliseconds (nearest rank). */
export interface LatencySummary {
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
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
  latencyP95Ms: number;
  latencyP99Ms: number;
  latencyMaxMs: number;
  /** Responses with a status outside 200-299. */
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  totalRequests: number;
  durationSec: number;
  /**
   * CPU of the process serving the run (user + system, all its threads; not Postgres, which
   * runs in its own) per request of the measured run, in ms; null when not measured.
   */
  cpuMsPerRequest: number | null;
  /** The whole machine's CPUs over the measured run (busy, stolen by the hypervisor); null when not read. */
  machine: MachineLoad | null;
  /**
   * The serving process over the measured run: its event loop's delay, that thread's time on
   * and waiting for a core, and the control plane's Postgres pool (server-probe.ts); null when
   * not measured.
   */
  server: ServerFigures | null;
}

/** What a measured run cost, beside its requests. */
export interface RunCost {
  /** CPU (user + system, every thread) of the process the servers run in, in ms. */
  serverCpuMs: number | null;
  /** The whole machine's CPUs over the same span. */
  machine: MachineLoad | null;
  /** The serving process's loop (and pool) over the same span; absent or null when not probed. */
  server?: ServerFigures | null;
}

const NOT_MEASURED: RunCost = { serverCpuMs: null, machine: null, server: null };

/**
 * Steal above this share of the machine's CPU time in a run marks its latencies as disturbed:
 * the hypervisor gave this machine's CPUs to others while it had work.
 */
export const STEAL_WARNING_SHARE = 0.05;

/** A platform scenario beside its bare-Fastify baseline. */
export interface Comparison {
  scenario: string;
  platform: ScenarioFigures;
  bare: ScenarioFigures;
  /** platform req/s ÷ bare req/s (the tracked figure; 1 is "as fast as bare Fastify"); null if bare served nothing. */
  ratioRequestsPerSec: number | null;
  /** platform p99 ÷ bare p99; null if the bare p99 is 0. */
  ratioP99: number | null;
  /** platform CPU per request ÷ bare's; null when either was not measured. */
  ratioCpuPerRequest: number | null;
}

/** Machine and runtime the figures were taken on. */
export interface MachineInfo {
  cpus: number;
  cpuModel: string;
  node: string;
  platform: string;
  arch: string;
}

/** Which runs `pnpm bench:api` makes (`--scenario`). */
export type ApiScenario = 'get-by-id' | 'create' | 'mixed' | 'all';

/** One kind of request of the open-loop mix with the latencies of its 2xx answers. */
export interface MixRequestFigures {
  /** e.g. `GET /agents/{id}`. */
  label: string;
  kind: 'read' | 'write';
  latency: LatencySummary;
}

/**
 * The open-loop mixed scenario: autocannon holds a fixed overall rate against the
 * platform, then against bare Fastify routes answering the same paths.
 */
export interface OpenLoopSection {
  scenario: 'mixed';
  /** The overall rate asked for, req/s (`--rate`). */
  requestedRatePerSec: number;
  /** Connections over all load instances. */
  connections: number;
  /** autocannon instances started evenly over one second, so the rate does not arrive as one burst a second. */
  phases: number;
  /** API keys the requests rotate over (created through `POST /api-keys`). */
  apiKeys: number;
  /** The labels each connection cycles through, in order. */
  sequence: string[];
  /** Reads in `sequence` ÷ its length (0.8). */
  readShare: number;
  /** Platform and bare figures; `requestsPerSec` is the achieved rate. */
  comparison: Comparison;
  /** Achieved ÷ requested rate. */
  achievedShare: { platform: number; bare: number };
  /** Latencies per kind of request, platform then bare. */
  byRequest: { platform: MixRequestFigures[]; bare: MixRequestFigures[] };
}

/** What `results/*.json` holds. */
export interface BenchReport {
  kind: 'api-bench';
  startedAt: string;
  settings: {
    scenario: ApiScenario;
    durationSec: number;
    warmupSec: number;
    /** Connections of the closed-loop scenarios (get-by-id, create). */
    connections: number;
    /** Requested overall rate of the open-loop scenario, req/s. */
    ratePerSec: number;
    database: 'external' | 'embedded';
  };
  machine: MachineInfo;
  /** Closed-loop scenarios (get-by-id, create) that ran. */
  comparisons: Comparison[];
  /** The open-loop mixed scenario; null when it did not run. */
  openLoop: OpenLoopSection | null;
  /** The issue's control-plane targets; `pass` null for a target whose scenario did not run. */
  targets: TargetCheck[];
  /** Why the figures cannot be trusted (errors, non-2xx, nothing served). */
  failures: string[];
  /** No failures (targets are reported, not part of `ok`). */
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
 * Percentiles of raw latencies in ms. autocannon's own histogram keeps whole
 * milliseconds, which makes a sub-millisecond bare route read 0 ms and its ratio
 * meaningless, so the load generator keeps every latency and summarises them here.
 */
export function summariseLatencies(latenciesMs: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(latenciesMs).sort();
  return {
    p50Ms: quantile(sorted, 0.5),
    p95Ms: quantile(sorted, 0.95),
    p99Ms: quantile(sorted, 0.99),
    maxMs: quantile(sorted, 1),
    samples: sorted.length,
  };
}

/**
 * One result for several autocannon instances that ran side by side for the same
 * duration (the open-loop phases): counts and per-second averages add up, the duration
 * is the longest. The whole-millisecond latency histogram cannot be merged, so its p50
 * and p99 are the worst instance's (only a fallback, see {@link figuresFrom}).
 */
export function mergeResults(results: LoadResult[]): LoadResult {
  const first = results[0];
  if (!first) throw new Error('mergeResults needs at least one result');
  const sum = (f: (r: LoadResult) => number) => results.reduce((acc, r) => acc + f(r), 0);
  const max = (f: (r: LoadResult) => number) => Math.max(...results.map(f));
  return {
    requests: { ...first.requests, average: sum((r) => r.requests.average), mean: sum((r) => r.requests.mean), total: sum((r) => r.requests.total), sent: sum((r) => r.requests.sent) },
    latency: { ...first.latency, p50: max((r) => r.latency.p50), p99: max((r) => r.latency.p99), max: max((r) => r.latency.max) },
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
    duration: max((r) => r.duration),
  };
}

/**
 * The figures of one run. Latencies come from `latency` when given (sub-millisecond,
 * see {@link summariseLatencies}), otherwise from autocannon's whole-millisecond histogram
 * (which has no p95: its p97.5 stands in, an upper bound). `requestsPerSec` is the mean
 * of autocannon's per-second samples (summed over open-loop phases, see {@link mergeResults}),
 * not completed ÷ duration: autocannon's duration runs on to its next 1 s sampling tick
 * after the stop, so it reads up to a second long.
 */
export function figuresFrom(scenario: string, target: ScenarioFigures['target'], result: LoadResult, latency?: LatencySummary, cost: RunCost = NOT_MEASURED): ScenarioFigures {
  const { serverCpuMs } = cost;
  const precise = latency && latency.samples > 0 ? latency : undefined;
  return {
    scenario,
    target,
    requestsPerSec: result.requests.average,
    latencyP50Ms: precise ? precise.p50Ms : result.latency.p50,
    latencyP95Ms: precise ? precise.p95Ms : result.latency.p97_5,
    latencyP99Ms: precise ? precise.p99Ms : result.latency.p99,
    latencyMaxMs: precise ? precise.maxMs : result.latency.max,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    totalRequests: result.requests.total,
    durationSec: result.duration,
    cpuMsPerRequest: serverCpuMs !== null && result.requests.total > 0 ? serverCpuMs / result.requests.total : null,
    machine: cost.machine,
    server: cost.server ?? null,
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
    ratioCpuPerRequest: platform.cpuMsPerRequest === null || bare.cpuMsPerRequest === null ? null : ratio(platform.cpuMsPerRequest, bare.cpuMsPerRequest),
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

/** The issue's limits for the control plane. */
export const API_TARGETS = {
  /** GET agent by id: platform req/s at least this share of bare Fastify's. */
  getByIdMinRatio: 0.3,
  /** Open-loop mixed traffic: p99 at most this, in ms. */
  mixedMaxP99Ms: 25,
  /** The achieved rate within this share of the requested one. */
  rateTolerance: 0.05,
} as const;

/**
 * The issue's control-plane targets against this run. A target whose scenario did not
 * run is listed with `pass: null` and `-`, so every report shows all of them.
 */
export function checkApiTargets(comparisons: Comparison[], openLoop: OpenLoopSection | null): TargetCheck[] {
  const getById = comparisons.find((c) => c.scenario === 'get-by-id');
  const ratioGet = getById?.ratioRequestsPerSec ?? null;
  const out: TargetCheck[] = [
    {
      name: 'GET agent by id throughput vs bare Fastify',
      limit: `>= ${API_TARGETS.getByIdMinRatio.toFixed(2)}x`,
      measured: ratioGet === null ? '-' : `${ratioGet.toFixed(3)}x`,
      pass: ratioGet === null ? null : ratioGet >= API_TARGETS.getByIdMinRatio,
    },
  ];
  const rate = openLoop ? `${openLoop.requestedRatePerSec} req/s` : 'the requested rate';
  const p = openLoop?.comparison.platform;
  const p99 = p && Number.isFinite(p.latencyP99Ms) ? p.latencyP99Ms : null;
  out.push({
    name: `open-loop mixed p99 at ${rate}`,
    limit: `<= ${API_TARGETS.mixedMaxP99Ms} ms`,
    measured: p ? (p99 === null ? 'no 2xx answers' : `${p99.toFixed(2)} ms`) : '-',
    pass: p ? p99 !== null && p99 <= API_TARGETS.mixedMaxP99Ms : null,
  });
  out.push({
    name: 'open-loop mixed errors + non-2xx',
    limit: '0',
    measured: p ? `${p.errors} errors (${p.timeouts} timeouts), ${p.non2xx} non-2xx` : '-',
    pass: p ? p.errors === 0 && p.non2xx === 0 : null,
  });
  const share = openLoop?.achievedShare.platform;
  out.push({
    name: 'open-loop mixed achieved rate',
    limit: `within ${API_TARGETS.rateTolerance * 100} % of ${rate}`,
    measured: p && share !== undefined ? `${p.requestsPerSec.toFixed(0)} req/s (${(share * 100).toFixed(1)} %)` : '-',
    // On the rates, not the share: |950 / 1000 - 1| is 0.05000000000000004 in floating point.
    pass: p && openLoop ? Math.abs(p.requestsPerSec - openLoop.requestedRatePerSec) <= API_TARGETS.rateTolerance * openLoop.requestedRatePerSec : null,
  });
  return out;
}

/** `n` with `digits` decimals; `-` for null, NaN or infinity. */
export function fixed(n: number | null, digits: number): string {
  return n === null || !Number.isFinite(n) ? '-' : n.toFixed(digits);
}

const HEADERS = ['scenario', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'non-2xx', 'errors', 'CPU µs/req', 'req/s ratio', 'p99 ratio', 'CPU ratio'] as const;

/** CPU per request in µs, or `-`. */
export function cpuMicros(msPerRequest: number | null | undefined): string {
  return fixed(msPerRequest === null || msPerRequest === undefined ? null : msPerRequest * 1000, 0);
}

/** Rows of the table: each platform scenario with its ratios, then its bare baseline. */
export function tableRows(comparisons: Comparison[]): string[][] {
  const row = (name: string, f: ScenarioFigures, ratios: [string, string, string]) => [
    name,
    fixed(f.requestsPerSec, 0),
    fixed(f.latencyP50Ms, 2),
    fixed(f.latencyP95Ms, 2),
    fixed(f.latencyP99Ms, 2),
    fixed(f.latencyMaxMs, 2),
    String(f.non2xx),
    f.timeouts > 0 ? `${f.errors} (${f.timeouts} t/o)` : String(f.errors),
    cpuMicros(f.cpuMsPerRequest),
    ...ratios,
  ];
  return comparisons.flatMap((c) => [
    row(c.scenario, c.platform, [fixed(c.ratioRequestsPerSec, 3), fixed(c.ratioP99, 2), fixed(c.ratioCpuPerRequest, 2)]),
    row(`  bare ${c.bare.scenario}`, c.bare, ['', '', '']),
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

/** The open-loop mix per kind of request: count, p50, p95, p99, max for platform and bare. */
export function formatMixTable(openLoop: OpenLoopSection): string {
  const bare = new Map(openLoop.byRequest.bare.map((r) => [r.label, r.latency]));
  const body = openLoop.byRequest.platform.map((r) => {
    const b = bare.get(r.label);
    return [`${r.label} (${r.kind})`, String(r.latency.samples), fixed(r.latency.p50Ms, 2), fixed(r.latency.p95Ms, 2), fixed(r.latency.p99Ms, 2), fixed(r.latency.maxMs, 2), b ? fixed(b.p99Ms, 2) : '-'];
  });
  return textTable(['request', '2xx', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'bare p99 ms'], body);
}

/** The targets with PASS, MISS or `-` (not measured in this run). */
export function formatTargets(targets: TargetCheck[]): string {
  const verdict = (pass: boolean | null) => (pass === null ? '-' : pass ? 'PASS' : 'MISS');
  return textTable(['target', 'limit', 'measured', ''], targets.map((t) => [t.name, t.limit, t.measured, verdict(t.pass)]));
}

/** What {@link formatMachineLoad} reads of a run (older reports have no `machine`). */
export interface MachineLoadRun {
  scenario: string;
  target: string;
  machine?: MachineLoad | null;
}

/**
 * The machine's CPU use during each measured run (`busy` and `steal`, % of all its CPUs), and
 * a warning naming the runs whose steal passed {@link STEAL_WARNING_SHARE}. Empty when no run
 * read it (not Linux, or a report from before it was kept).
 */
export function formatMachineLoad(comparisons: Array<{ platform: MachineLoadRun; bare: MachineLoadRun }>): string[] {
  const runs = comparisons.flatMap((c) => [c.platform, c.bare]).filter((f) => f.machine);
  if (runs.length === 0) return [];
  const name = (f: MachineLoadRun) => (f.target === 'platform' ? f.scenario : `bare ${f.scenario}`);
  const pct = (share: number) => (share * 100).toFixed(0);
  const lines = [`machine CPUs during each measured run, busy / steal %: ${runs.map((f) => `${name(f)} ${pct(f.machine!.busyShare)} / ${pct(f.machine!.stealShare)}`).join('; ')}`];
  const stolen = runs.filter((f) => f.machine!.stealShare > STEAL_WARNING_SHARE);
  if (stolen.length > 0) {
    lines.push(`WARNING steal above ${pct(STEAL_WARNING_SHARE)} % in ${stolen.map(name).join(', ')}: the hypervisor gave this machine's CPUs to others meanwhile; compare those latencies with care, or run again`);
  }
  return lines;
}

/** What {@link serverLoopRows} reads of a run (older reports have no `server`). */
export interface ServerLoopRun {
  scenario: string;
  target: string;
  server?: ServerFigures | null;
}

export const SERVER_LOOP_HEADERS = ['run', 'loop delay p99 / max ms', 'loop ran / waited for a core, ms per s', 'pool: most waiting', 'pool: samples with a wait', 'pool: most busy'] as const;

/**
 * One row per run that probed its serving process: the loop's delay, its thread's time on and
 * waiting for a core, and the Postgres pool (`-` for bare Fastify, which has none).
 */
export function serverLoopRows(comparisons: Array<{ platform: ServerLoopRun; bare: ServerLoopRun }>): string[][] {
  const runs = comparisons.flatMap((c) => [c.platform, c.bare]).filter((f) => f.server);
  return runs.map((f) => {
    const s = f.server!;
    const core = s.loopRanMsPerSec === null || s.loopWaitedMsPerSec === null ? '-' : `${fixed(s.loopRanMsPerSec, 0)} / ${fixed(s.loopWaitedMsPerSec, 0)}`;
    return [
      f.target === 'platform' ? f.scenario : `bare ${f.scenario}`,
      `${fixed(s.loopDelayP99Ms, 1)} / ${fixed(s.loopDelayMaxMs, 1)}`,
      core,
      s.pool ? String(s.pool.waitingMax) : '-',
      s.pool ? `${fixed(s.pool.waitingShare * 100, 1)} %` : '-',
      s.pool ? String(s.pool.busyMax) : '-',
    ];
  });
}

/**
 * The serving process during each measured run as a table with its heading, for the
 * terminal; empty when no run probed it (reports from before it was kept).
 */
export function formatServerLoop(comparisons: Array<{ platform: ServerLoopRun; bare: ServerLoopRun }>): string[] {
  const rows = serverLoopRows(comparisons);
  if (rows.length === 0) return [];
  return ['', `the serving process during each measured run (its one event loop serves every request; Postgres pool sampled every ${POOL_SAMPLE_MS} ms):`, '', textTable(SERVER_LOOP_HEADERS, rows)];
}

/** The JSON document written under `results/`. */
export function buildReport(input: { startedAt: Date; settings: BenchReport['settings']; machine: MachineInfo; comparisons: Comparison[]; openLoop?: OpenLoopSection | null }): BenchReport {
  const openLoop = input.openLoop ?? null;
  const failures = failuresOf(openLoop ? [...input.comparisons, openLoop.comparison] : input.comparisons);
  return {
    kind: 'api-bench',
    startedAt: input.startedAt.toISOString(),
    settings: input.settings,
    machine: input.machine,
    comparisons: input.comparisons,
    openLoop,
    targets: checkApiTargets(input.comparisons, openLoop),
    failures,
    ok: failures.length === 0,
  };
}

/** `<kind>-2026-01-02T03-04-05Z.json` (kind `api-bench` by default): sortable and safe on every file system. */
export function reportFileName(startedAt: Date, kind = 'api-bench'): string {
  return `${kind}-${startedAt.toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/:/g, '-')}.json`;
}
