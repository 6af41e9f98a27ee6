import { describe, expect, it } from 'vitest';
import { loadCallBenchConfig } from '../src/calls/call-config.js';
import { BenchConfigError } from '../src/config.js';

function problems(argv: string[]): string[] {
  try {
    loadCallBenchConfig(argv);
  } catch (err) {
    if (err instanceof BenchConfigError) return err.problems;
    throw err;
  }
  throw new Error('expected a BenchConfigError');
}

describe('pnpm bench:calls options', () => {
  it('defaults to 50 calls, 10 s ramp, 30 s steady, 2 workers, relay on, STT at 0 ms', () => {
    const c = loadCallBenchConfig([]);
    expect(c).toMatchObject({ calls: 50, rampSec: 10, steadySec: 30, workers: 2, relay: true, sttLatencyMs: 0 });
    expect(c.outDir).toMatch(/loadtest\/results\/?$/);
    expect(c.cpuProfDir).toBeNull();
    expect(c.perfDir).toBeNull();
    // The gateway's own PIPELINE_THREADS and admission defaults apply, and it logs nothing.
    expect(c.pipelineThreads).toBeNull();
    expect(c.maxCalls).toBeNull();
    expect(c.overloadLagMs).toBeNull();
    expect(c.gatewayLogFile).toBeNull();
    expect(c.gatewayNodeFlags).toEqual([]);
    expect(c.ttsWebSocket).toBeNull();
    // One run, not a sweep.
    expect(c.sweep).toBeNull();
  });

  it('reads every option, through a bare -- from pnpm', () => {
    const c = loadCallBenchConfig(['--', '--calls', '200', '--ramp-sec', '20', '--steady-sec', '60', '--workers', '3', '--no-relay', '--stt-latency-ms', '150', '--out', '/tmp/x', '--cpu-prof', '/tmp/prof', '--perf', '/tmp/perf', '--pipeline-threads', '0', '--tts-websocket', 'stream-input', '--max-calls', '150', '--overload-lag-ms', '0', '--gateway-log', '/tmp/gw.log', '--gateway-node-flags', ' --max-semi-space-size=64  --trace-gc ']);
    expect(c).toEqual({ calls: 200, sweep: null, rampSec: 20, steadySec: 60, workers: 3, relay: false, sttLatencyMs: 150, outDir: '/tmp/x', cpuProfDir: '/tmp/prof', perfDir: '/tmp/perf', pipelineThreads: 0, ttsWebSocket: 'stream-input', maxCalls: 150, overloadLagMs: 0, gatewayLogFile: '/tmp/gw.log', gatewayNodeFlags: ['--max-semi-space-size=64', '--trace-gc'] });
    expect(loadCallBenchConfig(['--pipeline-threads', '4']).pipelineThreads).toBe(4);
  });

  it('takes no gateway flag that is not --name or --name=value (a value alone, a shell word)', () => {
    for (const bad of ['--expose-gc x', '-e', '--eval=1;2 --', '--name="a b"', '--=1']) expect(problems([`--gateway-node-flags=${bad}`]), bad).toHaveLength(1);
    // Flags start with '-', so the value goes after '=' (parseArgs reads a separate one as an option).
    expect(loadCallBenchConfig(['--gateway-node-flags=--trace-gc --max-semi-space-size=8']).gatewayNodeFlags).toEqual(['--trace-gc', '--max-semi-space-size=8']);
    expect(loadCallBenchConfig(['--gateway-node-flags', '']).gatewayNodeFlags).toEqual([]);
  });

  it('reads a sweep: rising call counts, the first as calls, caller processes for the largest', () => {
    const c = loadCallBenchConfig(['--', '--sweep', '50,100, 200', '--workers', '3', '--ramp-sec', '20']);
    expect(c).toMatchObject({ sweep: [50, 100, 200], calls: 50, workers: 3, rampSec: 20, relay: true });
    expect(Object.isFrozen(c.sweep)).toBe(true);
    // Each level runs min(workers, its calls) processes (call-bench.ts); here the largest level caps them.
    expect(loadCallBenchConfig(['--sweep', '1,2', '--workers', '4']).workers).toBe(2);
    expect(loadCallBenchConfig(['--sweep=1,1000']).sweep).toEqual([1, 1000]);
  });

  it.each([
    ['', 'call counts from 1 to 1000'],
    ['50,,100', 'call counts from 1 to 1000'],
    ['0,10', 'call counts from 1 to 1000'],
    ['10,1001', 'call counts from 1 to 1000'],
    ['10,20.5', 'call counts from 1 to 1000'],
    ['ten,20', 'call counts from 1 to 1000'],
    ['100', 'from 2 to 8 levels (got 1); for one, use --calls'],
    ['1,2,3,4,5,6,7,8,9', 'from 2 to 8 levels (got 9)'],
    ['100,50', 'levels must rise'],
    ['50,50', 'levels must rise'],
  ])('refuses --sweep %j, naming the option', (raw, message) => {
    const p = problems([`--sweep=${raw}`]);
    expect(p).toHaveLength(1);
    expect(p[0]).toMatch(/^--sweep: /);
    expect(p[0]).toContain(message);
  });

  it('refuses a sweep with --calls, and with a profile (each level would write beside the others)', () => {
    expect(problems(['--sweep', '10,20', '--calls', '10'])).toEqual(['--sweep: give either --calls (one run) or --sweep (a run at each level), not both']);
    expect(problems(['--sweep', '10,20', '--cpu-prof', '/tmp/p', '--perf', '/tmp/q'])).toEqual(['--cpu-prof: profile one level at a time (--calls), not a --sweep', '--perf: profile one level at a time (--calls), not a --sweep']);
  });

  it('never has more caller processes than calls', () => {
    expect(loadCallBenchConfig(['--calls', '1', '--workers', '4']).workers).toBe(1);
  });

  it('lists every bad value at once, naming the option', () => {
    const p = problems(['--calls', '0', '--ramp-sec=-1', '--steady-sec', '1.5', '--workers', 'two', '--stt-latency-ms', '99999', '--out', ' ', '--cpu-prof', '', '--perf', ' ', '--pipeline-threads', '17', '--tts-websocket', 'stream', '--max-calls=-1', '--overload-lag-ms', '60001', '--gateway-log', ' ', '--gateway-node-flags=--trace-gc max-semi-space-size=64']);
    expect(p).toHaveLength(14);
    expect(p.find((x) => x.startsWith('--gateway-node-flags:'))).toContain('"max-semi-space-size=64"');
    for (const name of ['--calls', '--ramp-sec', '--steady-sec', '--workers', '--stt-latency-ms', '--out', '--cpu-prof', '--perf', '--pipeline-threads', '--tts-websocket', '--max-calls', '--overload-lag-ms', '--gateway-log', '--gateway-node-flags']) expect(p.some((x) => x.startsWith(`${name}:`)), name).toBe(true);
  });

  it('refuses unknown options and stray arguments', () => {
    expect(problems(['--concurrency', '5'])[0]).toMatch(/concurrency/);
    expect(problems(['200']).length).toBeGreaterThan(0);
  });
});
