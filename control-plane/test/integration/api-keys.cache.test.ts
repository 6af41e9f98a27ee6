import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { InProcessBus } from '@vap/shared';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { call, createTenant, createTestApp, testConfig } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

// Two replicas on one database and one bus, as two control planes behind a load balancer.
let database: Database;
let bus: InProcessBus;
let replicaA: TestApp;
let replicaB: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  database = openDatabase(testConfig().databaseUrl!, 5);
  bus = new InProcessBus();
  replicaA = await createTestApp({ bus, database });
  replicaB = await createTestApp({ bus, database });
  tenant = await createTenant(database);
});
afterAll(async () => {
  await replicaA.close();
  await replicaB.close();
  await bus.close();
  await database.close();
});

/** How many API-key lookups the replicas send to Postgres while `run` runs. */
async function keyLookupsDuring(run: () => Promise<void>): Promise<number> {
  const spy = vi.spyOn(database.pool, 'query');
  try {
    await run();
    return spy.mock.calls.filter(([q]) => typeof q === 'object' && q !== null && (q as { name?: string }).name === 'auth-api-key').length;
  } finally {
    spy.mockRestore();
  }
}

describe('API-key lookups cached per replica', () => {
  it('reads a key once per replica while the cache holds it', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'] });
    const lookups = await keyLookupsDuring(async () => {
      for (let i = 0; i < 5; i++) {
        expect((await call(replicaA.app, k.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
        expect((await call(replicaB.app, k.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
      }
    });
    expect(lookups).toBe(2);
  });

  it('lets concurrent requests with an uncached key share one lookup', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'] });
    const lookups = await keyLookupsDuring(async () => {
      const codes = await Promise.all(Array.from({ length: 10 }, async () => (await call(replicaA.app, k.key, 'GET', '/api/v1/agents')).statusCode));
      expect(codes).toEqual(Array.from({ length: 10 }, () => 200));
    });
    expect(lookups).toBe(1);
  });

  it('refuses a revoked key at once on the revoking replica and, through the bus, on the others well within the cache time', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'] });
    expect((await call(replicaA.app, k.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
    expect((await call(replicaB.app, k.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
    expect((await call(replicaA.app, tenant.key, 'DELETE', `/api/v1/api-keys/${k.id}`)).statusCode).toBe(204);
    const onA = await call(replicaA.app, k.key, 'GET', '/api/v1/agents');
    expect(onA.statusCode).toBe(401);
    expect(onA.json().detail).toContain('revoked');
    const revokedAt = Date.now();
    // The bus delivers asynchronously; the cache would keep the key 5 s, the event far less.
    await expect.poll(async () => (await call(replicaB.app, k.key, 'GET', '/api/v1/agents')).statusCode, { timeout: 1000, interval: 5 }).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(1000);
    expect((await call(replicaB.app, k.key, 'GET', '/api/v1/agents')).json().detail).toContain('revoked');
  });

  it('refuses a cached key once it expires, without waiting for the cache', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'], expiresAt: new Date(Date.now() + 1500) });
    expect((await call(replicaA.app, k.key, 'GET', '/api/v1/agents')).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 1600));
    const res = await call(replicaA.app, k.key, 'GET', '/api/v1/agents');
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toContain('expired');
  });

  it('writes lastUsedAt once a minute per key however many requests and replicas use it', async () => {
    const k = await tenant.mintKey({ scopes: ['agents:read'] });
    const spy = vi.spyOn(database.pool, 'query');
    try {
      for (let i = 0; i < 10; i++) await call(i % 2 ? replicaA.app : replicaB.app, k.key, 'GET', '/api/v1/agents');
      const touches = spy.mock.calls.filter(([q]) => typeof q === 'string' && q.startsWith('update api_keys set last_used_at'));
      expect(touches).toHaveLength(2); // one per replica, the SQL guard keeps the second from writing
    } finally {
      spy.mockRestore();
    }
    await expect.poll(async () => (await database.pool.query('select last_used_at from api_keys where id = $1', [k.id])).rows[0].last_used_at).not.toBeNull();
  });
});
