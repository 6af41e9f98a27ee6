import { createHash, timingSafeEqual } from 'node:crypto';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Counter } from 'prom-client';

let processRegistry: Registry | undefined;

/**
 * The process's own metrics (CPU, RSS, heap, GC, event-loop delay histogram …, from
 * prom-client's `collectDefaultMetrics`), in one registry per process. Created on the
 * first call: the event-loop monitor it starts runs for the life of the process, so
 * services (and tests that build many apps in one process) share it instead of each
 * starting their own.
 */
export function processMetricsRegistry(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    const before = process.cpuUsage();
    // 10 ms sampling: the event-loop target is p99 <= 20 ms.
    collectDefaultMetrics({ register: processRegistry, eventLoopMonitoringPrecision: 10 });
    // prom-client counts CPU from here (the first scrape); Prometheus' process_cpu_* are totals since the
    // process started, and the gateway's per-thread CPU counters are since each thread started: add what came
    // before (all but the CPU of collectDefaultMetrics itself, whose own baseline is read after `before`).
    const add = (name: string, micros: number) => (processRegistry!.getSingleMetric(name) as Counter | undefined)?.inc(micros / 1e6);
    add('process_cpu_user_seconds_total', before.user);
    add('process_cpu_system_seconds_total', before.system);
    add('process_cpu_seconds_total', before.user + before.system);
  }
  return processRegistry;
}

/** Content type of {@link metricsExposition}'s text (Prometheus text format 0.0.4). */
export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/**
 * The text a `GET /metrics` serves: the process metrics followed by `registry`'s own. A
 * service keeps its metrics in a registry of its own (several gateways or apps may run in
 * one test process), so its counters start at zero and never mix with another instance's.
 */
export async function metricsExposition(registry: Registry): Promise<string> {
  const [own, proc] = await Promise.all([registry.metrics(), processMetricsRegistry().metrics()]);
  return `${proc.trimEnd()}\n\n${own}`;
}

/**
 * Whether a `GET /metrics` may be answered: always when no token is configured, else only
 * with `Authorization: Bearer <token>` (compared in constant time over SHA-256 digests, so
 * neither the token's length nor its prefix leaks through timing).
 */
export function metricsRequestAllowed(authorization: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const m = /^Bearer (.+)$/i.exec(authorization ?? '');
  if (!m) return false;
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(m[1]!), digest(token));
}
