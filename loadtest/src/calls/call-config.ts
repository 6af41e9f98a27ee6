/**
 * The command line of `pnpm bench:calls`, parsed once at start (STYLE.md §7). Only the
 * command line: the benchmark reads no environment.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GATEWAY_BOUNDS } from '@vap/media-gateway/config';
import { ELEVENLABS_WEBSOCKETS } from '@vap/voice-pipeline';
import type { ElevenLabsWebSocket } from '@vap/voice-pipeline';
import { BenchConfigError } from '../config.js';

export interface CallBenchConfig {
  /** Concurrent calls held in the steady state (`--calls`, default 50); with `--sweep`, its first level. */
  calls: number;
  /**
   * A capacity sweep (`--sweep 50,100,150,200`): one full run at each number of concurrent calls,
   * in ascending order, each with its own fresh processes and report, then a summary of them all
   * (sweep.ts); null: one run at `calls`.
   */
  sweep: readonly number[] | null;
  /** Calls start evenly over this many seconds (`--ramp-sec`, default 10). */
  rampSec: number;
  /** All calls held this long after the ramp (`--steady-sec`, default 30). */
  steadySec: number;
  /** Caller processes (`--workers`, default 2). */
  workers: number;
  /** Run the bare relay baseline after the gateway (default true; `--no-relay`). */
  relay: boolean;
  /** Latency of the simulated STT's results (`--stt-latency-ms`, default 0). */
  sttLatencyMs: number;
  /** Where the JSON and HTML reports go (`--out`, default loadtest/results). */
  outDir: string;
  /** Write a V8 CPU profile of each server process (gateway, relay) into this directory (`--cpu-prof <dir>`), or null. */
  cpuProfDir: string | null;
  /** Write an on-CPU profile (Linux `perf`) of each server process's steady state into this directory (`--perf <dir>`), or null. */
  perfDir: string | null;
  /** The gateway's pipeline threads (`--pipeline-threads`, its `PIPELINE_THREADS`); null: the gateway's default. */
  pipelineThreads: number | null;
  /** The gateway's ElevenLabs socket (`--tts-websocket`, its `ELEVENLABS_WEBSOCKET`); null: the gateway's default. */
  ttsWebSocket: ElevenLabsWebSocket | null;
  /** The gateway's admission limits (`--max-calls`, `--overload-lag-ms`: its `GATEWAY_MAX_CALLS`, `GATEWAY_OVERLOAD_LAG_MS`); null: its defaults. */
  maxCalls: number | null;
  overloadLagMs: number | null;
  /** The gateway's log, at debug level, goes to this file (`--gateway-log <file>`); null: no log. */
  gatewayLogFile: string | null;
  /**
   * Node and V8 flags for the gateway's process only (`--gateway-node-flags="<flags>"`: the `=`
   * because the value starts with `-`; split on spaces, each `--name` or `--name=value`), e.g. `--max-semi-space-size=64` or `--trace-gc`, to
   * measure a runtime setting against the default in alternating runs; empty: none.
   */
  gatewayNodeFlags: readonly string[];
}

export const USAGE = 'Usage: pnpm bench:calls [-- --calls <n> | --sweep <n>,<n>,…] [--ramp-sec <s>] [--steady-sec <s>] [--workers <n>] [--no-relay] [--stt-latency-ms <ms>] [--out <dir>] [--cpu-prof <dir>] [--perf <dir>] [--pipeline-threads <n>] [--tts-websocket multi-stream-input|stream-input] [--max-calls <n>] [--overload-lag-ms <ms>] [--gateway-log <file>] [--gateway-node-flags="<flags>"]';

const NODE_FLAG = /^--[a-z0-9][a-z0-9_-]*(=\S+)?$/i;

/** Bounds keep a run bounded in count and time (two targets of at most ramp + steady + a call's drain each). */
export const CALL_BENCH_LIMITS = { calls: 1000, sweepLevels: 8, rampSec: 300, steadySec: 600, workers: 16, sttLatencyMs: 5000 } as const;

const DEFAULT_OUT_DIR = fileURLToPath(new URL('../../results/', import.meta.url));

function intIn(raw: string | undefined, name: string, def: number, min: number, max: number, problems: string[]): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(n) || n < min || n > max) {
    problems.push(`${name}: must be an integer from ${min} to ${max} (got "${raw}")`);
    return def;
  }
  return n;
}

/** `--sweep`'s levels: distinct call counts in ascending order, each within `--calls`' bounds, at most {@link CALL_BENCH_LIMITS}.sweepLevels of them. */
function sweepLevels(raw: string, problems: string[]): number[] | null {
  const L = CALL_BENCH_LIMITS;
  const parts = raw.split(',').map((p) => p.trim());
  const levels = parts.map(Number);
  if (parts.some((p, i) => p === '' || !Number.isInteger(levels[i]) || levels[i]! < 1 || levels[i]! > L.calls)) {
    problems.push(`--sweep: must be call counts from 1 to ${L.calls} separated by commas, e.g. 50,100,150 (got "${raw}")`);
    return null;
  }
  if (levels.length < 2 || levels.length > L.sweepLevels) {
    problems.push(`--sweep: must have from 2 to ${L.sweepLevels} levels (got ${levels.length}); for one, use --calls`);
    return null;
  }
  if (levels.some((n, i) => i > 0 && n <= levels[i - 1]!)) {
    problems.push(`--sweep: levels must rise, each larger than the one before (got "${raw}")`);
    return null;
  }
  return levels;
}

/** Reads the options, listing every problem at once ({@link BenchConfigError}). */
export function loadCallBenchConfig(argv: string[] = process.argv.slice(2)): CallBenchConfig {
  // `pnpm bench:calls -- --calls 5` may hand a bare `--` through.
  const args = argv.filter((a) => a !== '--');
  let values: { calls?: string; sweep?: string; 'ramp-sec'?: string; 'steady-sec'?: string; workers?: string; 'no-relay'?: boolean; 'stt-latency-ms'?: string; out?: string; 'cpu-prof'?: string; perf?: string; 'pipeline-threads'?: string; 'tts-websocket'?: string; 'max-calls'?: string; 'overload-lag-ms'?: string; 'gateway-log'?: string; 'gateway-node-flags'?: string };
  try {
    ({ values } = parseArgs({
      args,
      options: {
        calls: { type: 'string' },
        sweep: { type: 'string' },
        'ramp-sec': { type: 'string' },
        'steady-sec': { type: 'string' },
        workers: { type: 'string' },
        'no-relay': { type: 'boolean' },
        'stt-latency-ms': { type: 'string' },
        out: { type: 'string' },
        'cpu-prof': { type: 'string' },
        perf: { type: 'string' },
        'pipeline-threads': { type: 'string' },
        'tts-websocket': { type: 'string' },
        'max-calls': { type: 'string' },
        'overload-lag-ms': { type: 'string' },
        'gateway-log': { type: 'string' },
        'gateway-node-flags': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new BenchConfigError([err instanceof Error ? err.message : String(err), USAGE]);
  }
  const problems: string[] = [];
  const L = CALL_BENCH_LIMITS;
  const calls = intIn(values.calls, '--calls', 50, 1, L.calls, problems);
  const sweep = values.sweep === undefined ? null : sweepLevels(values.sweep, problems);
  if (values.sweep !== undefined && values.calls !== undefined) problems.push('--sweep: give either --calls (one run) or --sweep (a run at each level), not both');
  // Each level's profiles would land beside the others' (perf's under the same name): profile one level at a time.
  if (values.sweep !== undefined && values['cpu-prof'] !== undefined) problems.push('--cpu-prof: profile one level at a time (--calls), not a --sweep');
  if (values.sweep !== undefined && values.perf !== undefined) problems.push('--perf: profile one level at a time (--calls), not a --sweep');
  const rampSec = intIn(values['ramp-sec'], '--ramp-sec', 10, 0, L.rampSec, problems);
  const steadySec = intIn(values['steady-sec'], '--steady-sec', 30, 1, L.steadySec, problems);
  const workers = intIn(values.workers, '--workers', 2, 1, L.workers, problems);
  const sttLatencyMs = intIn(values['stt-latency-ms'], '--stt-latency-ms', 0, 0, L.sttLatencyMs, problems);
  const pipelineThreads = values['pipeline-threads'] === undefined ? null : intIn(values['pipeline-threads'], '--pipeline-threads', 0, 0, GATEWAY_BOUNDS.pipelineThreads, problems);
  const ttsWebSocket = values['tts-websocket'] === undefined ? null : ((ELEVENLABS_WEBSOCKETS as readonly string[]).includes(values['tts-websocket']) ? (values['tts-websocket'] as ElevenLabsWebSocket) : null);
  if (values['tts-websocket'] !== undefined && ttsWebSocket === null) problems.push(`--tts-websocket: must be one of ${ELEVENLABS_WEBSOCKETS.join(', ')}`);
  // The gateway's own bounds; 0 switches the rule off, as there.
  const maxCalls = values['max-calls'] === undefined ? null : intIn(values['max-calls'], '--max-calls', 0, 0, GATEWAY_BOUNDS.maxCalls, problems);
  const overloadLagMs = values['overload-lag-ms'] === undefined ? null : intIn(values['overload-lag-ms'], '--overload-lag-ms', 0, 0, GATEWAY_BOUNDS.overloadLagMs, problems);
  if (values.out !== undefined && values.out.trim() === '') problems.push('--out: must be a directory path');
  if (values['gateway-log'] !== undefined && values['gateway-log'].trim() === '') problems.push('--gateway-log: must be a file path');
  if (values['cpu-prof'] !== undefined && values['cpu-prof'].trim() === '') problems.push('--cpu-prof: must be a directory path');
  if (values.perf !== undefined && values.perf.trim() === '') problems.push('--perf: must be a directory path');
  const gatewayNodeFlags = (values['gateway-node-flags'] ?? '').split(/\s+/).filter((f) => f !== '');
  const badFlag = gatewayNodeFlags.find((f) => !NODE_FLAG.test(f));
  if (badFlag !== undefined) problems.push(`--gateway-node-flags: each flag must be --name or --name=value, separated by spaces (got "${badFlag}")`);
  if (problems.length > 0) throw new BenchConfigError(problems);
  return Object.freeze({ calls: sweep ? sweep[0]! : calls, sweep: sweep ? Object.freeze(sweep) : null, rampSec, steadySec, workers: Math.min(workers, sweep ? sweep[sweep.length - 1]! : calls), relay: !values['no-relay'], sttLatencyMs, outDir: values.out ?? DEFAULT_OUT_DIR, cpuProfDir: values['cpu-prof'] ?? null, perfDir: values.perf ?? null, pipelineThreads, ttsWebSocket, maxCalls, overloadLagMs, gatewayLogFile: values['gateway-log'] ?? null, gatewayNodeFlags: Object.freeze(gatewayNodeFlags) });
}
