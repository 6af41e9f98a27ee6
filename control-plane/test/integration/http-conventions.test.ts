import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

const PROBLEM_KEYS = ['detail', 'status', 'title', 'traceId', 'type'];

describe('HTTP conventions', () => {
  it('carries request id, API version and rate-limit headers on every /api response, errors included', async () => {
    const responses = [
      await call(t.app, tenant.key, 'GET', '/api/v1/agents'),
      await call(t.app, null, 'GET', '/api/v1/agents'),
      await call(t.app, tenant.key, 'GET', '/api/v1/agents/agt_missing'),
      await call(t.app, null, 'GET', '/api/v1/no-such-route'),
      await call(t.app, tenant.key, 'POST', '/api/v1/agents', '{oops'),
    ];
    for (const res of responses) {
      expect(res.headers['x-request-id']).toMatch(/^trace_[0-9a-z]{26}$/);
      expect(res.headers['x-api-version']).toBe('1');
      expect(res.headers['x-ratelimit-policy']).toBe('api-standard');
      expect(Number(res.headers['x-ratelimit-limit'])).toBeGreaterThan(0);
      expect(Number(res.headers['x-ratelimit-remaining'])).toBeGreaterThanOrEqual(0);
      const reset = Number(res.headers['x-ratelimit-reset']);
      expect(reset).toBeGreaterThan(Date.now() / 1000 - 1);
      expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
    }
  });

  it('renders errors as problem+json whose traceId equals X-Request-Id', async () => {
    const res = await call(t.app, tenant.key, 'GET', '/api/v1/agents/agt_missing');
    expect(res.statusCode).toBe(404);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json();
    expect(Object.keys(body).sort()).toEqual(PROBLEM_KEYS);
    expect(body.traceId).toBe(res.headers['x-request-id']);
    expect(body.type).toBe(`${t.config.docsUrl}/errors/not-found`);
  });

  it('answers unknown routes 404 in the same shape, without asking for credentials', async () => {
    const res = await call(t.app, null, 'DELETE', '/api/v1/definitely/not/here');
    expect(res.statusCode).toBe(404);
    expect(res.json().type).toMatch(/\/errors\/route-not-found$/);
  });

  it('ignores an inbound X-Request-Id unless behind a trusted proxy', async () => {
    const res = await call(t.app, tenant.key, 'GET', '/api/v1/agents', undefined, { 'x-request-id': 'client-chosen' });
    expect(res.headers['x-request-id']).not.toBe('client-chosen');
    const proxied = await createTestApp({ env: { TRUST_PROXY: 'true' } });
    try {
      const res2 = await call(proxied.app, tenant.key, 'GET', '/api/v1/agents', undefined, { 'x-request-id': 'lb-1234' });
      expect(res2.headers['x-request-id']).toBe('lb-1234');
    } finally {
      await proxied.close();
    }
  });

  it('answers 415 for a non-JSON body, 400 for no body and 422 for JSON that is not an object', async () => {
    const form = await t.app.inject({ method: 'POST', url: '/api/v1/agents', headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'text/plain' }, payload: 'name=x' });
    expect(form.statusCode).toBe(415);
    expect(form.json().type).toMatch(/\/errors\/unsupported-media-type$/);
    const arr = await call(t.app, tenant.key, 'POST', '/api/v1/agents', '[1,2]');
    expect(arr.statusCode).toBe(422);
    expect(arr.json().errors).toEqual([{ field: '', message: 'must be of type object, got an array' }]);
    const none = await t.app.inject({ method: 'POST', url: '/api/v1/agents', headers: { authorization: `Bearer ${tenant.key}` } });
    expect(none.statusCode).toBe(400);
    expect(none.json().errors).toEqual([{ field: '', message: 'a JSON body is required' }]);
  });

  it('answers 413 for a body over 1 MiB, and stores nothing', async () => {
    const before = (await t.database.pool.query('select count(*)::int as n from agents where tenant_id = $1', [tenant.tenantId])).rows[0].n;
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ systemPromptTemplate: 'x'.repeat(1024 * 1024 + 1) }));
    expect(res.statusCode).toBe(413);
    expect(res.json().type).toMatch(/\/errors\/payload-too-large$/);
    const after = (await t.database.pool.query('select count(*)::int as n from agents where tenant_id = $1', [tenant.tenantId])).rows[0].n;
    expect(after).toBe(before);
  });

  it('accepts an action POST without a body', async () => {
    const created = (await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody())).json();
    const res = await t.app.inject({ method: 'POST', url: `/api/v1/agents/${created.id}/publish`, headers: { authorization: `Bearer ${tenant.key}`, 'content-type': 'application/json' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().publishedVersion).toBe(1);
  });

  it('never answers 500 with internals; the detail is generic', async () => {
    // A column type the driver cannot bind: forces a database error on our side.
    const broken = await createTestApp();
    try {
      await broken.database.pool.query('select 1');
      const spy = broken.database.pool.query.bind(broken.database.pool);
      let calls = 0;
      (broken.database.pool as unknown as { query: unknown }).query = (...args: unknown[]) => {
        calls++;
        const first = args[0] as { name?: string } | string;
        if (typeof first === 'object' && first?.name === 'auth-api-key') return Promise.reject(new Error('connection to 10.0.0.7 refused; password=hunter2'));
        return (spy as (...a: unknown[]) => unknown)(...args);
      };
      const res = await call(broken.app, tenant.key, 'GET', '/api/v1/agents');
      expect(calls).toBeGreaterThan(0);
      expect(res.statusCode).toBe(500);
      expect(res.json().type).toMatch(/\/errors\/internal$/);
      expect(res.body).not.toContain('10.0.0.7');
      expect(res.body).not.toContain('hunter2');
    } finally {
      await broken.close();
    }
  });

  it('serves the error type pages the problem types point at', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/errors/validation' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).toContain('Validation failed');
  });
});
