import { fixed, quantile, textTable } from './report.js';
import type { MachineInfo } from './report.js';

/** Delay percentiles in milliseconds. */
export interface DelaySummary {
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  maxMs: number;
  /** How many delays they were computed from. */
  samples: number;
}

/** The figures of one delivery phase: through the platform, or the direct baseline. */
export interface DeliveryPhaseFigures {
  phase: 'platform' | 'baseline';
  /** Deliveries the run was meant to make. */
  expected: number;
  /** Distinct deliveries that arrived verified at the receiver. */
  delivered: number;
  /** From the phase's start (platform: first event committed; baseline: first request sent) to the last arrival, in ms. */
  durationMs: number;
  deliveriesPerSec: number;
  /**
   * Platform: event committed → request arrived. Baseline: request sent → request arrived
   * (the floor a queue-less sender sets). Null when nothing arrived.
   */
  delay: DelaySummary | null;
  /** Requests the receiver refused (`verifyWebhook` failed); must be 0. */
  verifyFailures: number;
  /** Requests for a delivery that had already arrived (a retry after a slow answer, or a resend). */
  duplicates: number;
  /** Requests the sender saw fail or answered non-2xx (baseline only; the platform retries instead). */
  sendErrors: number;
}

/** What `results/webhook-bench-*.json` holds. */
export interface WebhookBenchReport {
  kind: 'webhook-bench';
  startedAt: string;
  settings: {
    events: number;
    webhooks: number;
    /** WEBHOOK_CONCURRENCY: the dispatcher's attempts in flight and the baseline's connections. */
    concurrency: number;
    /** WEBHOOK_MAX_IN_FLIGHT_PER_WEBHOOK of the control plane. */
    perWebhook: number;
    database: 'external' | 'embedded';
  };
  machine: MachineInfo;
  /** From the first staging transaction's start to the last commit, in ms. */
  stagingMs: number;
  platform: DeliveryPhaseFigures;
  baseline: DeliveryPhaseFigures;
  /** platform deliveries/s ÷ baseline deliveries/s (the tracked figure); null if the baseline delivered nothing. */
  ratioDeliveriesPerSec: number | null;
  failures: string[];
  ok: boolean;
}

/**
 * p50, p95, p99 and max of `delaysMs` (nearest rank, so each is an observed value);
 * null for no samples.
 */
export function summariseDelays(delaysMs: ArrayLike<number>): DelaySummary | null {
  if (delaysMs.length === 0) return null;
  const sorted = Float64Array.from(delaysMs).sort();
  return {
    p50Ms: quantile(sorted, 0.5),
    p95Ms: quantile(sorted, 0.95),
    p99Ms: quantile(sorted, 0.99),
    maxMs: sorted[sorted.length - 1]!,
    samples: sorted.length,
  };
}

/** `count` events per second over `[startMs, endMs]`; 0 when the window is empty or negative. */
export function ratePerSec(count: number, startMs: number, endMs: number): number {
  const spanMs = endMs - startMs;
  return spanMs > 0 && count > 0 ? (count * 1000) / spanMs : 0;
}

/** Why the run must not count; empty when every delivery arrived, verified, without errors. */
export function webhookFailures(phases: DeliveryPhaseFigures[]): string[] {
  const out: string[] = [];
  for (const p of phases) {
    if (p.verifyFailures > 0) out.push(`${p.phase}: ${p.verifyFailures} requests failed signature verification`);
    if (p.delivered < p.expected) out.push(`${p.phase}: ${p.delivered} of ${p.expected} deliveries arrived`);
    if (p.sendErrors > 0) out.push(`${p.phase}: ${p.sendErrors} requests failed or answered non-2xx`);
  }
  return out;
}

/** Assembles the JSON document; the ratio and the failures are derived here. */
export function buildWebhookReport(input: Omit<WebhookBenchReport, 'kind' | 'startedAt' | 'ratioDeliveriesPerSec' | 'failures' | 'ok'> & { startedAt: Date }): WebhookBenchReport {
  const failures = webhookFailures([input.platform, input.baseline]);
  const b = input.baseline.deliveriesPerSec;
  return {
    ...input,
    kind: 'webhook-bench',
    startedAt: input.startedAt.toISOString(),
    ratioDeliveriesPerSec: b > 0 ? input.platform.deliveriesPerSec / b : null,
    failures,
    ok: failures.length === 0,
  };
}

const HEADERS = ['phase', 'deliveries', 'deliveries/s', 'p50 ms', 'p95 ms', 'p99 ms', 'max ms', 'bad signatures', 'duplicates', 'ratio'] as const;

/** The printed table: the platform with its ratio, then the baseline. */
export function formatWebhookTable(report: WebhookBenchReport): string {
  const row = (label: string, f: DeliveryPhaseFigures, ratio: string) => [
    label,
    `${f.delivered}/${f.expected}`,
    fixed(f.deliveriesPerSec, 0),
    fixed(f.delay?.p50Ms ?? null, 1),
    fixed(f.delay?.p95Ms ?? null, 1),
    fixed(f.delay?.p99Ms ?? null, 1),
    fixed(f.delay?.maxMs ?? null, 1),
    String(f.verifyFailures),
    String(f.duplicates),
    ratio,
  ];
  return textTable(HEADERS, [
    row('platform (commit → arrival)', report.platform, fixed(report.ratioDeliveriesPerSec, 3)),
    row('  baseline (send → arrival)', report.baseline, ''),
  ]);
}
