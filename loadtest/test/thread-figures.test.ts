import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '@vap/shared';
import { pipelineThreadFigures } from '../src/calls/thread-figures.js';

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

  it('is null for a gateway without pipeline threads', () => {
    const none = scrape(0, ['# TYPE vap_active_calls gauge', 'vap_active_calls 0']);
    expect(pipelineThreadFigures(none, { ...none, at: 5_000 })).toBeNull();
  });
});
