import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { Housekeeping } from '../../src/modules/housekeeping/housekeeping.js';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency-store.js';
import { RateLimiter } from '../../src/modules/rate-limit/rate-limiter.js';
import { createTenant, testConfig } from '../helpers.js';

let database: Database;
beforeAll(() => {
  database = openDatabase(testConfig().databaseUrl!, 2);
});
afterAll(async () => database.close());

describe('Housekeeping', () => {
  it('purges expired idempotency keys and ended rate-limit windows, and keeps live ones', async () => {
    const { tenantId } = await createTenant(database);
    const nowMs = Date.now();
    const store = new IdempotencyStore(database.pool);
    await store.claim(tenantId, 'live', 'h');
    await store.claim(tenantId, 'expired', 'h');
    await database.pool.query(`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = $1 and key = 'expired'`, [tenantId]);
    await new RateLimiter(database.pool, () => nowMs - 5 * 60_000).hit(`hk:${tenantId}`, 10);
    await new RateLimiter(database.pool, () => nowMs).hit(`hk:${tenantId}`, 10);

    const hk = new Housekeeping({ idempotency: store, rateLimiter: new RateLimiter(database.pool, () => nowMs), log: pino({ level: 'silent' }), intervalMs: 60_000, now: () => nowMs });
    const purged = await hk.runOnce();
    await hk.stop();

    expect(purged.idempotencyKeys).toBeGreaterThanOrEqual(1);
    expect(purged.rateLimitWindows).toBeGreaterThanOrEqual(1);
    const keys = await database.pool.query('select key from idempotency_keys where tenant_id = $1', [tenantId]);
    expect(keys.rows.map((r) => r.key)).toEqual(['live']);
    const windows = await database.pool.query('select window_start from rate_limit_windows where bucket = $1', [`hk:${tenantId}`]);
    expect(windows.rows.map((r) => Number(r.window_start))).toEqual([nowMs - (nowMs % 60_000)]);
  });
});
