import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { LatencySummary, LoadResult } from './report.js';

/** One load run: what to send, for how long, over how many connections. */
export interface LoadSpec {
  /** Origin, e.g. http://127.0.0.1:41234 (loopback only). */
  origin: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  /** JSON body sent with every request. */
  body?: Record<string, unknown>;
  /** When set, every request's `body.name` is `<uniqueNamePrefix> <n>` with n counting up. */
  uniqueNamePrefix?: string;
  durationSec: number;
  connections: number;
}

/** What the load process reports back. */
export interface LoadOutcome {
  result: LoadResult;
  /** Percentiles of the 2xx latencies at sub-millisecond resolution. */
  latency: LatencySummary;
}

/** Messages from the load process to its parent. */
export type LoadMessage = { kind: 'done'; outcome: LoadOutcome } | { kind: 'failed'; message: string };

// Grace beyond the run itself for process start, connection set-up and the last responses.
const GRACE_MS = 30_000;

/**
 * Runs autocannon in a child process. The servers under test live in this process, and a
 * load generator sharing their event loop would slow both and flatten the ratio we
 * track. A child process (not a worker thread: tsx does not load TypeScript in workers on
 * Node 20) inherits tsx through `execArgv`. The child is killed if it overruns.
 */
export function runLoad(spec: LoadSpec): Promise<LoadOutcome> {
  const entry = fileURLToPath(new URL('./load-worker.ts', import.meta.url));
  const child = fork(entry, [], { execArgv: process.execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise<LoadOutcome>((resolve, reject) => {
    let settled = false;
    const finish = (err: Error | null, outcome?: LoadOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill();
      if (err) reject(err);
      else resolve(outcome!);
    };
    const timer = setTimeout(() => finish(new Error(`load run ${spec.method} ${spec.path} overran ${spec.durationSec} s by ${GRACE_MS / 1000} s`)), spec.durationSec * 1000 + GRACE_MS);
    child.on('message', (m: LoadMessage) => (m.kind === 'done' ? finish(null, m.outcome) : finish(new Error(`load run failed: ${m.message}`))));
    child.on('error', (err) => finish(err));
    child.on('exit', (code, signal) => finish(new Error(`load process exited (${signal ?? code}) before reporting`)));
    child.send(spec);
  });
}
