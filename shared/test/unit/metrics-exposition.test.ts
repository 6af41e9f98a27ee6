import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { metricsExposition, parsePrometheusText } from '../../src/index.js';

describe('metrics exposition', () => {
  it('serves the process metrics and the registry of the service, and parses back', async () => {
    const registry = new Registry();
    const c = new Counter({ name: 'test_things_total', help: 'Things', labelNames: ['kind'], registers: [registry] });
    const h = new Histogram({ name: 'test_wait_seconds', help: 'Waits', buckets: [0.1, 1], registers: [registry] });
    c.inc({ kind: 'a "quoted"\\one' }, 2);
    h.observe(0.5);
    const parsed = parsePrometheusText(await metricsExposition(registry));
    expect(parsed.value('test_things_total', { kind: 'a "quoted"\\one' })).toBe(2);
    expect(parsed.value('test_wait_seconds_bucket', { le: '0.1' })).toBe(0);
    expect(parsed.value('test_wait_seconds_bucket', { le: '1' })).toBe(1);
    expect(parsed.value('test_wait_seconds_count')).toBe(1);
    expect(parsed.types.get('process_resident_memory_bytes')).toBe('gauge');
    expect(parsed.types.get('nodejs_eventloop_lag_p99_seconds')).toBe('gauge');
    expect(parsed.value('process_resident_memory_bytes')).toBeGreaterThan(0);
  });

  it("counts the process's CPU since it started, not since the first scrape (as Prometheus' process_cpu_* say)", async () => {
    // Whenever this process first scraped, the counters hold all its CPU so far: this test file's imports alone took more than 50 ms.
    const before = process.cpuUsage();
    const parsed = parsePrometheusText(await metricsExposition(new Registry()));
    const after = process.cpuUsage();
    const total = parsed.value('process_cpu_seconds_total');
    expect(total).toBeGreaterThan(0.05);
    // Only the CPU of the registration itself (prom-client reads its baseline after ours) is not counted: well under 10 ms.
    expect(total).toBeGreaterThanOrEqual((before.user + before.system) / 1e6 - 0.01);
    expect(total).toBeLessThanOrEqual((after.user + after.system) / 1e6 + 1e-6);
    expect(parsed.value('process_cpu_user_seconds_total')).toBeGreaterThanOrEqual(before.user / 1e6 - 0.01);
    expect(parsed.value('process_cpu_system_seconds_total')).toBeLessThanOrEqual(after.system / 1e6 + 1e-6);
    expect(parsed.value('process_cpu_user_seconds_total') + parsed.value('process_cpu_system_seconds_total')).toBeCloseTo(total, 6);
  });

  it('rejects illegal names, undeclared samples and bad values, naming the line', () => {
    expect(() => parsePrometheusText('# TYPE svc.telephony.api_errors counter\n')).toThrow(/line 1: illegal metric name/);
    expect(() => parsePrometheusText('# TYPE a counter\nb 1\n')).toThrow(/line 2: sample b has no # TYPE/);
    expect(() => parsePrometheusText('# TYPE a counter\na{x="1"} one\n')).toThrow(/line 2: bad sample value/);
    expect(() => parsePrometheusText('# TYPE a counter\na{1x="1"} 1\n')).toThrow(/illegal label name/);
    expect(() => parsePrometheusText('# TYPE a counter\na{x=1} 1\n')).toThrow(/not quoted/);
  });
});
