import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '@vap/shared';
import { GatewayMetrics } from '../../src/metrics/gateway-metrics.js';
import { currentThreadId, threadCpuMs } from '../../src/pipeline-threads/thread-cpu.js';
import type { PipelineThreadStats } from '../../src/pipeline-threads/pipeline-threads.js';
import { TaggedCounter } from '../../src/twilio/tagged-counter.js';

function metrics(pipelineThreads?: () => Promise<PipelineThreadStats[]>): GatewayMetrics {
  return new GatewayMetrics({
    activeCalls: () => 0,
    acceptingCalls: () => true,
    pacerStats: () => ({ ticks: 0, lateTicks: 0, maxTickLatenessMs: 0, streams: 0 }),
    mediaStreamClosed: new TaggedCounter('svc.telephony.media_stream_closed', 'reason'),
    lateGapMs: 40,
    ...(pipelineThreads ? { pipelineThreads } : {}),
  });
}

describe('pipeline-thread metrics', () => {
  it('ask the threads once per scrape and show each thread under its place in the pool', async () => {
    let asks = 0;
    let busyMs = 1500;
    const m = metrics(async () => {
      asks++;
      return [
        { thread: 0, calls: 3, busyMs, cpuMs: busyMs - 300, tid: 4242, runQueueWaitMs: busyMs / 10, loopDelay: { p50Ns: 10.1e6, p99Ns: 14e6, maxNs: 31e6 } },
        // Did not answer in time: calls and busy time, no delay; its CPU time could not be read.
        { thread: 1, calls: 2, busyMs: 250, cpuMs: null, tid: null, runQueueWaitMs: null, loopDelay: null },
      ];
    });
    const first = parsePrometheusText(await m.registry.metrics());
    expect(asks).toBe(1);
    expect(first.types.get('vap_pipeline_thread_busy_seconds_total')).toBe('counter');
    expect(first.value('vap_pipeline_thread_calls', { thread: '0' })).toBe(3);
    expect(first.value('vap_pipeline_thread_calls', { thread: '1' })).toBe(2);
    expect(first.value('vap_pipeline_thread_busy_seconds_total', { thread: '0' })).toBe(1.5);
    expect(first.value('vap_pipeline_thread_busy_seconds_total', { thread: '1' })).toBe(0.25);
    expect(first.types.get('vap_pipeline_thread_cpu_seconds_total')).toBe('counter');
    expect(first.value('vap_pipeline_thread_cpu_seconds_total', { thread: '0' })).toBe(1.2);
    expect(first.samples.filter((s) => s.name === 'vap_pipeline_thread_cpu_seconds_total' && s.labels['thread'] === '1')).toEqual([]);
    expect(first.types.get('vap_pipeline_thread_run_queue_wait_seconds_total')).toBe('counter');
    expect(first.value('vap_pipeline_thread_run_queue_wait_seconds_total', { thread: '0' })).toBe(0.15);
    expect(first.samples.filter((s) => s.name === 'vap_pipeline_thread_run_queue_wait_seconds_total' && s.labels['thread'] === '1')).toEqual([]);
    expect(first.types.get('vap_pipeline_thread_os_thread_id')).toBe('gauge');
    expect(first.value('vap_pipeline_thread_os_thread_id', { thread: '0' })).toBe(4242);
    expect(first.samples.filter((s) => s.name === 'vap_pipeline_thread_os_thread_id' && s.labels['thread'] === '1')).toEqual([]);
    expect(first.value('vap_pipeline_thread_eventloop_lag_p99_seconds', { thread: '0' })).toBeCloseTo(0.014, 9);
    expect(first.value('vap_pipeline_thread_eventloop_lag_max_seconds', { thread: '0' })).toBeCloseTo(0.031, 9);
    expect(first.samples.filter((s) => s.name.startsWith('vap_pipeline_thread_eventloop_lag') && s.labels['thread'] === '1')).toEqual([]);

    // The next scrape shows the new figures, not a sum with the previous ones.
    busyMs = 2500;
    const second = parsePrometheusText(await m.registry.metrics());
    expect(asks).toBe(2);
    expect(second.value('vap_pipeline_thread_busy_seconds_total', { thread: '0' })).toBe(2.5);
    expect(second.value('vap_pipeline_thread_cpu_seconds_total', { thread: '0' })).toBe(2.2);
    expect(second.value('vap_pipeline_thread_run_queue_wait_seconds_total', { thread: '0' })).toBe(0.25);
    expect(second.value('vap_pipeline_thread_calls', { thread: '0' })).toBe(3);
  });

  it('are absent when sessions run on the gateway\'s loop', async () => {
    const text = await metrics().registry.metrics();
    // No family of that name (the loop CPU counter's help mentions one).
    expect(text).not.toMatch(/^(# (HELP|TYPE) )?vap_pipeline_thread/m);
    if (process.platform === 'linux') expect(text).toMatch(/^# TYPE vap_gateway_loop_cpu_seconds_total counter$/m);
  });

  it("show the gateway loop thread's CPU time, which grows with the work the loop does (Linux)", async (ctx) => {
    if (process.platform !== 'linux') return ctx.skip();
    const m = metrics();
    const read = async () => parsePrometheusText(await m.registry.metrics()).value('vap_gateway_loop_cpu_seconds_total');
    const before = await read();
    // Spin until this thread has used 300 ms of CPU (by /proc, thread-cpu.test.ts checks that reading), however busy the machine.
    const tid = currentThreadId()!;
    const from = threadCpuMs(tid)!;
    const giveUpAt = performance.now() + 20_000;
    while (threadCpuMs(tid)! - from < 300 && performance.now() < giveUpAt);
    const after = await read();
    // In whole ms (the readings come in 10 ms steps): seconds subtract with a rounding error (0.29999999999999993 in one run).
    const addedMs = Math.round((after - before) * 1000);
    expect(addedMs).toBeGreaterThanOrEqual(300);
    expect(addedMs).toBeLessThanOrEqual(350);
  });
});

describe('admission metrics', () => {
  function admissionMetrics(accepting: () => boolean, overloadLagMs?: () => number): GatewayMetrics {
    return new GatewayMetrics({
      activeCalls: () => 0,
      acceptingCalls: accepting,
      pacerStats: () => ({ ticks: 0, lateTicks: 0, maxTickLatenessMs: 0, streams: 0 }),
      mediaStreamClosed: new TaggedCounter('svc.telephony.media_stream_closed', 'reason'),
      lateGapMs: 40,
      ...(overloadLagMs ? { overloadLagMs } : {}),
    });
  }

  it('show whether calls are taken and the lag the overload rule read, as of each scrape', async () => {
    let accepting = true;
    let lagMs = 40;
    const m = admissionMetrics(() => accepting, () => lagMs);
    const first = parsePrometheusText(await m.registry.metrics());
    expect(first.value('vap_accepting_calls')).toBe(1);
    expect(first.value('vap_overload_lag_seconds')).toBe(0.04);
    accepting = false;
    lagMs = 1250;
    const second = parsePrometheusText(await m.registry.metrics());
    expect(second.value('vap_accepting_calls')).toBe(0);
    expect(second.value('vap_overload_lag_seconds')).toBe(1.25);
  });

  it('has no lag gauge when the overload rule is off (nothing reads the lag)', async () => {
    const scraped = parsePrometheusText(await admissionMetrics(() => true).registry.metrics());
    expect(scraped.value('vap_accepting_calls')).toBe(1);
    expect(scraped.types.has('vap_overload_lag_seconds')).toBe(false);
  });
});
