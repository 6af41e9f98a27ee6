/**
 * `pnpm flame -- <file.cpuprofile> [--from <s>] [--to <s>] [--min-percent <p>] [--out <file.html>]`:
 * the flame graph page of a V8 CPU profile (from `bench:calls -- --cpu-prof`, `bench:api -- --cpu-prof`
 * or any `node --cpu-prof`), written beside it, and its largest self-time functions on the terminal.
 * `--from`/`--to` keep only that window, in seconds from the profile's start.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildProfileTree, clockReading, type CpuProfile, monotonicUsAtEpochMs, parseCpuProfile } from './cpu-profile-tree.js';
import { DEFAULT_MIN_SHARE, renderFlameGraphPage, topFunctionsText } from './flame-graph.js';

export const FLAME_USAGE = 'Usage: pnpm flame -- <file.cpuprofile> [--from <s>] [--to <s>] [--min-percent <p>] [--out <file.html>]';

export interface FlameCliOptions {
  file: string;
  fromSec: number | null;
  toSec: number | null;
  minShare: number;
  out: string;
}

/** The options of `argv` (relative paths resolved against `cwd`), or the problems with them (each naming its flag). */
export function parseFlameArgs(argv: string[], cwd = process.cwd()): { options: FlameCliOptions } | { problems: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args: argv.filter((a) => a !== '--'), allowPositionals: true, options: { from: { type: 'string' }, to: { type: 'string' }, 'min-percent': { type: 'string' }, out: { type: 'string' } } });
  } catch (err) {
    return { problems: [err instanceof Error ? err.message : String(err)] };
  }
  const { values, positionals } = parsed;
  const problems: string[] = [];
  if (positionals.length !== 1) problems.push(`expected one profile file, got ${positionals.length}`);
  const seconds = (flag: string, v: string | undefined): number | null => {
    if (v === undefined) return null;
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < 0) {
      problems.push(`--${flag}: must be a number of seconds >= 0 (got "${v}")`);
      return null;
    }
    return n;
  };
  const fromSec = seconds('from', values.from);
  const toSec = seconds('to', values.to);
  if (fromSec !== null && toSec !== null && toSec <= fromSec) problems.push(`--to: must be after --from (${toSec} <= ${fromSec})`);
  let minShare = DEFAULT_MIN_SHARE;
  if (values['min-percent'] !== undefined) {
    const p = Number(values['min-percent']);
    if (values['min-percent'].trim() === '' || !Number.isFinite(p) || p < 0 || p >= 100) problems.push(`--min-percent: must be a number from 0 to under 100 (got "${values['min-percent']}")`);
    else minShare = p / 100;
  }
  if (values.out !== undefined && values.out.trim() === '') problems.push('--out: must be a file path');
  if (problems.length > 0) return { problems };
  const file = resolve(cwd, positionals[0]!);
  return { options: { file, fromSec, toSec, minShare, out: values.out !== undefined ? resolve(cwd, values.out) : `${file.replace(/\.cpuprofile$/, '')}.flame.html` } };
}

/** Writes the page; its lines for the terminal. Throws (with the file named) when the profile cannot be read or `--from` is past its end. */
export function writeFlameGraph(options: FlameCliOptions): string[] {
  const profile = parseCpuProfile(readProfileText(options.file), options.file);
  const spanSec = (profile.endTime - profile.startTime) / 1e6;
  if (options.fromSec !== null && options.fromSec >= spanSec) throw new Error(`--from: ${options.fromSec} s is at or past the end of ${options.file}, which spans ${spanSec.toFixed(1)} s`);
  const fromUs = options.fromSec === null ? undefined : profile.startTime + options.fromSec * 1e6;
  const toUs = options.toSec === null ? undefined : profile.startTime + options.toSec * 1e6;
  const tree = buildProfileTree(profile, { fromUs, toUs });
  const window = options.fromSec === null && options.toSec === null ? `the whole profile, ${spanSec.toFixed(1)} s` : `${(options.fromSec ?? 0).toFixed(1)}–${Math.min(options.toSec ?? spanSec, spanSec).toFixed(1)} s of ${spanSec.toFixed(1)} s`;
  writeFileSync(options.out, renderFlameGraphPage(tree, { title: basename(options.file), file: options.file, window }, { minShare: options.minShare }));
  return [`flame graph of ${options.file} (${window}, busy ${(tree.busyUs / 1000).toFixed(0)} ms) written to ${options.out}`, 'largest self time, % of busy:', ...topFunctionsText(tree)];
}

/** The file's text; a file that is not there or not a file gets an error that says so in words, naming it. */
function readProfileText(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new Error(`${file}: no such file`);
    if (code === 'EISDIR') throw new Error(`${file}: a directory, not a CPU profile (a .cpuprofile file)`);
    throw err;
  }
}

/** Node's `--cpu-prof` files of process `pid` in `dir` (`CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`), thread 0 (the main thread) first. */
export function profilesOfProcess(dir: string, pid: number): { file: string; thread: number }[] {
  const found: { file: string; thread: number }[] = [];
  // No directory: the process wrote no profile (Node makes it when it writes the first).
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const m = /^CPU\.\d+\.\d+\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(name);
    if (m && Number(m[1]) === pid) found.push({ file: join(dir, name), thread: Number(m[2]) });
  }
  return found.sort((a, b) => a.thread - b.thread);
}

/** What a thread of ours is, from the code its profile ran: the main thread's event loop, a pipeline thread, a recording encoder. */
export function threadLabel(profile: CpuProfile, thread: number): string {
  if (thread === 0) return 'event loop (main thread)';
  const urls = profile.nodes.map((n) => n.callFrame.url);
  if (urls.some((u) => u.includes('pipeline-worker'))) return `pipeline thread (thread ${thread})`;
  if (urls.some((u) => u.includes('encoder-worker'))) return `recording encoder (thread ${thread})`;
  // Node runs module loader hooks (tsx's) on a thread of their own.
  if (urls.some((u) => u.includes('/tsx/dist/')) && !urls.some((u) => u.startsWith('file://') && !u.includes('/node_modules/'))) return `module loader hooks (tsx, thread ${thread})`;
  return `worker thread ${thread}`;
}

/**
 * A flame graph page beside each `--cpu-prof` file of process `pid`, of the window between
 * epoch ms `fromAt` and `toAt` (the bench's steady state); one line each for the terminal.
 * A profile that cannot be read, or none at all, gets a line saying so, not an exception: the
 * run's report is written after this.
 */
export function writeProcessFlameGraphs(dir: string, pid: number, name: string, window: { fromAt: number; toAt: number; words: string }): string[] {
  const lines: string[] = [];
  const reading = clockReading();
  const profiles = profilesOfProcess(dir, pid);
  // A process killed (SIGKILL after its grace) writes none.
  if (profiles.length === 0) lines.push(`${name}: no CPU profile of process ${pid} in ${dir} (it did not exit by itself), so no flame graph`);
  for (const { file, thread } of profiles) {
    try {
      const profile = parseCpuProfile(readFileSync(file, 'utf8'), file);
      const tree = buildProfileTree(profile, { fromUs: monotonicUsAtEpochMs(window.fromAt, reading), toUs: monotonicUsAtEpochMs(window.toAt, reading) });
      const label = `${name}, ${threadLabel(profile, thread)}`;
      const out = file.replace(/\.cpuprofile$/, '.flame.html');
      writeFileSync(out, renderFlameGraphPage(tree, { title: label, file, window: window.words }));
      const top = tree.functions[0];
      lines.push(`${label}: flame graph of ${window.words} in ${out} (busy ${(tree.busyUs / 1000).toFixed(0)} ms${top ? `; most self time: ${top.name}, ${((top.selfUs / Math.max(1, tree.busyUs)) * 100).toFixed(1)} %` : ''})`);
    } catch (err) {
      lines.push(`${name}: no flame graph for ${file}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return lines;
}
