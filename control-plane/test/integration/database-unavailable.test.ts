import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { adminCall, createAdminApp } from '../admin-fixtures.js';
import { startDatabaseProxy } from '../database-proxy.js';
import type { DatabaseProxy } from '../database-proxy.js';
import { call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

function expectUnavailable(res: LightMyRequestResponse, what: string): void {
  expect(res.statusCode, `${what}: ${res.body}`).toBe(503);
  expect(res.headers['content-type'], what).toMatch(/^application\/problem\+json/);
  expect(res.headers['retry-after'], what).toBe('2');
  const body = res.json();
  expect(body.type, what).toMatch(/\/errors\/unavailable$/);
  expect(body.status, what).toBe(503);
  expect(body.detail, what).toMatch(/database is unreachable/);
  expect(body.traceId, what).toBeTruthy();
  expect(body.traceId, what).toBe(res.headers['x-request-id']);
}

describe('Postgres unreachable: 503 unavailable with Retry-After, not 500 internal', () => {
  let proxy: DatabaseProxy;
  let database: Database;
  let t: TestApp;
  let admin: FastifyInstance;
  let tenant: TestTenant;
  let unusedKey: string;

  beforeAll(async () => {
    proxy = await startDatabaseProxy(inject('databaseUrl'));
    database = openDatabase(proxy.url, 3);
    t = await createTestApp({ database });
    admin = await createAdminApp(database);
    tenant = await createTenant(database);
    unusedKey = (await tenant.mintKey()).key;
    // Served while the database is up (and the key is now in the replica's key cache).
    expect((await call(t.app, tenant.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
    expect((await adminCall(admin, 'GET', '/api/v1/telephony/debug/calls/CAnothing')).statusCode).toBe(404);
    await proxy.cut();
  });
  afterAll(async () => {
    await admin?.close();
    await t?.close();
    await database?.close();
    await proxy?.cut();
  });

  it('answers the main API with 503 (a route query, the authentication step, login)', async () => {
    expectUnavailable(await call(t.app, tenant.key, 'GET', '/api/v1/agents'), 'GET /agents with a cached key');
    expectUnavailable(await call(t.app, unusedKey, 'GET', '/api/v1/agents'), 'GET /agents with a key not yet looked up');
    expectUnavailable(await call(t.app, null, 'POST', '/api/v1/auth/login', { email: 'nobody@example.com', password: 'correct horse battery staple' }), 'POST /auth/login');
  });

  it('answers the admin API with 503', async () => {
    expectUnavailable(await adminCall(admin, 'GET', '/api/v1/telephony/debug/calls/CAnothing'), 'admin GET /telephony/debug/calls');
  });

  it('leaves /readyz answering its own 503 and /healthz 200', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(503);
  });
});

describe('Postgres never reachable (embedded server socket missing)', () => {
  it('answers 503 when the Unix socket is not there (ENOENT on connect)', async () => {
    const url = new URL(inject('databaseUrl'));
    url.search = `?host=${encodeURIComponent(path.join(tmpdir(), `vap-no-socket-${process.pid}`))}`;
    const database = openDatabase(url.toString(), 2);
    const t = await createTestApp({ database });
    const admin = await createAdminApp(database);
    try {
      expectUnavailable(await call(t.app, 'svc_sb_notarealkey0000000000000000', 'GET', '/api/v1/agents'), 'GET /agents');
      expectUnavailable(await adminCall(admin, 'GET', '/api/v1/telephony/debug/calls/CAnothing'), 'admin GET /telephony/debug/calls');
    } finally {
      await admin.close();
      await t.close();
      await database.close();
    }
  });
});
