import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERROR_CATALOGUE, SCOPES } from '@vap/shared';
import { call, createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let tenant: TestTenant;
let doc: { paths: Record<string, Record<string, Record<string, unknown>>>; openapi: string };

beforeAll(async () => {
  // A database of its own: the walk below sends a request without credentials per operation,
  // counted in 127.0.0.1's anonymous rate-limit window (60 a minute), which lives in the
  // database; on the shared one other files' traffic would add up with it to 429s both ways.
  iso = await isolatedDatabase();
  t = await createTestApp({ database: iso.database, env: { RATE_LIMIT_ANONYMOUS: '100000' } });
  tenant = await createTenant(t.database);
  doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json();
});
afterAll(async () => {
  await t.close();
  await iso.drop();
});

type Op = { method: string; path: string; op: Record<string, unknown> };
function operations(): Op[] {
  return Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ method: method.toUpperCase(), path, op })));
}
/** Public operations (login, refresh, …) take no credential; auth.route-walk.test.ts lists them. */
function isPublic(op: Record<string, unknown>): boolean {
  return Array.isArray(op.security) && op.security.length === 0;
}
/** A concrete URL for a templated path: ids that do not exist, numbers that parse. */
function concrete(path: string): string {
  return path.replace(/\{versionNumber\}/g, '1').replace(/\{[^}]+\}/g, 'agt_00000000000000000000000000');
}

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1 and lists every API route with its scope and error responses', () => {
    expect(doc.openapi).toBe('3.1.0');
    const ops = operations();
    const listed = new Set(ops.map((o) => `${o.method} ${o.path}`));
    for (const expected of [
      'POST /api/v1/agents', 'GET /api/v1/agents', 'GET /api/v1/agents/{agentId}', 'PATCH /api/v1/agents/{agentId}', 'DELETE /api/v1/agents/{agentId}',
      'POST /api/v1/agents/{agentId}/activate', 'POST /api/v1/agents/{agentId}/deactivate', 'POST /api/v1/agents/{agentId}/duplicate', 'POST /api/v1/agents/{agentId}/publish',
      'GET /api/v1/agents/{agentId}/versions', 'GET /api/v1/agents/{agentId}/versions/{versionNumber}',
      'POST /api/v1/api-keys', 'GET /api/v1/api-keys', 'GET /api/v1/api-keys/{id}', 'DELETE /api/v1/api-keys/{id}',
    ]) expect(listed).toContain(expected);
    for (const { method, path, op } of ops) {
      if (isPublic(op)) continue;
      const where = `${method} ${path}`;
      expect(op, where).toHaveProperty('x-required-scope');
      const scope = op['x-required-scope'];
      if (scope !== null) expect(SCOPES, where).toContain(scope);
      else expect([op['x-required-permission'], op['x-required-right']].some((need) => typeof need === 'string'), `${where} needs a permission or a user right`).toBe(true);
      const responses = op.responses as Record<string, unknown>;
      for (const code of ['401', '403', '429']) expect(Object.keys(responses), where).toContain(code);
    }
    // The input guards (a NUL or an unpaired surrogate: 422; a path the router cannot read: 400) apply to every operation with input.
    for (const { method, path, op } of ops) {
      const responses = Object.keys(op.responses as Record<string, unknown>);
      const params = ((op.parameters as { in: string }[] | undefined) ?? []).filter((p) => p.in === 'path' || p.in === 'query');
      if (params.length > 0 || op.requestBody) expect(responses, `${method} ${path}`).toContain('422');
      if (params.some((p) => p.in === 'path')) expect(responses, `${method} ${path}`).toContain('400');
    }
  });

  it('matches behaviour: every route answers 401 without credentials and 403 to a key lacking its scope', async () => {
    // A key with no scope at all and no permission: nothing may succeed.
    const powerless = await tenant.mintKey({ scopes: ['billing:read'], canManageApiKeys: false });
    for (const { method, path, op } of operations()) {
      if (op['x-required-scope'] === 'billing:read' || isPublic(op)) continue;
      const url = concrete(path);
      const body = method === 'POST' || method === 'PATCH' ? {} : undefined;
      const anon = await call(t.app, null, method as 'GET', url, body);
      expect(anon.statusCode, `${method} ${path} without credentials`).toBe(401);
      const denied = await call(t.app, powerless.key, method as 'GET', url, body);
      expect(denied.statusCode, `${method} ${path} without scope`).toBe(403);
    }
  });

  it('marks creating and action POSTs as idempotent', () => {
    for (const { method, path, op } of operations()) {
      // Except the caller's own MFA factors: their answers hold one-time secrets (TOTP secret,
      // recovery codes) that must not be stored for replay, and keys are per tenant, not per user.
      if (method === 'POST' && !isPublic(op) && !path.startsWith('/api/v1/users/me/mfa')) expect(op['x-idempotent'], `${method} ${path}`).toBe(true);
    }
  });

  it('documents every error slug of the catalogue on its own page', async () => {
    for (const [slug, entry] of Object.entries(ERROR_CATALOGUE)) {
      expect(entry.description.length, slug).toBeGreaterThan(20);
      const res = await t.app.inject({ method: 'GET', url: `/docs/errors/${slug}` });
      expect(res.statusCode, slug).toBe(200);
      expect(res.body).toContain(entry.title);
    }
  });

  it('serves the human docs page', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/docs/api/' });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('swagger');
  });
});
