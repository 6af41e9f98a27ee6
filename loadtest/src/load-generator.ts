import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { machineLoadBetween, readCpuTimes } from './machine-load.js';
import type { CpuTimes } from './machine-load.js';
import { startServerProbe } from './server-probe.js';
import type { PoolCounts, ServerProbe } from './server-probe.js';
import type { LatencySummary, LoadResult, RunCost } from './report.js';

/** One kind of request a load run sends. */
export interface RequestSpec {
  /** Names the request in per-request figures, e.g. `GET /agents/{id}`. */
  label: string;
  kind: 'read' | 'write';
  method: 'GET' | 'POST' | 'PATCH';
  /**
   * Path with query. With several, each request of this kind takes the next in turn (one
   * counter per load process), e.g. to spread reads and updates over several agents.
   */
  paths: string[];
  headers?: Record<string, string>;
  /** JSON body. */
  body?: Record<string, unknown>;
  /** When set, every request's `body.name` is `<uniqueNamePrefix> <n>` with n counting up (agent names are unique per tenant). */
  uniqueNamePrefix?: string;
}

/** One load run: what to send, for how long, over how many connections, closed or open loop. */
export interface LoadSpec {
  /** Origin, e.g. http://127.0.0.1:41234 (loopback only). */
  origin: string;
  /**
   * The sequence every connection cycles through, in order (autocannon's `requests`);
   * connection i starts at position i mod its length, so the mix holds over the
   * connections even when each completes only part of a cycle.
   */
  requests: RequestSpec[];
  durationSec: number;
  /**
   * A discarded run of this many seconds first, in the same load process (connections,
   * JIT and the servers' caches warm up; one process start fewer). 0 or unset: none.
   */
  warmupSec?: number;
  /** Connections over all phases. */
  connections: number;
  /**
   * Open loop: the overall rate in req/s over all connections (autocannon's
   * `overallRate`). Unset: closed loop, each connection sends as soon as it has its answer.
   */
  overallRate?: number;
  /**
   * Open loop only: autocannon instances started evenly over one second, each with its
   * share of the connections and the rate (default 1). autocannon's rate limit lets a
   * connection send its whole per-second quota back to back when its second starts, and
   * all connections of one instance start together, so one instance delivers the rate
   * as one burst a second; `phases` instances spread it into that many smaller bursts.
   */
  phases?: number;
}

/** What the load process reports back. */
export interface LoadOutcome {
  /** autocannon's result (merged over the phases). */
  result: LoadResult;
  /** Percentiles of the 2xx latencies at sub-millisecond resolution. */
  latency: LatencySummary;
  /** The same per request label, in the order the labels first appear in `requests`. */
  byLabel: Array<{ label: string; latency: LatencySummary }>;
}

/** Messages from the load process to its parent: `measuring` when the measured run (after any warm-up) starts. */
export type LoadMessage = { kind: 'measuring' } | { kind: 'done'; outcome: LoadOutcome } | { kind: 'failed'; message: string };

/**
 * A run's outcome with what it cost from the start of the measured run to its report: this
 * process's CPU (where the servers under test run; null if the load process never said when
 * the measured run started), the machine's load (also null off Linux) and what this
 * process's event loop and the given pool went through meanwhile (server-probe.ts).
 */
export type MeasuredLoad = LoadOutcome & RunCost;

// Grace beyond the run itself for process start, connection set-up, the phases' staggered start and the last responses.
const GRACE_MS = 30_000;

/**
 * Runs autocannon in a child process. The servers under test live in this process, and a
 * load generator sharing their event loop would slow both and flatten the ratio we
 * track. A child process (not a worker thread: tsx does not load TypeScript in workers on
 * Node 20) inherits tsx through `execArgv`. The child is killed if it overruns.
 * `serving.pool` is the Postgres pool of the server under test, sampled over the measured run.
 */
export function runLoad(spec: LoadSpec, serving: { pool?: PoolCounts } = {}): Promise<MeasuredLoad> {
  const entry = fileURLToPath(new URL('./load-worker.ts', import.meta.url));
  const child = fork(entry, [], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const what = spec.requests.map((r) => r.label).join(', ');
  return new Promise<MeasuredLoad>((resolve, reject) => {
    let settled = false;
    let cpuAtStart: NodeJS.CpuUsage | null = null;
    let machineAtStart: CpuTimes | null = null;
    let probe: ServerProbe | null = null;
    const finish = (err: Error | null, outcome?: MeasuredLoad) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      probe?.stop();
      if (child.exitCode === null && child.signalCode === null) child.kill();
      if (err) reject(err);
      else resolve(outcome!);
    };
    const runSec = (spec.warmupSec ?? 0) + spec.durationSec;
    const timer = setTimeout(() => finish(new Error(`load run ${what} overran ${runSec} s by ${GRACE_MS / 1000} s`)), runSec * 1000 + GRACE_MS);
    child.on('message', (m: LoadMessage) => {
      if (m.kind === 'measuring') {
        cpuAtStart = process.cpuUsage();
        machineAtStart = readCpuTimes();
        probe = startServerProbe(serving.pool);
      } else if (m.kind === 'failed') finish(new Error(`load run failed: ${m.message}`));
      else {
        const used = cpuAtStart && process.cpuUsage(cpuAtStart);
        const machine = machineAtStart && machineLoadBetween(machineAtStart, readCpuTimes());
        const server = probe ? probe.stop() : null;
        finish(null, { ...m.outcome, serverCpuMs: used ? (used.user + used.system) / 1000 : null, machine, server });
      }
    });
    child.on('error', (err) => finish(err));
    child.on('exit', (code, signal) => finish(new Error(`load process exited (${signal ?? code}) before reporting`)));
    child.send(spec);
  });
}

/** One autocannon instance of a run: when it starts (ms after the first), its connections and its rate (req/s; undefined in closed loop). */
export interface PhasePlan {
  startMs: number;
  connections: number;
  overallRate: number | undefined;
}

/** `total` split into `parts` integers that differ by at most one, the larger first. */
function share(total: number, parts: number, i: number): number {
  return Math.floor(total / parts) + (i < total % parts ? 1 : 0);
}

/**
 * How a run is spread over autocannon instances: one for a closed loop; `phases` for an
 * open loop, started `1000 / phases` ms apart, each with its share of the connections
 * and of the rate. Throws when a phase would get no connection, or fewer req/s than
 * connections (autocannon would then drop connections and the rate per phase would not hold).
 */
export function phasePlan(spec: Pick<LoadSpec, 'connections' | 'overallRate' | 'phases'>): PhasePlan[] {
  if (spec.overallRate === undefined) return [{ startMs: 0, connections: spec.connections, overallRate: undefined }];
  const phases = spec.phases ?? 1;
  if (!Number.isInteger(phases) || phases < 1 || phases > spec.connections) throw new Error(`phases must be an integer from 1 to the connection count ${spec.connections} (got ${phases})`);
  if (spec.overallRate < spec.connections) throw new Error(`an open loop needs at least one req/s per connection (rate ${spec.overallRate}, ${spec.connections} connections)`);
  return Array.from({ length: phases }, (_, i) => ({
    startMs: Math.round((i * 1000) / phases),
    connections: share(spec.connections, phases, i),
    overallRate: share(spec.overallRate!, phases, i),
  }));
}
