/**
 * GET /metrics of the control plane over real HTTP: API requests timed by route pattern,
 * webhook deliveries to a real receiver on loopback, and jobs run by a real runner, all on
 * a database of this file's own. The scraped text is parsed strictly.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, parsePrometheusText } from '@vap/shared';
import type { PrometheusExposition } from '@vap/shared';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { enqueueJob } from '../../src/modules/jobs/job-queue.js';
import { JobRunner, PermanentJobError } from '../../src/modules/jobs/job-runner.js';
import { ControlPlaneMetrics } from '../../src/modules/metrics/control-plane-metrics.js';
import type { WebhookDispatcher } from '../../src/modules/webhooks/webhook-dispatcher.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, call, createAgentFor, createTenant, isolatedDatabase, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { EventOutbox, emit, startDispatcher, startReceiver, until } from './webhooks.fixtures.js';
import type { Receiver } from './webhooks.fixtures.js';

let database: Database;
let drop: () => Promise<void>;
let app: FastifyInstance;
let guarded: FastifyInstance;
let url: string;
let metrics: ControlPlaneMetrics;
let tenant: TestTenant;
let receiver: Receiver;
let dispatcher: WebhookDispatcher | undefined;
let runner: JobRunner | undefined;

async function scrape(): Promise<PrometheusExposition> {
  const res = await fetch(`${url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheusText(await res.text());
}

beforeAll(async () => {
  const iso = await isolatedDatabase();
  database = iso.database;
  drop = iso.drop;
  metrics = new ControlPlaneMetrics();
  const deps = { database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger: pino({ level: 'silent' }) };
  app = await buildApp(testConfig(), { ...deps, metrics });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
  guarded = await buildApp(testConfig({ METRICS_TOKEN: 'scrape-secret' }), deps);
  await guarded.ready();
  tenant = await createTenant(database);
  receiver = await startReceiver();
});

afterAll(async () => {
  await dispatcher?.stop();
  await runner?.stop();
  await receiver?.close();
  await app?.close();
  await guarded?.close();
  await drop?.();
});

describe('control plane /metrics', () => {
  it('times API requests by method, route pattern and status, never by raw URL', async () => {
    const agent = await createAgentFor(app, tenant.key);
    const before = await scrape();
    const route = { method: 'GET', route: '/api/v1/agents/:agentId' };
    expect((await call(app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).statusCode).toBe(200);
    expect((await call(app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).statusCode).toBe(200);
    expect((await call(app, null, 'GET', `/api/v1/agents/${agent.id}`)).statusCode).toBe(401);
    expect((await call(app, tenant.key, 'GET', '/api/v1/no-such-thing')).statusCode).toBe(404);
    const after = await scrape();
    const delta = (labels: Record<string, string>) => after.value('vap_http_request_duration_seconds_count', labels) - before.value('vap_http_request_duration_seconds_count', labels);
    expect(delta({ ...route, status_code: '200' })).toBe(2);
    expect(delta({ ...route, status_code: '401' })).toBe(1);
    expect(delta({ method: 'GET', route: 'unmatched', status_code: '404' })).toBe(1);
    expect(after.value('vap_http_request_duration_seconds_sum', { ...route, status_code: '200' })).toBeGreaterThan(0);
    expect(after.samples.some((s) => s.labels['route']?.includes(agent.id))).toBe(false);
    // Process metrics and the spec's telephony counter (no REST calls yet: declared, no samples).
    for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds']) expect(after.types.has(name), name).toBe(true);
    expect(after.types.get('svc_telephony_api_errors_total')).toBe('counter');
  });

  it('counts webhook deliveries by result, with their latency', async () => {
    const agentId = (await createAgentFor(app, tenant.key)).id;
    const outbox = new EventOutbox();
    const hook = async (target: string) => {
      const res = await call(app, tenant.key, 'POST', '/api/v1/webhooks', { agentId, url: target, events: ['SessionEnded'] });
      expect(res.statusCode).toBe(201);
    };
    await hook(`${receiver.url}/ok`);
    receiver.script('/refusing', [], { status: 500 });
    await hook(`${receiver.url}/refusing`);
    dispatcher = startDispatcher(database, { metrics });
    outbox.onWake(() => dispatcher!.wake());
    await dispatcher.start();
    await emit(database, outbox, { tenantId: tenant.tenantId, agentId }, 'SessionEnded');
    await receiver.waitFor(1, '/ok');
    await receiver.waitFor(1, '/refusing');
    await until(async () => (await scrape()).value('vap_webhook_deliveries_total') >= 2);
    const m = await scrape();
    expect(m.value('vap_webhook_deliveries_total', { result: 'delivered' })).toBe(1);
    expect(m.value('vap_webhook_deliveries_total', { result: 'retry' })).toBe(1);
    expect(m.value('vap_webhook_delivery_duration_seconds_count', { result: 'delivered' })).toBe(1);
    expect(m.value('vap_webhook_delivery_duration_seconds_bucket', { result: 'delivered', le: '5' })).toBe(1);
    expect(m.value('vap_webhook_delivery_duration_seconds_sum', { result: 'delivered' })).toBeGreaterThan(0);
  });

  it('counts job attempts by kind and result', async () => {
    runner = new JobRunner({ pool: database.pool, log: pino({ level: 'silent' }), concurrency: 2, pollIntervalMs: 100, metrics });
    runner.register('test.metrics', async (job) => {
      if (job.payload['fail'] === true) throw new PermanentJobError('bad payload');
    });
    await runner.start();
    for (const fail of [false, true]) {
      await database.db.transaction((tx) => enqueueJob(tx, { kind: 'test.metrics', tenantId: tenant.tenantId, subjectId: `subj_${randomBytes(6).toString('hex')}`, maxAttempts: 3, payload: { fail } }));
    }
    runner.wake();
    await until(async () => (await scrape()).value('vap_jobs_processed_total', { kind: 'test.metrics' }) >= 2);
    const m = await scrape();
    expect(m.value('vap_jobs_processed_total', { kind: 'test.metrics', result: 'succeeded' })).toBe(1);
    expect(m.value('vap_jobs_processed_total', { kind: 'test.metrics', result: 'failed' })).toBe(1);
    expect(m.value('vap_job_duration_seconds_count', { kind: 'test.metrics' })).toBe(2);
  });

  it('asks for the bearer token when METRICS_TOKEN is set, as a problem document', async () => {
    const refused = await guarded.inject({ method: 'GET', url: '/metrics' });
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.headers['www-authenticate']).toBe('Bearer');
    expect(refused.json()).toMatchObject({ status: 401, traceId: refused.headers['x-request-id'] });
    expect((await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer nope' } })).statusCode).toBe(401);
    const ok = await guarded.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer scrape-secret' } });
    expect(ok.statusCode).toBe(200);
    expect(parsePrometheusText(ok.body).types.get('vap_webhook_deliveries_total')).toBe('counter');
  });
});
