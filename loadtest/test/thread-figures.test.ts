import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '@vap/shared';
import { gatewayCpuSplit, loopCoreWait, loopCoreWaitRows, pipelineThreadFigures, pipelineThreadRows } from '../src/calls/thread-figures.js';

const scrape = (at: number, lines: string[]) => ({ at, metrics: parsePrometheusText(lines.join('\n') + '\n') });
const BUSY = '# TYPE vap_pipeline_thread_busy_seconds_total counter';
const P99 = '# TYPE vap_pipeline_thread_eventloop_lag_p99_seconds gauge';
const MAX = '# TYPE vap_pipeline_thread_eventloop_lag_max_seconds gauge';

describe('pipelineThreadFigures', () => {
  it('gives each thread\'s busy share of the wall time between the scrapes and the worst thread\'s delay beyond the 10 ms period', () => {
    const before = scrape(1_000, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 2', 'vap_pipeline_thread_busy_seconds_total{thread="1"} 1']);
    const after = scrape(21_000, [
      BUSY,
      'vap_pipeline_thread_busy_seconds_total{thread="1"} 3',
      'vap_pipeline_thread_busy_seconds_total{thread="0"} 8',
      P99,
      'vap_pipeline_thread_eventloop_lag_p99_seconds{thread="0"} 0.0125',
      'vap_pipeline_thread_eventloop_lag_p99_seconds{thread="1"} 0.0181',
      MAX,
      'vap_pipeline_thread_eventloop_lag_max_seconds{thread="0"} 0.061',
    ]);
    const f = pipelineThreadFigures(before, after)!;
    // 6 s of 20 s busy, 2 s of 20 s: in pool order, whatever the text's order.
    expect(f.busyPercent.map((p) => Number(p.toFixed(6)))).toEqual([30, 10]);
    expect(f.loopDelayP99Ms).toBeCloseTo(8.1, 6);
    expect(f.loopDelayMaxMs).toBeCloseTo(51, 6);
  });

  it('counts a replaced thread from its own start, and has no delay when no thread answered', () => {
    const before = scrape(0, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 9']);
    const after = scrape(10_000, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 4', P99, MAX]);
    const f = pipelineThreadFigures(before, after)!;
    expect(f.busyPercent).toEqual([40]);
    expect(f.loopDelayP99Ms).toBeNull();
    expect(f.loopDelayMaxMs).toBeNull();
  });

  it("gives each thread's CPU time and wait for a core per second of the run, where the gateway reads them (Linux)", () => {
    const CPU = '# TYPE vap_pipeline_thread_cpu_seconds_total counter';
    const WAIT = '# TYPE vap_pipeline_thread_run_queue_wait_seconds_total counter';
    const before = scrape(0, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 1', 'vap_pipeline_thread_busy_seconds_total{thread="1"} 1', CPU, 'vap_pipeline_thread_cpu_seconds_total{thread="0"} 5', 'vap_pipeline_thread_cpu_seconds_total{thread="1"} 2', WAIT, 'vap_pipeline_thread_run_queue_wait_seconds_total{thread="0"} 1', 'vap_pipeline_thread_run_queue_wait_seconds_total{thread="1"} 0.5']);
    const after = scrape(40_000, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 21', 'vap_pipeline_thread_busy_seconds_total{thread="1"} 9', CPU, 'vap_pipeline_thread_cpu_seconds_total{thread="1"} 6', 'vap_pipeline_thread_cpu_seconds_total{thread="0"} 21', WAIT, 'vap_pipeline_thread_run_queue_wait_seconds_total{thread="0"} 13', 'vap_pipeline_thread_run_queue_wait_seconds_total{thread="1"} 2.5']);
    const f = pipelineThreadFigures(before, after)!;
    // Thread 0 ran 16 s and waited 12 s of 40 s; thread 1 ran 4 s and waited 2 s.
    expect(f.coreWait).toEqual([
      { ranMsPerSec: 400, waitedMsPerSec: 300 },
      { ranMsPerSec: 100, waitedMsPerSec: 50 },
    ]);
    expect(pipelineThreadRows(f)).toContainEqual(['pipeline threads ran / waited for a core, ms per s each', '400.0 / 300.0, 100.0 / 50.0', '-']);
    // Without the counters (off Linux): no figure and no row.
    const bare = pipelineThreadFigures(scrape(0, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 1']), scrape(10_000, [BUSY, 'vap_pipeline_thread_busy_seconds_total{thread="0"} 2']))!;
    expect(bare.coreWait).toBeUndefined();
    expect(pipelineThreadRows(bare).map((r) => r[0])).not.toContain('pipeline threads ran / waited for a core, ms per s each');
  });

  it('is null for a gateway without pipeline threads', () => {
    const none = scrape(0, ['# TYPE vap_active_calls gauge', 'vap_active_calls 0']);
    expect(pipelineThreadFigures(none, { ...none, at: 5_000 })).toBeNull();
  });
});

describe('gatewayCpuSplit', () => {
  const PROCESS = '# TYPE process_cpu_seconds_total counter';
  const LOOP = '# TYPE vap_gateway_loop_cpu_seconds_total counter';
  const THREAD = '# TYPE vap_pipeline_thread_cpu_seconds_total counter';

  it("splits what the process's CPU added between the scrapes into the loop, the pipeline threads together, and the rest", () => {
    const before = scrape(0, [PROCESS, 'process_cpu_seconds_total 100', LOOP, 'vap_gateway_loop_cpu_seconds_total 30', THREAD, 'vap_pipeline_thread_cpu_seconds_total{thread="0"} 40', 'vap_pipeline_thread_cpu_seconds_total{thread="1"} 9']);
    const after = scrape(60_000, [
      PROCESS,
      'process_cpu_seconds_total 140',
      LOOP,
      'vap_gateway_loop_cpu_seconds_total 44',
      THREAD,
      'vap_pipeline_thread_cpu_seconds_total{thread="0"} 56',
      // Thread 1 died and its replacement started from 0 (its counter went down): it counts what it did, 6 s.
      'vap_pipeline_thread_cpu_seconds_total{thread="1"} 6',
    ]);
    const split = gatewayCpuSplit(before, after)!;
    // Of 40 s: loop 14, threads 16 + 6 = 22, the rest 4.
    expect(split.loop).toBeCloseTo(0.35, 9);
    expect(split.pipelineThreads).toBeCloseTo(0.55, 9);
    expect(split.other).toBeCloseTo(0.1, 9);
  });

  it('never gives the rest below 0 (the threads count in 10 ms steps), and works without pipeline threads', () => {
    const before = scrape(0, [PROCESS, 'process_cpu_seconds_total 1.000', LOOP, 'vap_gateway_loop_cpu_seconds_total 0.5']);
    const after = scrape(1_000, [PROCESS, 'process_cpu_seconds_total 1.095', LOOP, 'vap_gateway_loop_cpu_seconds_total 0.6']);
    const split = gatewayCpuSplit(before, after)!;
    expect(split.loop).toBeCloseTo(0.1 / 0.095, 9);
    expect(split.pipelineThreads).toBe(0);
    expect(split.other).toBe(0);
  });

  it('is null without the loop counter (not Linux) or when the process used no CPU', () => {
    const bare = scrape(0, [PROCESS, 'process_cpu_seconds_total 1']);
    expect(gatewayCpuSplit(bare, { ...scrape(1_000, [PROCESS, 'process_cpu_seconds_total 2']) })).toBeNull();
    const idle = scrape(0, [PROCESS, 'process_cpu_seconds_total 1', LOOP, 'vap_gateway_loop_cpu_seconds_total 0.5']);
    expect(gatewayCpuSplit(idle, { ...idle, at: 1_000 })).toBeNull();
  });
});

describe('loopCoreWait', () => {
  const LOOP = '# TYPE vap_gateway_loop_cpu_seconds_total counter';
  const WAIT = '# TYPE vap_gateway_loop_run_queue_wait_seconds_total counter';

  it("gives the loop thread's run time and its wait for a core between the scrapes, ms per second of wall time", () => {
    const before = scrape(10_000, [LOOP, 'vap_gateway_loop_cpu_seconds_total 12', WAIT, 'vap_gateway_loop_run_queue_wait_seconds_total 3.5']);
    const after = scrape(50_000, [LOOP, 'vap_gateway_loop_cpu_seconds_total 20', WAIT, 'vap_gateway_loop_run_queue_wait_seconds_total 6.7']);
    const wait = loopCoreWait(before, after)!;
    // 8 s of CPU and 3.2 s of waiting over 40 s.
    expect(wait.ranMsPerSec).toBeCloseTo(200, 6);
    expect(wait.waitedMsPerSec).toBeCloseTo(80, 6);
    expect(loopCoreWaitRows(wait)).toEqual([['event-loop thread ran / waited for a core, ms per s', '200.0 / 80.0', '-']]);
  });

  it('is null without the wait counter (off Linux) or without time between the scrapes, and gives no row then', () => {
    const noWait = scrape(0, [LOOP, 'vap_gateway_loop_cpu_seconds_total 1']);
    expect(loopCoreWait(noWait, { ...noWait, at: 5_000 })).toBeNull();
    const withWait = scrape(0, [WAIT, 'vap_gateway_loop_run_queue_wait_seconds_total 1']);
    expect(loopCoreWait(withWait, withWait)).toBeNull();
    expect(loopCoreWaitRows(undefined)).toEqual([]);
  });
});
