import { parseArgs } from 'node:util';

/** Which runs `pnpm bench:api` makes (`--scenario`). */
export const API_SCENARIOS = ['get-by-id', 'create', 'mixed', 'all'] as const;
export type ApiScenarioName = (typeof API_SCENARIOS)[number];

/** Whether `--scenario <chosen>` runs `scenario`. */
export function runsScenario(chosen: ApiScenarioName, scenario: Exclude<ApiScenarioName, 'all'>): boolean {
  return chosen === 'all' || chosen === scenario;
}

/** What one run of the API benchmark does; parsed once at start (STYLE.md §7). */
export interface BenchConfig {
  /** `--scenario`: one scenario or all (default). */
  scenario: ApiScenarioName;
  /** Measured run per scenario, in seconds (`--duration`, else BENCH_DURATION_SECONDS, else 10). */
  durationSec: number;
  /** Discarded warm-up run before each measured run, in seconds (`--warmup`, default 2; 0 skips it). */
  warmupSec: number;
  /** Concurrent HTTP connections of the closed-loop scenarios (`--connections`, default 10). */
  connections: number;
  /** Overall rate of the open-loop mixed scenario, req/s (`--rate`, default 1000). */
  ratePerSec: number;
  /**
   * Connections and phases of the open loop, derived from the rate: one connection per
   * {@link OPEN_LOOP_RATE_PER_CONNECTION} req/s, so a connection keeps up while its answers
   * take under 200 ms, spread over up to {@link MAX_PHASES} phases (see `LoadSpec.phases`).
   */
  openLoop: { connections: number; phases: number };
  /** Where the JSON (and HTML) report goes (`--results-dir`); undefined: `loadtest/results/`. */
  resultsDir: string | undefined;
  /** A V8 CPU profile of each measured run (platform and bare, see cpu-profile.ts) goes into this directory (`--cpu-prof <dir>`); undefined: none. */
  cpuProfDir: string | undefined;
  /**
   * A Postgres server to create the bench database on (DATABASE_URL); unset means an
   * embedded Postgres in a temporary directory.
   */
  serverDatabaseUrl: string | undefined;
}

export class BenchConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid benchmark settings:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'BenchConfigError';
  }
}

// Upper bounds keep a run bounded in time: 3 scenarios x 2 targets x (warm-up + duration).
const MAX_DURATION_SEC = 300;
const MAX_WARMUP_SEC = 60;
const MAX_CONNECTIONS = 1000;
const MAX_RATE = 20_000;
const WARMUP_SEC = 2;
/** req/s each open-loop connection is asked for (below 1000 / this many connections cap it). */
export const OPEN_LOOP_RATE_PER_CONNECTION = 5;
/** autocannon instances of an open loop at most: a burst every 25 ms. */
export const MAX_PHASES = 40;

function intIn(raw: string | undefined, name: string, def: number, min: number, max: number, problems: string[]): number {
  if (raw === undefined || raw.trim() === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}: must be an integer from ${min} to ${max} (got "${raw}")`);
    return def;
  }
  return n;
}

/** Connections and phases for an open loop at `rate` req/s (see {@link BenchConfig.openLoop}). */
export function openLoopShape(rate: number): { connections: number; phases: number } {
  const connections = Math.min(MAX_CONNECTIONS, Math.max(1, Math.ceil(rate / OPEN_LOOP_RATE_PER_CONNECTION)));
  return { connections, phases: Math.min(MAX_PHASES, connections) };
}

/**
 * Reads the command line (`--scenario`, `--duration <s>`, `--warmup <s>`, `--connections <n>`,
 * `--rate <req/s>`, `--results-dir <dir>`, `--cpu-prof <dir>`) and the environment (BENCH_DURATION_SECONDS,
 * DATABASE_URL), listing every problem at once.
 */
export function loadBenchConfig(argv: string[] = process.argv.slice(2), env: Record<string, string | undefined> = process.env): BenchConfig {
  // `pnpm bench:api -- --duration 5` may hand a bare `--` through; parseArgs would take it
  // as the end of options and ignore everything after it.
  const args = argv.filter((a) => a !== '--');
  let values: { scenario?: string; duration?: string; warmup?: string; connections?: string; rate?: string; 'results-dir'?: string; 'cpu-prof'?: string };
  try {
    ({ values } = parseArgs({
      args,
      options: { scenario: { type: 'string' }, duration: { type: 'string' }, warmup: { type: 'string' }, connections: { type: 'string' }, rate: { type: 'string' }, 'results-dir': { type: 'string' }, 'cpu-prof': { type: 'string' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new BenchConfigError([err instanceof Error ? err.message : String(err)]);
  }
  const problems: string[] = [];
  const scenario = (values.scenario ?? 'all') as ApiScenarioName;
  if (!API_SCENARIOS.includes(scenario)) problems.push(`--scenario: must be one of ${API_SCENARIOS.join(', ')} (got "${values.scenario}")`);
  const durationSec = intIn(values.duration ?? env.BENCH_DURATION_SECONDS, values.duration !== undefined ? '--duration' : 'BENCH_DURATION_SECONDS', 10, 1, MAX_DURATION_SEC, problems);
  const warmupSec = intIn(values.warmup, '--warmup', WARMUP_SEC, 0, MAX_WARMUP_SEC, problems);
  const connections = intIn(values.connections, '--connections', 10, 1, MAX_CONNECTIONS, problems);
  const ratePerSec = intIn(values.rate, '--rate', 1000, 1, MAX_RATE, problems);
  const resultsDir = values['results-dir'];
  if (resultsDir !== undefined && resultsDir.trim() === '') problems.push('--results-dir: must not be empty');
  const serverDatabaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (serverDatabaseUrl !== undefined && !URL.canParse(serverDatabaseUrl)) problems.push('DATABASE_URL: must be a postgres:// URL');
  const cpuProfDir = values['cpu-prof'];
  if (cpuProfDir !== undefined && cpuProfDir.trim() === '') problems.push('--cpu-prof: must not be empty');
  if (problems.length > 0) throw new BenchConfigError(problems);
  return Object.freeze({ scenario, durationSec, warmupSec, connections, ratePerSec, openLoop: openLoopShape(ratePerSec), resultsDir, serverDatabaseUrl, cpuProfDir });
}

/** What one run of the webhook benchmark does; parsed once at start (STYLE.md §7). */
export interface WebhookBenchConfig {
  /** Events staged in the burst (`--events`, default 500). */
  events: number;
  /** Webhooks subscribed to every event (`--webhooks`, default 4); each event is delivered once per webhook. */
  webhooks: number;
  /**
   * Attempts in flight at once (WEBHOOK_CONCURRENCY, default 32, the control plane's own
   * default): handed to the control plane and used as the baseline's connection count.
   */
  concurrency: number;
  /** As {@link BenchConfig.serverDatabaseUrl}. */
  serverDatabaseUrl: string | undefined;
}

// Bounds keep a run bounded in time: at most 2000 x 16 = 32 000 deliveries per phase.
const MAX_EVENTS = 2000;
const MAX_WEBHOOKS = 16;

/**
 * Reads `--events <n>`, `--webhooks <n>` and the environment (WEBHOOK_CONCURRENCY,
 * DATABASE_URL), listing every problem at once.
 */
export function loadWebhookBenchConfig(argv: string[] = process.argv.slice(2), env: Record<string, string | undefined> = process.env): WebhookBenchConfig {
  const args = argv.filter((a) => a !== '--');
  let values: { events?: string; webhooks?: string };
  try {
    ({ values } = parseArgs({ args, options: { events: { type: 'string' }, webhooks: { type: 'string' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new BenchConfigError([err instanceof Error ? err.message : String(err)]);
  }
  const problems: string[] = [];
  const events = intIn(values.events, '--events', 500, 1, MAX_EVENTS, problems);
  const webhooks = intIn(values.webhooks, '--webhooks', 4, 1, MAX_WEBHOOKS, problems);
  const concurrency = intIn(env.WEBHOOK_CONCURRENCY, 'WEBHOOK_CONCURRENCY', 32, 1, 1000, problems);
  const serverDatabaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (serverDatabaseUrl !== undefined && !URL.canParse(serverDatabaseUrl)) problems.push('DATABASE_URL: must be a postgres:// URL');
  if (problems.length > 0) throw new BenchConfigError(problems);
  return Object.freeze({ events, webhooks, concurrency, serverDatabaseUrl });
}

/** Reads a benchmark's configuration, or prints what is wrong and exits 2 (bad usage). */
export function loadOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (err) {
    console.error(err instanceof BenchConfigError ? err.message : err);
    process.exit(2);
  }
}

/**
 * The directory the user ran the command from: pnpm runs a package's script in the package
 * (`loadtest/`) and gives the caller's directory as `INIT_CWD`, against which the paths they
 * typed are meant.
 */
export function invocationDir(env: Record<string, string | undefined> = process.env): string {
  return env['INIT_CWD']?.trim() || process.cwd();
}
