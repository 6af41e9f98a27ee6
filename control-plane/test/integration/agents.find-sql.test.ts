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

describe('AgentRepository.find (plain SQL)', () => {
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

  it('is scoped by tenant and returns undefined for a missing agent', async () => {
    const created = await createAgentFor(t.app, tenant.key, { name: 'Scoped' });
    const other = await createTenant(t.database);
    const repo = new AgentRepository(t.database.db);
    expect(await repo.find(other.tenantId, created.id)).toBeUndefined();
    expect(await repo.find(tenant.tenantId, 'agt_missing')).toBeUndefined();
    expect((await repo.find(tenant.tenantId, created.id))?.name).toBe('Scoped');
  });
});
