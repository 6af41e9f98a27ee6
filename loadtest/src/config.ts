import { parseArgs } from 'node:util';

/** What one run of the API benchmark does; parsed once at start (STYLE.md §7). */
export interface BenchConfig {
  /** Measured run per scenario, in seconds (`--duration`, else BENCH_DURATION_SECONDS, else 10). */
  durationSec: number;
  /** Discarded warm-up run before each measured run, in seconds. */
  warmupSec: number;
  /** Concurrent HTTP connections of the load generator (`--connections`, default 10). */
  connections: number;
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

// Upper bounds keep a run bounded in time: 2 scenarios x 2 targets x (warm-up + duration).
const MAX_DURATION_SEC = 300;
const MAX_CONNECTIONS = 1000;
const WARMUP_SEC = 2;

function intIn(raw: string | undefined, name: string, def: number, min: number, max: number, problems: string[]): number {
  if (raw === undefined || raw.trim() === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}: must be an integer from ${min} to ${max} (got "${raw}")`);
    return def;
  }
  return n;
}

/**
 * Reads the command line (`--duration <s>`, `--connections <n>`) and the environment
 * (BENCH_DURATION_SECONDS, DATABASE_URL), listing every problem at once.
 */
export function loadBenchConfig(argv: string[] = process.argv.slice(2), env: Record<string, string | undefined> = process.env): BenchConfig {
  // `pnpm bench:api -- --duration 5` may hand a bare `--` through; parseArgs would take it
  // as the end of options and ignore everything after it.
  const args = argv.filter((a) => a !== '--');
  let values: { duration?: string; connections?: string };
  try {
    ({ values } = parseArgs({ args, options: { duration: { type: 'string' }, connections: { type: 'string' } }, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new BenchConfigError([err instanceof Error ? err.message : String(err)]);
  }
  const problems: string[] = [];
  const durationSec = intIn(values.duration ?? env.BENCH_DURATION_SECONDS, values.duration !== undefined ? '--duration' : 'BENCH_DURATION_SECONDS', 10, 1, MAX_DURATION_SEC, problems);
  const connections = intIn(values.connections, '--connections', 10, 1, MAX_CONNECTIONS, problems);
  const serverDatabaseUrl = env.DATABASE_URL?.trim() || undefined;
  if (serverDatabaseUrl !== undefined && !URL.canParse(serverDatabaseUrl)) problems.push('DATABASE_URL: must be a postgres:// URL');
  if (problems.length > 0) throw new BenchConfigError(problems);
  return Object.freeze({ durationSec, warmupSec: WARMUP_SEC, connections, serverDatabaseUrl });
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
