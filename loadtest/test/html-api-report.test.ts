import { describe, expect, it } from 'vitest';
import { renderApiReportHtml } from '../src/html/api-report.js';
import type { ApiReportView, ComparisonView, FiguresView } from '../src/html/api-report.js';
import type { BenchReport } from '../src/report.js';
import { markupProblems, occurrences } from './html-markup.js';

function figures(scenario: string, target: 'platform' | 'bare', requestsPerSec: number, p50: number, p99: number, extra: Partial<FiguresView> = {}): FiguresView {
  return { scenario, target, requestsPerSec, latencyP50Ms: p50, latencyP99Ms: p99, non2xx: 0, errors: 0, timeouts: 0, totalRequests: requestsPerSec * 10, durationSec: 10, ...extra };
}

function comparison(scenario: string, platform: FiguresView, bare: FiguresView): ComparisonView {
  return { scenario, platform, bare, ratioRequestsPerSec: platform.requestsPerSec / bare.requestsPerSec, ratioP99: platform.latencyP99Ms / bare.latencyP99Ms };
}

const machine = { cpus: 2, cpuModel: 'Test CPU', node: 'v20.19.0', platform: 'linux', arch: 'x64' };

/** A report as the first version of `pnpm bench:api` wrote it: closed loop only, p50/p99. */
function oldReport(): ApiReportView {
  return {
    startedAt: '2026-11-20T10:00:00.000Z',
    settings: { durationSec: 10, warmupSec: 2, connections: 10, database: 'external' },
    machine,
    comparisons: [comparison('GET /agents/{id}', figures('GET /agents/{id}', 'platform', 3120, 2.9, 7.41), figures('GET /agents/{id}', 'bare', 9875, 0.9, 2.2))],
    failures: [],
    ok: true,
  };
}

/** A report with p95/max, the open-loop mix and the targets. */
function newReport(): ApiReportView {
  const p = figures('mixed', 'platform', 996, 4.1, 18.72, { latencyP95Ms: 9.3, latencyMaxMs: 40.2, cpuMsPerRequest: 0.6117, machine: { busyShare: 0.58, stealShare: 0.09 } });
  const b = figures('mixed', 'bare', 1000, 0.6, 1.9, { latencyP95Ms: 1.1, latencyMaxMs: 5, cpuMsPerRequest: 0.1523 });
  return {
    ...oldReport(),
    settings: { scenario: 'all', durationSec: 10, warmupSec: 2, connections: 10, ratePerSec: 1000, database: 'external' },
    openLoop: {
      requestedRatePerSec: 1000,
      connections: 40,
      phases: 4,
      apiKeys: 8,
      sequence: ['GET /agents/{id}', 'GET /agents', 'POST /agents'],
      readShare: 0.8,
      comparison: { ...comparison('mixed', p, b), ratioCpuPerRequest: 0.6117 / 0.1523 },
      achievedShare: { platform: 0.996, bare: 1 },
      byRequest: {
        platform: [
          { label: 'GET /agents/{id}', kind: 'read', latency: { p50Ms: 3.2, p95Ms: 8, p99Ms: 14.25, maxMs: 30, samples: 7000 } },
          { label: 'POST /agents', kind: 'write', latency: { p50Ms: 6.1, p95Ms: 15, p99Ms: 24.5, maxMs: 40.2, samples: 2000 } },
        ],
        bare: [{ label: 'GET /agents/{id}', kind: 'read', latency: { p50Ms: 0.5, p95Ms: 1, p99Ms: 1.8, maxMs: 4, samples: 7000 } }],
      },
    },
    targets: [
      { name: 'GET agent by id throughput ÷ bare', limit: '>= 0.3x', measured: '0.32x', pass: true },
      { name: 'open-loop mixed p99 at 1000 req/s', limit: '<= 25 ms', measured: '18.72 ms', pass: true },
      { name: 'open-loop mixed errors', limit: '= 0', measured: '3', pass: false },
    ],
  };
}

function render(view: ApiReportView): string {
  // A JSON file of either version is read as a BenchReport; the page must take both.
  return renderApiReportHtml(view as unknown as BenchReport);
}

describe('renderApiReportHtml', () => {
  it('renders an old report (closed loop only) as a well-formed page with its figures', () => {
    const html = render(oldReport());
    expect(markupProblems(html)).toEqual([]);
    expect(occurrences(html, '<svg')).toBe(2);
    expect(html).toContain('GET /agents/{id} (0.32x)'); // ratio in the throughput label
    expect(html).toContain('<td class="num">3120</td>');
    expect(html).toContain('<td class="num">7.41</td>');
    expect(html).toContain('<td class="num">0.316</td>');
    expect(html).not.toContain('Open-loop');
    expect(html).not.toContain('PASS');
  });

  it('renders the open-loop section, p95/max and the targets when present', () => {
    const html = render(newReport());
    expect(markupProblems(html)).toEqual([]);
    expect(occurrences(html, '<svg')).toBe(5);
    expect(html).toContain('Open-loop mixed traffic');
    expect(html).toContain('requested 1000 req/s; achieved 99.6 % of it on the platform, 100.0 % on bare Fastify; 80 % reads');
    expect(html).toContain('<td class="num">18.72</td>');
    expect(html).toContain('<td class="num">40.20</td>'); // max
    expect(html).toContain('<td class="num">24.50</td>'); // POST p99
    expect(html).toContain('<td class="num">612</td>'); // platform CPU µs per request
    expect(html).toContain('<td class="num">152</td>');
    expect(html).toContain('<td class="num">4.02</td>'); // CPU ratio
    expect(html).toContain('busy / steal %: mixed 58 / 9'); // the bare run read no machine load
    expect(html).toContain('WARNING steal above 5 % in mixed');
    expect(occurrences(html, '<td class="pass">PASS</td>')).toBe(2);
    expect(occurrences(html, '<td class="fail">FAIL</td>')).toBe(1);
  });

  it("shows the serving process's loop and pool per run when the report has them, and no such section before", () => {
    expect(render(newReport())).not.toContain('The serving process');
    const view = newReport();
    const server = { loopDelayP50Ms: 0.3, loopDelayP99Ms: 14.26, loopDelayMaxMs: 61.5, loopRanMsPerSec: 498.2, loopWaitedMsPerSec: 301.7, pool: { waitingMax: 6, waitingShare: 0.031, busyMax: 10, samples: 998 } };
    view.openLoop!.comparison.platform.server = server;
    view.openLoop!.comparison.bare.server = { ...server, loopDelayP99Ms: 2.04, loopDelayMaxMs: 3.96, loopRanMsPerSec: 95.4, loopWaitedMsPerSec: 12.2, pool: null };
    const html = render(view);
    expect(markupProblems(html)).toEqual([]);
    expect(html).toContain('<h2>The serving process</h2>');
    expect(html).toContain('<td class="num">14.3 / 61.5</td>');
    expect(html).toContain('<td class="num">498 / 302</td>');
    expect(html).toContain('<td class="num">3.1 %</td>');
    expect(html).toContain('<td>bare mixed</td><td class="num">2.0 / 4.0</td><td class="num">95 / 12</td><td class="num">-</td>');
  });

  it('lists the failures and escapes what the run named', () => {
    const view = oldReport();
    view.ok = false;
    view.failures = ['GET /agents/<id> & co: 3 non-2xx responses'];
    const html = render(view);
    expect(markupProblems(html)).toEqual([]);
    expect(html).toContain('NOT OK');
    expect(html).toContain('<li>GET /agents/&lt;id&gt; &amp; co: 3 non-2xx responses</li>');
  });
});
