import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { RateLimiter } from '../../src/modules/rate-limit/rate-limiter.js';
import { call, createTenant, createTestApp, testConfig } from '../helpers.js';
import type { TestApp } from '../helpers.js';

let database: Database;
// A fixed clock in the middle of a window, so a test never straddles a minute boundary.
let nowMs = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
const now = () => nowMs;
let replicaA: TestApp;
let replicaB: TestApp;

beforeAll(async () => {
  database = openDatabase(testConfig().databaseUrl!, 5);
  replicaA = await createTestApp({ now, env: { RATE_LIMIT_STARTER: '5' } });
  replicaB = await createTestApp({ now, env: { RATE_LIMIT_STARTER: '5' } });
});
afterAll(async () => {
  await replicaA.close();
  await replicaB.close();
  await database.close();
});

describe('rate limits', () => {
  it('counts per tenant across replicas and answers 429 with Retry-After past the limit', async () => {
    const tenant = await createTenant(database, { plan: 'starter' });
    const statuses: number[] = [];
    const remaining: string[] = [];
    for (let i = 0; i < 6; i++) {
      const app = i % 2 === 0 ? replicaA.app : replicaB.app;
      const res = await call(app, tenant.key, 'GET', '/api/v1/agents');
      statuses.push(res.statusCode);
      remaining.push(String(res.headers['x-ratelimit-remaining']));
      expect(res.headers['x-ratelimit-limit']).toBe('5');
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    expect(remaining).toEqual(['4', '3', '2', '1', '0', '0']);
    const over = await call(replicaA.app, tenant.key, 'GET', '/api/v1/agents');
    expect(over.statusCode).toBe(429);
    expect(over.json().type).toMatch(/\/errors\/rate-limited$/);
    expect(over.headers['retry-after']).toBe('30');
    expect(over.headers['x-ratelimit-reset']).toBe(String((nowMs + 30_000) / 1000));
  });

  it('starts a new window after the reset', async () => {
    const tenant = await createTenant(database, { plan: 'starter' });
    for (let i = 0; i < 6; i++) await call(replicaA.app, tenant.key, 'GET', '/api/v1/agents');
    expect((await call(replicaA.app, tenant.key, 'GET', '/api/v1/agents')).statusCode).toBe(429);
    nowMs += 60_000;
    const res = await call(replicaB.app, tenant.key, 'GET', '/api/v1/agents');
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-ratelimit-remaining']).toBe('4');
  });

  it('uses the plan limits of the spec and the enterprise override', async () => {
    const app = await createTestApp({ now });
    try {
      const cases: Array<[Parameters<typeof createTenant>[1], string]> = [
        [{ plan: 'starter' }, '60'],
        [{ plan: 'professional' }, '120'],
        [{ plan: 'business' }, '300'],
        [{ plan: 'enterprise', rateLimitPerMinute: 2500 }, '2500'],
      ];
      for (const [opts, limit] of cases) {
        const tenant = await createTenant(database, opts);
        const res = await call(app.app, tenant.key, 'GET', '/api/v1/agents');
        expect(res.headers['x-ratelimit-limit']).toBe(limit);
      }
    } finally {
      await app.close();
    }
  });

  it('limits requests without a valid credential by client address', async () => {
    const app = await createTestApp({ now, env: { RATE_LIMIT_ANONYMOUS: '3' } });
    try {
      await database.pool.query(`delete from rate_limit_windows where bucket like 'ip:%'`);
      const codes: number[] = [];
      for (let i = 0; i < 4; i++) codes.push((await call(app.app, 'svc_sb_' + 'x'.repeat(43), 'GET', '/api/v1/agents')).statusCode);
      expect(codes).toEqual([401, 401, 401, 429]);
    } finally {
      await app.close();
    }
  });

  it('purges windows that have ended', async () => {
    const limiter = new RateLimiter(database.pool, () => 1_000_000_000_000);
    await limiter.hit('test:purge', 10);
    const purged = await new RateLimiter(database.pool).purge(1_000_000_000_000 + 120_000);
    expect(purged).toBeGreaterThanOrEqual(1);
    const { rows } = await database.pool.query(`select 1 from rate_limit_windows where bucket = 'test:purge'`);
    expect(rows).toHaveLength(0);
  });
});
