import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { ADMIN_TOKEN, adminCall, createAdminApp } from '../admin-fixtures.js';

let t: TestApp;
let tenant: TestTenant;
let admin: FastifyInstance;
const path = '/api/v1/telephony/debug/calls/CA0000000000000000000000000000auth';

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  admin = await createAdminApp(t.database);
});
afterAll(async () => {
  await admin.close();
  await t.close();
});

describe('admin API authentication', () => {
  it('answers 401 problem+json without credentials', async () => {
    const res = await adminCall(admin, 'GET', path, undefined, null);
    expect(res.statusCode).toBe(401);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 401, title: 'Unauthorized', traceId: res.headers['x-request-id'] });
  });

  it('answers 403 to a tenant API key, even one holding every scope', async () => {
    const res = await adminCall(admin, 'GET', path, undefined, tenant.key);
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ status: 403, title: 'Forbidden' });
  });

  it('answers 403 to a wrong token, a token of another length and a non-bearer scheme', async () => {
    expect((await adminCall(admin, 'GET', path, undefined, `${ADMIN_TOKEN.slice(0, -1)}x`)).statusCode).toBe(403);
    expect((await adminCall(admin, 'GET', path, undefined, 'short')).statusCode).toBe(403);
    const basic = await admin.inject({ method: 'GET', url: path, headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}` } });
    expect(basic.statusCode).toBe(403);
  });

  it('lets the admin token through', async () => {
    const res = await adminCall(admin, 'GET', path);
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ callSid: 'CA0000000000000000000000000000auth', message: expect.any(String) });
    const sim = await adminCall(admin, 'POST', '/api/v1/telephony/debug/simulate-inbound', {
      provider: 'Twilio',
      agentId: 'agt_00000000000000000000000000',
      tenantId: tenant.tenantId,
      from: '+15551230001',
      to: '+15551230002',
      host: 'gw.example.com',
    });
    expect(sim.statusCode).toBe(200);
  });

  it('does not serve the admin endpoints on the public API', async () => {
    const res = await t.app.inject({ method: 'GET', url: path, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(res.statusCode).toBe(404);
  });

  it('answers unknown admin routes with a problem 404 once authenticated', async () => {
    const res = await adminCall(admin, 'GET', '/api/v1/nothing-here');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  });
});
