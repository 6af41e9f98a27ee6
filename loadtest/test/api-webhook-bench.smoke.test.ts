/**
 * CI smoke of `pnpm bench:webhooks`: the real entry as a child process with a small burst
 * (20 events to 2 webhooks) on the local Postgres, so the tool cannot rot. Asserts the
 * report's shape, every delivery verified once and throughput in both phases; not the
 * ratio, which a burst this small cannot judge.
 */
import { readFileSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { DeliveryPhaseFigures, WebhookBenchReport } from '../src/webhook-report.js';
import { postgresReachable, resultsFileOf, runScript, SMOKE_DATABASE_URL } from './api-smoke.js';

const reachable = await postgresReachable(SMOKE_DATABASE_URL);

function expectDelivered(f: DeliveryPhaseFigures, phase: DeliveryPhaseFigures['phase'], expected: number): void {
  expect(f).toMatchObject({ phase, expected, delivered: expected, verifyFailures: 0, sendErrors: 0 });
  expect(f.deliveriesPerSec).toBeGreaterThan(0);
  expect(f.delay?.samples).toBe(expected);
  expect(f.delay!.p50Ms).toBeLessThanOrEqual(f.delay!.maxMs);
}

describe.skipIf(!reachable)('pnpm bench:webhooks (smoke)', () => {
  it('delivers a small burst through the outbox and straight to the receiver and writes a clean report', async () => {
    const run = await runScript('bench:webhooks', ['--events', '20', '--webhooks', '2'], 100_000);
    expect(run.code, run.stderr).toBe(0);
    // bench:webhooks has no results-dir flag: its report lands in loadtest/results/, removed here.
    const file = resultsFileOf(run.stdout);
    let report: WebhookBenchReport;
    try {
      report = JSON.parse(readFileSync(file, 'utf8')) as WebhookBenchReport;
    } finally {
      rmSync(file, { force: true });
    }
    expect(report).toMatchObject({ kind: 'webhook-bench', ok: true, failures: [] });
    expect(report.settings).toMatchObject({ events: 20, webhooks: 2, database: 'external' });
    expectDelivered(report.platform, 'platform', 40);
    expectDelivered(report.baseline, 'baseline', 40);
    expect(report.ratioDeliveriesPerSec).toBeGreaterThan(0);
    expect(report.stagingMs).toBeGreaterThan(0);
  }, 120_000);
});
