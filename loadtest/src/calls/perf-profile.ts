/**
 * `bench:calls --perf <dir>`: an on-CPU profile of each server process (gateway, relay) over
 * the steady state, taken with Linux `perf` (`cpu-clock` samples, which count only time a
 * thread spent on a core). `--cpu-prof`'s V8 sampler takes a sample when the thread next runs
 * and counts the whole wait to it, so on a busy machine it puts a thread's wait for a core on
 * the code it resumed in (mostly socket writes); these figures do not. The server runs with
 * `--perf-basic-prof-only-functions` so that `perf` can name JavaScript functions.
 *
 * Output: `<target>.perf.data` (for `perf report` later; it needs the map file Node writes,
 * `/tmp/perf-<pid>.map`) and `<target>-perf.txt`: each thread's share of the process's
 * samples, and the functions with the most own time on the event loop and each pipeline thread.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The Node flag that makes the profiled process write the names of its JIT-compiled functions for `perf`. */
export const PERF_NODE_FLAG = '--perf-basic-prof-only-functions';
/** Samples per second per thread (not a multiple of 10, so the sampling does not lock onto the 20 ms frame ticks). */
export const PERF_SAMPLE_HZ = 499;
/** Functions listed per thread in the text report. */
const TOP_FUNCTIONS = 15;

/** Why `perf` cannot profile here (not installed, or not allowed), or null when it can: it records a short `true`. */
export function perfProblem(): string | null {
  const dir = mkdtempSync(join(tmpdir(), 'vap-perf-check-'));
  try {
    const r = spawnSync('perf', ['record', '-q', '-e', 'cpu-clock', '-o', join(dir, 'check.data'), '--', 'true'], { encoding: 'utf8', timeout: 30_000 });
    if (r.error) {
      const missing = (r.error as NodeJS.ErrnoException).code === 'ENOENT';
      return missing ? 'perf is not installed (Debian: apt install linux-perf)' : `perf could not run: ${r.error.message}`;
    }
    if (r.status !== 0) return `perf record failed (exit ${r.status}): ${firstLines(r.stderr)} (is kernel.perf_event_paranoid too strict for this user?)`;
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `perf record` of one process's threads for `seconds`, with call graphs (for a later `perf report -g`). */
export class PerfRecording {
  private stderr = '';
  /** Resolves when the recording is written; rejects with what perf said if it failed. */
  readonly done: Promise<void>;

  constructor(pid: number, readonly file: string, seconds: number) {
    const args = ['record', '-q', '-e', 'cpu-clock', '-F', String(PERF_SAMPLE_HZ), '-g', '-p', String(pid), '-o', file, '--', 'sleep', String(seconds)];
    const proc = spawn('perf', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    proc.stderr!.setEncoding('utf8').on('data', (d: string) => {
      if (this.stderr.length < 4096) this.stderr += d;
    });
    this.done = new Promise((resolve, reject) => {
      proc.once('error', reject);
      proc.once('exit', (code, signal) => (code === 0 ? resolve() : reject(new Error(`perf record exited with ${signal ?? code}: ${firstLines(this.stderr)}`))));
    });
  }
}

/** One thread's share of a recording's samples, %. */
export interface ThreadShare {
  tid: number;
  percent: number;
}

/** One function's own (self) share of a thread's samples, %; `kernel` for kernel code. */
export interface FunctionShare {
  percent: number;
  kernel: boolean;
  name: string;
}

/**
 * A thread of the profiled process: what it is, its share of the process's samples, and for the
 * event loop and pipeline threads the share of its own samples in the kernel (system calls,
 * waking other threads, scheduling) and its top functions (null and empty for helper threads).
 */
export interface ThreadProfile extends ThreadShare {
  role: string;
  kernelPercent: number | null;
  top: FunctionShare[];
}

/** Rows of `perf report --sort pid --stdio` (`  44.95%    13295:node`; perf's "pid" is the thread id). */
export function parseThreadShares(text: string): ThreadShare[] {
  const rows: ThreadShare[] = [];
  for (const line of text.split('\n')) {
    const m = /^\s*(\d+(?:\.\d+)?)%\s+(\d+):/.exec(line);
    if (m) rows.push({ tid: Number(m[2]), percent: Number(m[1]) });
  }
  return rows;
}

/** Rows of `perf report --sort sym --stdio` (`  4.49%  [.] Builtins_LoadIC`, `[k]` for the kernel), names shortened by {@link shortName}. */
export function parseFunctionShares(text: string, limit = Infinity): FunctionShare[] {
  const rows: FunctionShare[] = [];
  for (const line of text.split('\n')) {
    if (rows.length >= limit) break;
    const m = /^\s*(\d+(?:\.\d+)?)%\s+\[(.)\]\s+(.*?)\s*$/.exec(line);
    if (m) rows.push({ percent: Number(m[1]), kernel: m[2] === 'k', name: shortName(m[3]!) });
  }
  return rows;
}

/**
 * A function's name as `perf` shows it, shortened: tsx's `?tsx-namespace=…` query and the
 * `file://` scheme go, paths start at the repository's package (`voice-pipeline/src/…`), and a
 * dependency's path keeps only `<package>/<file>` (`.pnpm/ws@8.23.0/node_modules/ws/lib/sender.js` → `ws/lib/sender.js`).
 */
export function shortName(name: string): string {
  return name
    .replace(/\?tsx-namespace=[0-9a-f-]+/g, '')
    .replace(/file:\/\//g, '')
    .replace(/\S*\/node_modules\/\.pnpm\/[^/\s]+\/node_modules\//g, '')
    .replace(/\S*\/(?=(?:control-plane|media-gateway|voice-pipeline|shared|loadtest)\/src\/)/g, '');
}

/** `perf report` on a recording, as text; throws with perf's message when it fails. */
function perfReport(file: string, args: string[]): string {
  const r = spawnSync('perf', ['report', '-i', file, '--stdio', '--no-children', '-g', 'none', ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, timeout: 120_000 });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`perf report failed (exit ${r.status}): ${firstLines(r.stderr)}`);
  return r.stdout;
}

/**
 * Reads a recording of process `pid`: every thread's share, and the top functions of its event
 * loop (the thread whose id is the pid) and of each pipeline thread (`pipelineTids`, from the
 * gateway's `vap_pipeline_thread_os_thread_id`); the other threads are V8's and libuv's helpers.
 */
export function readPerfProfile(file: string, pid: number, pipelineTids: readonly number[]): ThreadProfile[] {
  const shares = parseThreadShares(perfReport(file, ['--sort', 'pid']));
  return shares.map((s) => {
    const pipeline = pipelineTids.indexOf(s.tid);
    const role = s.tid === pid ? 'event loop' : pipeline >= 0 ? `pipeline thread ${pipeline}` : 'helper (V8 GC/compiler, libuv pool)';
    if (s.tid !== pid && pipeline < 0) return { ...s, role, kernelPercent: null, top: [] };
    const all = parseFunctionShares(perfReport(file, ['--tid', String(s.tid), '--sort', 'sym', '--percentage', 'relative']));
    const kernelPercent = all.reduce((sum, f) => sum + (f.kernel ? f.percent : 0), 0);
    return { ...s, role, kernelPercent, top: all.slice(0, TOP_FUNCTIONS) };
  });
}

/** The text report of one target's profile: threads, then each named thread's top functions. */
export function formatPerfProfile(target: string, seconds: number, threads: readonly ThreadProfile[]): string {
  const lines = [`${target}: on-CPU profile (perf, cpu-clock at ${PERF_SAMPLE_HZ} Hz, ${seconds} s of the steady state)`, '', 'thread                                     tid  share of the process\'s samples  of its own in the kernel'];
  for (const t of threads) lines.push(`${t.role.padEnd(36)} ${String(t.tid).padStart(9)}  ${`${t.percent.toFixed(2)} %`.padStart(31)}  ${(t.kernelPercent === null ? '-' : `${t.kernelPercent.toFixed(1)} %`).padStart(24)}`);
  for (const t of threads.filter((x) => x.top.length > 0)) {
    // In a VM without hardware counters, kernel samples land where interrupts are enabled again
    // (`finish_task_switch`, `_raw_spin_unlock_irq*`): read them as the kernel's time in all.
    lines.push('', `${t.role} (tid ${t.tid}): own time of each function, % of the thread's samples (JavaScript frames: * optimised, ^ baseline, ~ interpreted; [k] kernel)`);
    for (const f of t.top) lines.push(`${f.percent.toFixed(2).padStart(6)} %  ${f.kernel ? '[k] ' : ''}${f.name}`);
  }
  return `${lines.join('\n')}\n`;
}

function firstLines(text: string): string {
  return text.trim().split('\n').slice(0, 3).join(' / ') || 'no message';
}
