import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { getTableColumns } from 'drizzle-orm';
import { call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { agents } from '../../src/db/schema/agents.js';
import { AgentRepository } from '../../src/modules/agents/repository.js';

/** AgentRepository.find is hand-written SQL; it must return exactly what drizzle's select does. */
let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

describe('AgentRepository.find (plain SQL, parsed once per stored text, concurrent reads shared)', () => {
  it('maps every column as drizzle does, microsecond timestamps and a sealed key included', async () => {
    const created = await createAgentFor(t.app, tenant.key, { name: 'Mapped', tags: ['x', 'y'] });
    await call(t.app, tenant.key, 'POST', `/api/v1/agents/${created.id}/publish`, {});
    await t.database.pool.query(
      `update agents set llm_api_key_encrypted = 'sealed', created_at = '2026-01-02 03:04:05.678912+00', updated_at = '2026-01-02 03:04:05.999999+00' where id = $1`,
      [created.id],
    );
    const repo = new AgentRepository(t.database.db);
    const found = await repo.find(tenant.tenantId, created.id);
    const [expected] = await t.database.db.select().from(agents).where(eq(agents.id, created.id));
    expect(found).toEqual(expected);
    expect(Object.keys(found!).sort()).toEqual(Object.keys(getTableColumns(agents)).sort());
    expect(found!.createdAt.toISOString()).toBe('2026-01-02T03:04:05.678Z');
    expect(found!.updatedAt.getTime()).toBe(expected!.updatedAt.getTime());
    expect(found!.publishedVersion).toBe(1);
    expect(found!.tags).toEqual(['x', 'y']);
  });

  it('returns the same frozen row while the stored text is unchanged, and a fresh one after any write', async () => {
    const created = await createAgentFor(t.app, tenant.key, { name: 'Memo' });
    const repo = new AgentRepository(t.database.db);
    const first = await repo.find(tenant.tenantId, created.id);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first!.config)).toBe(true);
    expect(await repo.find(tenant.tenantId, created.id)).toBe(first);
    // A write that bypasses the API and leaves version and updated_at alone is still seen.
    await t.database.pool.query(`update agents set config = jsonb_set(config, '{persona,name}', '"Zoe"') where id = $1`, [created.id]);
    const changed = await repo.find(tenant.tenantId, created.id);
    expect(changed).not.toBe(first);
    expect((changed!.config as { persona: { name: string } }).persona.name).toBe('Zoe');
    const [expected] = await t.database.db.select().from(agents).where(eq(agents.id, created.id));
    expect(changed).toEqual(expected);
    // Through the API: a PATCH, then GET answers the new state (not a kept body).
    await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${created.id}`, { name: 'Memo renamed' });
    const got = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${created.id}`);
    expect(got.json()).toMatchObject({ name: 'Memo renamed', version: 2, persona: { name: 'Zoe' } });
    await t.database.pool.query(`update agents set status = 'inactive' where id = $1`, [created.id]);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${created.id}`)).json()).toMatchObject({ status: 'inactive', version: 2 });
  });

  it('shares reads between concurrent finds, yet never answers from before a PATCH that finished first', async () => {
    const created = await createAgentFor(t.app, tenant.key, { name: 'Hot' });
    const repo = new AgentRepository(t.database.db);
    const rows = await Promise.all(Array.from({ length: 20 }, () => repo.find(tenant.tenantId, created.id)));
    expect(new Set(rows).size).toBe(1);
    let finished = 1; // the version of the last PATCH whose answer has arrived
    const gets: Array<Promise<void>> = [];
    for (let i = 1; i <= 5; i++) {
      for (let j = 0; j < 10; j++) {
        const floor = finished;
        gets.push(call(t.app, tenant.key, 'GET', `/api/v1/agents/${created.id}`).then((r) => expect((r.json() as { version: number }).version).toBeGreaterThanOrEqual(floor)));
      }
      const patched = await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${created.id}`, { name: `Hot ${i}` });
      finished = (patched.json() as { version: number }).version;
    }
    await Promise.all(gets);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/agents/${created.id}`)).json()).toMatchObject({ name: 'Hot 5', version: 6 });
  });

  it('is scoped by tenant and returns undefined for a missing agent', async () => {
    const created = await createAgentFor(t.app, tenant.key, { name: 'Scoped' });
    const other = await createTenant(t.database);
    const repo = new AgentRepository(t.database.db);
    expect(await repo.find(other.tenantId, created.id)).toBeUndefined();
    expect(await repo.find(tenant.tenantId, 'agt_missing')).toBeUndefined();
    expect((await repo.find(tenant.tenantId, created.id))?.name).toBe('Scoped');
  });
});
