import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency-store.js';
import { agentBody, call, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

async function agentCount(tenantId: string): Promise<number> {
  const { rows } = await t.database.pool.query('select count(*)::int as n from agents where tenant_id = $1', [tenantId]);
  return rows[0].n;
}

describe('Idempotency-Key', () => {
  it('replays the original status and body without creating twice', async () => {
    const body = agentBody();
    const first = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'create-1' });
    const again = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'create-1' });
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.json()).toEqual(first.json());
    expect(again.headers['idempotent-replayed']).toBe('true');
    const { rows } = await t.database.pool.query('select count(*)::int as n from agents where tenant_id = $1 and name = $2', [tenant.tenantId, body.name]);
    expect(rows[0].n).toBe(1);
  });

  it('treats the same body with keys in another order as the same request', async () => {
    const body = agentBody();
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const first = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'order-1' });
    const again = await call(t.app, tenant.key, 'POST', '/api/v1/agents', reordered, { 'idempotency-key': 'order-1' });
    expect(again.statusCode).toBe(201);
    expect(again.json().id).toBe(first.json().id);
  });

  it('answers 422 when the key is reused with a different body', async () => {
    await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody(), { 'idempotency-key': 'reuse-1' });
    const other = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody(), { 'idempotency-key': 'reuse-1' });
    expect(other.statusCode).toBe(422);
    expect(other.json().type).toMatch(/\/errors\/idempotency-key-reused$/);
  });

  it('answers 409 while the first request with the key is still running, then replays it', async () => {
    // Hold a lock on agents from another connection so the first create blocks mid-flight.
    const locker = new pg.Client({ connectionString: t.config.databaseUrl });
    await locker.connect();
    const body = agentBody();
    try {
      await locker.query('begin');
      await locker.query('lock table agents in exclusive mode');
      const before = await agentCount(tenant.tenantId);
      const firstPromise = call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'slow-1' });
      // Wait until the first request has claimed the key (the claim is committed before the insert blocks).
      for (let i = 0; i < 100; i++) {
        const { rows } = await t.database.pool.query(`select state from idempotency_keys where tenant_id = $1 and key = 'slow-1'`, [tenant.tenantId]);
        if (rows[0]?.state === 'in_progress') break;
        await new Promise((r) => setTimeout(r, 20));
      }
      const concurrent = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'slow-1' });
      expect(concurrent.statusCode).toBe(409);
      expect(concurrent.json().type).toMatch(/\/errors\/idempotency-key-in-use$/);
      await locker.query('commit');
      const first = await firstPromise;
      expect(first.statusCode).toBe(201);
      const replay = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'slow-1' });
      expect(replay.json().id).toBe(first.json().id);
      expect(await agentCount(tenant.tenantId)).toBe(before + 1);
    } finally {
      await locker.end();
    }
  });

  it('stores client errors too: a repeat of a 422 gets the same 422', async () => {
    const bad = agentBody({ maxDurationSeconds: 5 });
    const first = await call(t.app, tenant.key, 'POST', '/api/v1/agents', bad, { 'idempotency-key': 'bad-1' });
    const again = await call(t.app, tenant.key, 'POST', '/api/v1/agents', bad, { 'idempotency-key': 'bad-1' });
    expect(first.statusCode).toBe(422);
    expect(again.statusCode).toBe(422);
  });

  it('keeps keys per tenant', async () => {
    const other = await createTenant(t.database);
    const a = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name: 'Shared key A' }), { 'idempotency-key': 'tenant-scope' });
    const b = await call(t.app, other.key, 'POST', '/api/v1/agents', agentBody({ name: 'Shared key B' }), { 'idempotency-key': 'tenant-scope' });
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(b.json().id).not.toBe(a.json().id);
  });

  it('applies to action POSTs: a replayed duplicate does not duplicate twice', async () => {
    const source = (await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody())).json();
    const first = await call(t.app, tenant.key, 'POST', `/api/v1/agents/${source.id}/duplicate`, { name: `${source.name} copy` }, { 'idempotency-key': 'dup-1' });
    const again = await call(t.app, tenant.key, 'POST', `/api/v1/agents/${source.id}/duplicate`, { name: `${source.name} copy` }, { 'idempotency-key': 'dup-1' });
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(201);
    expect(again.json().id).toBe(first.json().id);
  });

  it('lets a new request take over a claim whose process died (in progress for over 60 s)', async () => {
    await t.database.pool.query(
      `insert into idempotency_keys (tenant_id, key, request_hash, state, created_at, expires_at)
       values ($1, 'orphan-1', 'hash-of-a-request-that-never-finished', 'in_progress', now() - interval '61 seconds', now() + interval '1 day')`,
      [tenant.tenantId],
    );
    const body = agentBody();
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'orphan-1' });
    expect(res.statusCode).toBe(201);
    const replay = await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'orphan-1' });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json().id).toBe(res.json().id);
  });

  it('releases a claim on request (5xx path), so the retry runs again', async () => {
    const store = new IdempotencyStore(t.database.pool);
    expect(await store.claim(tenant.tenantId, 'released-1', 'h1')).toEqual({ kind: 'claimed' });
    expect(await store.claim(tenant.tenantId, 'released-1', 'h1')).toEqual({ kind: 'in_progress' });
    await store.release(tenant.tenantId, 'released-1');
    expect(await store.claim(tenant.tenantId, 'released-1', 'h1')).toEqual({ kind: 'claimed' });
    await store.complete(tenant.tenantId, 'released-1', 201, '{"ok":true}', 'application/json');
    await store.release(tenant.tenantId, 'released-1');
    expect(await store.claim(tenant.tenantId, 'released-1', 'h1')).toEqual({ kind: 'replay', status: 201, body: '{"ok":true}', contentType: 'application/json' });
  });

  it('rejects a malformed key with 422 naming the header', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody(), { 'idempotency-key': 'x'.repeat(300) });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters' }]);
  });

  it('expires keys after 24 hours; the purge deletes them and the key can be used anew', async () => {
    const body = agentBody();
    await call(t.app, tenant.key, 'POST', '/api/v1/agents', body, { 'idempotency-key': 'old-1' });
    await t.database.pool.query(`update idempotency_keys set expires_at = now() - interval '1 second' where tenant_id = $1 and key = 'old-1'`, [tenant.tenantId]);
    const purged = await new IdempotencyStore(t.database.pool).purgeExpired();
    expect(purged).toBeGreaterThanOrEqual(1);
    const { rows } = await t.database.pool.query(`select 1 from idempotency_keys where tenant_id = $1 and key = 'old-1'`, [tenant.tenantId]);
    expect(rows).toHaveLength(0);
    const fresh = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody(), { 'idempotency-key': 'old-1' });
    expect(fresh.statusCode).toBe(201);
  });
});
