import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { PERF_NODE_FLAG, PerfRecording, formatPerfProfile, parseFunctionShares, parseThreadShares, perfProblem, readPerfProfile, shortName } from '../src/calls/perf-profile.js';

/** `perf report --sort pid --stdio --no-children -g none`, as perf 6.1 prints it. */
const THREADS_TEXT = `# To display the perf.data header info, please use --header/--header-only options.
#
# Samples: 9K of event 'cpu-clock'
# Event count (approx.): 19044088024
#
# Overhead      Pid:Command
# ........  ...............
#
    44.95%    13295:node   
    40.06%    13248:node   
     3.85%    13265:node   


#
`;

/** `perf report --tid T --sort sym --percentage relative ...` (names as Node's perf map writes them). */
const FUNCTIONS_TEXT = `#
# Overhead  Symbol
# ........  ......
#
     4.49%  [.] Builtins_LoadIC
     4.49%  [.] JS:*connect file:///work/main/voice-pipeline/src/processors/stt-processor.ts?tsx-namespace=dd1bb7f1-92ef-4fa7-a42d-30d43d89bf51:1:2339
     2.74%  [k] irqentry_exit_to_user_mode
     1.85%  [.] JS:*frame /work/main/node_modules/.pnpm/ws@8.23.0/node_modules/ws/lib/sender.js:79:15
     0.12%  [.] JS:*decode file:///work/main/node_modules/.pnpm/openai@6.49.0_@aws-sdk+credential-provider-node@3.972.97_zod@4.6.7/node_modules/openai/internal/decoders/line.mjs?tsx-namespace=e2b74e51-c0b1-43f8-8cf2-c5972652f7da:17:11
     0.05%  [k] tcp_sendmsg_locked
`;

describe('perf report parsing', () => {
  it("reads each thread's share (perf's pid column is the thread id)", () => {
    expect(parseThreadShares(THREADS_TEXT)).toEqual([
      { tid: 13295, percent: 44.95 },
      { tid: 13248, percent: 40.06 },
      { tid: 13265, percent: 3.85 },
    ]);
    expect(parseThreadShares('# nothing recorded\n')).toEqual([]);
  });

  it('reads functions with their own share, kernel or not, and shortens their paths', () => {
    const rows = parseFunctionShares(FUNCTIONS_TEXT);
    expect(rows.map((r) => r.name)).toEqual([
      'Builtins_LoadIC',
      'JS:*connect voice-pipeline/src/processors/stt-processor.ts:1:2339',
      'irqentry_exit_to_user_mode',
      'JS:*frame ws/lib/sender.js:79:15',
      'JS:*decode openai/internal/decoders/line.mjs:17:11',
      'tcp_sendmsg_locked',
    ]);
    expect(rows.map((r) => r.kernel)).toEqual([false, false, true, false, false, true]);
    expect(rows[0]!.percent).toBe(4.49);
    expect(parseFunctionShares(FUNCTIONS_TEXT, 2)).toHaveLength(2);
    expect(shortName('JS:~open node:internal/dns:10:1')).toBe('JS:~open node:internal/dns:10:1');
  });

  it('formats a table of threads and the top functions of the named ones', () => {
    const text = formatPerfProfile('gateway', 30, [
      { tid: 10, percent: 40, role: 'event loop', kernelPercent: 31.5, top: [{ percent: 7, kernel: false, name: 'Builtins_LoadIC' }] },
      { tid: 12, percent: 45, role: 'pipeline thread 0', kernelPercent: 12, top: [{ percent: 2.5, kernel: true, name: 'tcp_sendmsg_locked' }] },
      { tid: 11, percent: 15, role: 'helper (V8 GC/compiler, libuv pool)', kernelPercent: null, top: [] },
    ]);
    expect(text).toContain('30 s of the steady state');
    expect(text).toMatch(/^event loop\s+10\s+40\.00 %\s+31\.5 %$/m);
    expect(text).toMatch(/^helper \(V8 GC\/compiler, libuv pool\)\s+11\s+15\.00 %\s+-$/m);
    expect(text).toMatch(/^pipeline thread 0 \(tid 12\): own time/m);
    expect(text).toMatch(/^ {2}2\.50 % {2}\[k\] tcp_sendmsg_locked$/m);
    expect(text).not.toMatch(/^helper .*\(tid 11\)/m);
  });
});

/** A Node process spinning in a named function on its main thread and in another in a worker; it prints the worker's thread id. */
const SPINNER = `
const { Worker } = require('node:worker_threads');
function spinOnTheLoop(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) for (let i = 0; i < 1e4; i++) x += Math.sqrt(i); return x; }
const worker = new Worker(\`
  const { parentPort } = require('node:worker_threads');
  const tid = Number(require('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
  function spinInAWorker(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) for (let i = 0; i < 1e4; i++) x += Math.sqrt(i); return x; }
  parentPort.postMessage(tid);
  spinInAWorker(4000);
\`, { eval: true });
worker.once('message', (tid) => { console.log(tid); spinOnTheLoop(4000); });
`;

describe('an on-CPU profile with the real perf (Linux)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vap-perf-test-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('names the event loop and the worker thread and finds each one\'s spinning function', { timeout: 60_000 }, async (ctx) => {
    const problem = process.platform === 'linux' ? perfProblem() : 'not Linux';
    if (problem !== null) return ctx.skip(problem);
    const script = join(dir, 'spinner.cjs');
    writeFileSync(script, SPINNER);
    const child = spawn(process.execPath, [PERF_NODE_FLAG, script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      const firstLine = await new Promise<string>((resolve) => createInterface({ input: child.stdout! }).once('line', resolve));
      const workerTid = Number(firstLine);
      expect(Number.isInteger(workerTid) && workerTid !== child.pid).toBe(true);
      // Both spin for 4 s from here: record 2 s of it, after they have been optimised.
      await new Promise((r) => setTimeout(r, 800));
      const recording = new PerfRecording(child.pid!, join(dir, 'spin.perf.data'), 2);
      await recording.done;
      const threads = readPerfProfile(recording.file, child.pid!, [workerTid]);
      const loop = threads.find((t) => t.tid === child.pid);
      const worker = threads.find((t) => t.tid === workerTid);
      expect(loop?.role).toBe('event loop');
      expect(worker?.role).toBe('pipeline thread 0');
      // Two threads spinning: each holds a large share of the process's samples, and its own function most of its own.
      expect(loop!.percent).toBeGreaterThan(25);
      expect(worker!.percent).toBeGreaterThan(25);
      expect(threads.reduce((sum, t) => sum + t.percent, 0)).toBeLessThanOrEqual(100.5);
      const share = (t: typeof loop, fn: string) => t!.top.filter((f) => f.name.includes(fn)).reduce((sum, f) => sum + f.percent, 0);
      expect(share(loop, 'spinOnTheLoop')).toBeGreaterThan(30);
      expect(share(worker, 'spinInAWorker')).toBeGreaterThan(30);
      expect(share(loop, 'spinInAWorker')).toBe(0);
      for (const t of [loop!, worker!]) {
        expect(t.kernelPercent).toBeGreaterThanOrEqual(0);
        expect(t.kernelPercent).toBeLessThan(50);
      }
      expect(threads.filter((t) => t !== loop && t !== worker).every((t) => t.role.startsWith('helper') && t.top.length === 0 && t.kernelPercent === null)).toBe(true);
    } finally {
      child.kill('SIGKILL');
      await exited;
      // V8 writes the function names for perf there, whatever TMPDIR says.
      rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
    }
  });
});
