import { describe, expect, it } from 'vitest';
import { reportFileName } from '../src/report.js';
import { buildWebhookReport, formatWebhookTable, ratePerSec, summariseDelays, webhookFailures } from '../src/webhook-report.js';
import type { DeliveryPhaseFigures } from '../src/webhook-report.js';

function phase(p: DeliveryPhaseFigures['phase'], o: Partial<DeliveryPhaseFigures> = {}): DeliveryPhaseFigures {
  return {
    phase: p,
    expected: 2000,
    delivered: 2000,
    durationMs: 1000,
    deliveriesPerSec: 2000,
    delay: { p50Ms: 10, p95Ms: 20, p99Ms: 30, maxMs: 40, samples: 2000 },
    verifyFailures: 0,
    duplicates: 0,
    sendErrors: 0,
    ...o,
  };
}

const machine = { cpus: 2, cpuModel: 'test', node: 'v20', platform: 'linux', arch: 'x64' };
const settings = { events: 500, webhooks: 4, concurrency: 32, perWebhook: 4, database: 'external' as const };

describe('summariseDelays', () => {
  it('gives nearest-rank p50/p95/p99 and the max, whatever the input order', () => {
    const delays = Array.from({ length: 200 }, (_, i) => 200 - i); // 200 … 1
    expect(summariseDelays(delays)).toEqual({ p50Ms: 100, p95Ms: 190, p99Ms: 198, maxMs: 200, samples: 200 });
  });

  it('keeps a negative delay (arrival noticed before the commit returned) rather than hiding it', () => {
    expect(summariseDelays([-0.5, 3])).toMatchObject({ p50Ms: -0.5, maxMs: 3 });
  });

  it('is null when nothing arrived', () => {
    expect(summariseDelays([])).toBeNull();
  });
});

describe('ratePerSec', () => {
  it('counts per second over the window in milliseconds', () => {
    expect(ratePerSec(2000, 100, 2600)).toBe(800);
  });

  it('is 0 for an empty or inverted window, or nothing counted', () => {
    expect(ratePerSec(10, 5, 5)).toBe(0);
    expect(ratePerSec(10, 5, 4)).toBe(0);
    expect(ratePerSec(0, 0, 1000)).toBe(0);
  });
});

describe('webhookFailures', () => {
  it('is empty when every delivery arrived verified and every request succeeded', () => {
    expect(webhookFailures([phase('platform'), phase('baseline')])).toEqual([]);
  });

  it('names bad signatures, missing deliveries and send errors per phase', () => {
    expect(webhookFailures([phase('platform', { verifyFailures: 3, delivered: 1990 }), phase('baseline', { sendErrors: 2 })])).toEqual([
      'platform: 3 requests failed signature verification',
      'platform: 1990 of 2000 deliveries arrived',
      'baseline: 2 requests failed or answered non-2xx',
    ]);
  });
});

describe('buildWebhookReport', () => {
  const startedAt = new Date('2026-01-02T03:04:05.678Z');

  it('tracks platform deliveries/s over baseline deliveries/s', () => {
    const r = buildWebhookReport({ startedAt, settings, machine, stagingMs: 500, platform: phase('platform', { deliveriesPerSec: 900 }), baseline: phase('baseline', { deliveriesPerSec: 6000 }) });
    expect(r).toMatchObject({ kind: 'webhook-bench', startedAt: '2026-01-02T03:04:05.678Z', ok: true, failures: [] });
    expect(r.ratioDeliveriesPerSec).toBeCloseTo(0.15, 10);
  });

  it('has no ratio when the baseline delivered nothing, and is not ok', () => {
    const r = buildWebhookReport({ startedAt, settings, machine, stagingMs: 500, platform: phase('platform'), baseline: phase('baseline', { delivered: 0, deliveriesPerSec: 0, delay: null }) });
    expect(r.ratioDeliveriesPerSec).toBeNull();
    expect(r.ok).toBe(false);
  });

  it('prints the platform row with its ratio above the baseline row, "-" for missing delays', () => {
    const r = buildWebhookReport({ startedAt, settings, machine, stagingMs: 500, platform: phase('platform', { deliveriesPerSec: 900 }), baseline: phase('baseline', { deliveriesPerSec: 6000, delay: null }) });
    const lines = formatWebhookTable(r).split('\n');
    expect(lines[0]).toMatch(/^phase\s+deliveries\s+deliveries\/s\s+p50 ms\s+p95 ms\s+p99 ms\s+max ms\s+bad signatures\s+duplicates\s+ratio$/);
    expect(lines[2]).toMatch(/^platform .*2000\/2000\s+900\s+10\.0\s+20\.0\s+30\.0\s+40\.0\s+0\s+0\s+0\.150$/);
    expect(lines[3]).toMatch(/^ {2}baseline .*2000\/2000\s+6000\s+-\s+-\s+-\s+-\s+0\s+0$/);
  });

  it('is written under a sortable, file-system-safe name of its own kind', () => {
    expect(reportFileName(startedAt, 'webhook-bench')).toBe('webhook-bench-2026-01-02T03-04-05Z.json');
  });
});
