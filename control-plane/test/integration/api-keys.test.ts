import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../src/modules/api-keys/key-material.js';
import { call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

describe('POST /api/v1/api-keys', () => {
  it('shows the key once, stores only its hash, and the key works at once with its scopes', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/api-keys', { name: 'ci', scopes: ['agents:read'], expiresAt: inAnHour() });
    expect(res.statusCode).toBe(201);
    const created = res.json();
    expect(created.key).toMatch(/^svc_sb_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(created.key.slice(7), 'base64url')).toHaveLength(32);
    expect(created.key.startsWith(created.keyPrefix)).toBe(true);
    expect(created).toMatchObject({ id: expect.stringMatching(/^key_/), name: 'ci', scopes: ['agents:read'], lastUsedAt: null, canManageApiKeys: false, environment: 'sandbox' });

    const { rows } = await t.database.pool.query('select * from api_keys where id = $1', [created.id]);
    expect(JSON.stringify(rows[0])).not.toContain(created.key);
    expect(rows[0].key_hash).toBe(hashKey(created.key));

    const got = await call(t.app, tenant.key, 'GET', `/api/v1/api-keys/${created.id}`);
    expect(got.json()).not.toHaveProperty('key');
    expect(got.body).not.toContain(created.key);

    expect((await call(t.app, created.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
    expect((await call(t.app, created.key, 'GET', '/api/v1/api-keys')).statusCode).toBe(403);
  });

  it('makes live keys when asked', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/api-keys', { name: 'prod', scopes: ['agents:read'], environment: 'live' });
    expect(res.json().key).toMatch(/^svc_live_/);
    expect(res.json().expiresAt).toBeNull();
  });

  it('validates name, scopes and expiry with field paths', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/api-keys', { name: '', scopes: ['agents:read', 'agents:admin'], expiresAt: 'tomorrow' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['expiresAt', 'name', 'scopes.1']);
    const past = await call(t.app, tenant.key, 'POST', '/api/v1/api-keys', { name: 'old', scopes: ['agents:read'], expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.statusCode).toBe(422);
    expect(past.json().errors).toEqual([{ field: 'expiresAt', message: 'must be in the future' }]);
    const noScopes = await call(t.app, tenant.key, 'POST', '/api/v1/api-keys', { name: 'x', scopes: [] });
    expect(noScopes.json().errors).toEqual([{ field: 'scopes', message: 'must have at least one scope' }]);
  });

  it('refuses to grant scopes or permissions the caller does not hold', async () => {
    const manager = await tenant.mintKey({ scopes: ['agents:read'], canManageApiKeys: true });
    const wider = await call(t.app, manager.key, 'POST', '/api/v1/api-keys', { name: 'escalate', scopes: ['agents:read', 'billing:read'] });
    expect(wider.statusCode).toBe(403);
    expect(wider.json().detail).toContain('billing:read');
    const same = await call(t.app, manager.key, 'POST', '/api/v1/api-keys', { name: 'ok', scopes: ['agents:read'], canManageApiKeys: true });
    expect(same.statusCode).toBe(201);
  });
});

describe('GET /api/v1/api-keys', () => {
  it('lists the tenant’s keys, paginated and sorted, without revoked ones or other tenants’ keys', async () => {
    const own = await createTenant(t.database);
    for (const name of ['b-key', 'a-key', 'c-key']) await call(t.app, own.key, 'POST', '/api/v1/api-keys', { name, scopes: ['agents:read'] });
    const page = await call(t.app, own.key, 'GET', '/api/v1/api-keys?sortBy=name&sortOrder=asc&pageSize=2');
    expect(page.statusCode).toBe(200);
    expect(page.json()).toMatchObject({ page: 1, pageSize: 2, total: 4, totalPages: 2 });
    expect(page.json().data.map((k: { name: string }) => k.name)).toEqual(['a-key', 'b-key']);
    const victim = page.json().data[0].id;
    expect((await call(t.app, own.key, 'DELETE', `/api/v1/api-keys/${victim}`)).statusCode).toBe(204);
    const after = await call(t.app, own.key, 'GET', '/api/v1/api-keys');
    expect(after.json().total).toBe(3);
    expect(after.json().data.map((k: { id: string }) => k.id)).not.toContain(victim);
    expect((await call(t.app, own.key, 'GET', '/api/v1/api-keys?pageSize=101')).statusCode).toBe(422);
  });
});

describe('DELETE /api/v1/api-keys/{id}', () => {
  it('revokes immediately: the next request with the key is 401', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'] });
    expect((await call(t.app, k.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
    const del = await call(t.app, tenant.key, 'DELETE', `/api/v1/api-keys/${k.id}`);
    expect(del.statusCode).toBe(204);
    expect(del.body).toBe('');
    const after = await call(t.app, k.key, 'GET', '/api/v1/agents');
    expect(after.statusCode).toBe(401);
    expect(after.json().detail).toContain('revoked');
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/api-keys/${k.id}`)).statusCode).toBe(404);
  });

  it('answers 404 for another tenant’s key, which keeps working', async () => {
    const other = await createTenant(t.database);
    const theirs = await other.mintKey({ scopes: ['agents:read'] });
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/api-keys/${theirs.id}`)).statusCode).toBe(404);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/api-keys/${theirs.id}`)).statusCode).toBe(404);
    expect((await call(t.app, theirs.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
  });
});

describe('authentication', () => {
  it('answers 401 for missing, malformed, unknown and expired credentials, with a reason', async () => {
    const expired = await tenant.mintKey({ expiresAt: new Date(Date.now() - 1000) });
    const cases: Array<[Record<string, string>, string]> = [
      [{}, 'Missing Authorization'],
      [{ authorization: 'Basic abc' }, 'Malformed'],
      [{ authorization: 'Bearer not-a-key' }, 'not a valid API key'],
      [{ authorization: `Bearer svc_live_${'A'.repeat(43)}` }, 'Unknown API key'],
      [{ authorization: `Bearer ${expired.key}` }, 'expired'],
    ];
    for (const [headers, reason] of cases) {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/agents', headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().type).toMatch(/\/errors\/unauthorized$/);
      expect(res.json().detail).toContain(reason);
    }
  });

  it('records lastUsedAt on use, at most once a minute', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'] });
    await call(t.app, k.key, 'GET', '/api/v1/agents');
    await expect
      .poll(async () => (await t.database.pool.query('select last_used_at from api_keys where id = $1', [k.id])).rows[0].last_used_at, { timeout: 2000 })
      .not.toBeNull();
    const first = (await t.database.pool.query('select last_used_at from api_keys where id = $1', [k.id])).rows[0].last_used_at;
    await call(t.app, k.key, 'GET', '/api/v1/agents');
    await new Promise((r) => setTimeout(r, 100));
    const second = (await t.database.pool.query('select last_used_at from api_keys where id = $1', [k.id])).rows[0].last_used_at;
    expect(second.getTime()).toBe(first.getTime());
  });

  it('refuses keys of a tenant that is not active', async () => {
    const other = await createTenant(t.database);
    await t.database.pool.query(`update tenants set status = 'suspended' where id = $1`, [other.tenantId]);
    expect((await call(t.app, other.key, 'GET', '/api/v1/agents')).statusCode).toBe(401);
  });
});
