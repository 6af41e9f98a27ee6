/**
 * CI smoke of `pnpm bench:api`: the real entry as a child process, every scenario with tiny
 * settings (1 s warm-up, 2 s runs, open loop at 100 req/s) on the local Postgres, so the
 * tool cannot rot. Asserts the report's shape, zero errors and throughput in every run;
 * not the performance targets, which a shared machine under a 2 s run cannot judge.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { BenchReport, ScenarioFigures } from '../src/report.js';
import { MIX_LABELS } from '../src/api-mix.js';
import { postgresReachable, resultsFileOf, runScript, SMOKE_DATABASE_URL } from './api-smoke.js';

const reachable = await postgresReachable(SMOKE_DATABASE_URL);
const resultsDir = mkdtempSync(path.join(tmpdir(), 'vap-api-smoke-'));
afterAll(() => rmSync(resultsDir, { recursive: true, force: true }));

function expectServed(f: ScenarioFigures, scenario: string, target: ScenarioFigures['target']): void {
  expect(f).toMatchObject({ scenario, target, errors: 0, timeouts: 0, non2xx: 0 });
  expect(f.totalRequests).toBeGreaterThan(0);
  expect(f.requestsPerSec).toBeGreaterThan(0);
  for (const ms of [f.latencyP50Ms, f.latencyP95Ms, f.latencyP99Ms, f.latencyMaxMs]) expect(ms).toBeGreaterThan(0);
  expect(f.latencyP50Ms).toBeLessThanOrEqual(f.latencyP95Ms);
  expect(f.latencyP95Ms).toBeLessThanOrEqual(f.latencyP99Ms);
  expect(f.latencyP99Ms).toBeLessThanOrEqual(f.latencyMaxMs);
  // The serving process's CPU over the measured run, per request: something, and well under the run's wall time per request.
  expect(f.cpuMsPerRequest).toBeGreaterThan(0);
  expect(f.cpuMsPerRequest!).toBeLessThan((f.durationSec * 1000 * 2) / f.totalRequests);
  // The machine (Linux) was read over the run: busy while serving, steal a share.
  expect(f.machine!.busyShare).toBeGreaterThan(0);
  expect(f.machine!.busyShare).toBeLessThanOrEqual(1);
  expect(f.machine!.stealShare).toBeGreaterThanOrEqual(0);
  expect(f.machine!.stealShare).toBeLessThanOrEqual(f.machine!.busyShare);
  // The serving process was probed over the run: its loop (Linux: its thread ran), and the platform's pool only.
  const server = f.server!;
  expect(server.loopDelayP99Ms).toBeGreaterThanOrEqual(0);
  expect(server.loopDelayP99Ms).toBeLessThanOrEqual(server.loopDelayMaxMs);
  if (process.platform === 'linux') expect(server.loopRanMsPerSec).toBeGreaterThan(0);
  if (target === 'bare') expect(server.pool).toBeNull();
  else expect(server.pool!.samples).toBeGreaterThan(50);
}

describe.skipIf(!reachable)('pnpm bench:api (smoke)', () => {
  it('runs get-by-id, create and the open-loop mix against the platform and bare Fastify and writes a clean report', async () => {
    const run = await runScript('bench:api', ['--scenario', 'all', '--warmup', '1', '--duration', '2', '--rate', '100', '--connections', '4', '--results-dir', resultsDir], 100_000);
    expect(run.code, run.stderr).toBe(0);
    const file = resultsFileOf(run.stdout);
    expect(path.dirname(file)).toBe(path.resolve(resultsDir));
    const report = JSON.parse(readFileSync(file, 'utf8')) as BenchReport;

    expect(report).toMatchObject({ kind: 'api-bench', ok: true, failures: [] });
    expect(report.settings).toEqual({ scenario: 'all', durationSec: 2, warmupSec: 1, connections: 4, ratePerSec: 100, database: 'external' });
    expect(report.comparisons.map((c) => c.scenario)).toEqual(['get-by-id', 'create']);
    for (const c of report.comparisons) {
      expectServed(c.platform, c.scenario, 'platform');
      // Closed loop: a request is always in flight, so some sample saw a connection checked out.
      expect(c.platform.server!.pool!.busyMax).toBeGreaterThanOrEqual(1);
      expectServed(c.bare, c.scenario, 'bare');
      expect(c.ratioRequestsPerSec).toBeGreaterThan(0);
      expect(c.ratioCpuPerRequest).toBeGreaterThan(0);
    }

    const open = report.openLoop!;
    expect(open).toMatchObject({ scenario: 'mixed', requestedRatePerSec: 100, connections: 20, phases: 20, apiKeys: 4, readShare: 0.8 });
    expect(open.sequence).toHaveLength(20);
    expectServed(open.comparison.platform, 'mixed', 'platform');
    expectServed(open.comparison.bare, 'mixed', 'bare');
    // Every kind of request of the mix was answered 2xx by both.
    for (const side of [open.byRequest.platform, open.byRequest.bare]) {
      expect(side.map((r) => r.label).sort()).toEqual(Object.values(MIX_LABELS).sort());
      for (const r of side) expect(r.latency.samples, r.label).toBeGreaterThan(0);
      // Attributed per request and started at staggered positions, the answers keep the 80/20 mix.
      const count = (kind: string) => side.filter((r) => r.kind === kind).reduce((n, r) => n + r.latency.samples, 0);
      expect(count('read') / (count('read') + count('write'))).toBeCloseTo(0.8, 1);
    }
    expect(open.byRequest.platform.reduce((n, r) => n + r.latency.samples, 0)).toBe(open.comparison.platform.totalRequests);

    expect(report.targets.map((t) => t.name)).toEqual([
      'GET agent by id throughput vs bare Fastify',
      'open-loop mixed p99 at 100 req/s',
      'open-loop mixed errors + non-2xx',
      'open-loop mixed achieved rate',
    ]);
    for (const t of report.targets) expect(typeof t.pass).toBe('boolean');
    expect(report.targets[2]!.pass).toBe(true);

    // The HTML report next to the JSON, self-contained, with the figures in it.
    const htmlFile = file.replace(/\.json$/, '.html');
    expect(run.stdout).toContain(`HTML report: ${htmlFile}`);
    const html = readFileSync(htmlFile, 'utf8');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).not.toMatch(/<script[^>]+src=|<link[^>]+href=/i);
    expect(html).toContain('open-loop mixed p99 at 100 req/s');

    expect(run.stdout).toMatch(/^mixed\s+\d+/m);
    expect(run.stdout).toContain('the serving process during each measured run');
    expect(run.stdout).toMatch(/^bare mixed\s+[\d.]+ \/ [\d.]+\s+\d+ \/ \d+\s+-\s+-\s+-$/m);
    expect(html).toContain('The serving process');
    expect(run.stdout).toMatch(/^open-loop mixed errors \+ non-2xx\s+0\s+0 errors \(0 timeouts\), 0 non-2xx\s+PASS$/m);
  }, 120_000);
});
