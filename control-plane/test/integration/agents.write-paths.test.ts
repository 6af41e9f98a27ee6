import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBody, call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

/**
 * Creates and PATCHes without knowledge-base documents are single statements (the PATCH
 * guarded by the version it read, retried, then falling back to the row lock): versions stay
 * consecutive and no change is lost however many writers race.
 */
let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

async function versionRows(agentId: string) {
  const { rows } = await t.database.pool.query<{ version: number; changed_fields: string[]; snapshot: { tags: string[] } }>(
    'select version, changed_fields, snapshot from agent_versions where agent_id = $1 order by version',
    [agentId],
  );
  return rows;
}

describe('agent write paths', () => {
  it('create writes the agent and its version-1 record together', async () => {
    const agent = await createAgentFor(t.app, tenant.key, { name: 'One statement', tags: ['a', 'a', 'b'] });
    expect(agent).toMatchObject({ version: 1, status: 'draft', tags: ['a', 'b'] });
    const rows = await versionRows(agent.id);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ version: 1, changed_fields: [], snapshot: { tags: ['a', 'b'] } });
  });

  it('a create whose name is taken writes nothing and answers 409', async () => {
    await createAgentFor(t.app, tenant.key, { name: 'Taken' });
    const { rows: before } = await t.database.pool.query<{ n: number }>('select count(*)::int as n from agent_versions where tenant_id = $1', [tenant.tenantId]);
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name: 'taken' }));
    expect(res.statusCode).toBe(409);
    const { rows: after } = await t.database.pool.query<{ n: number }>('select count(*)::int as n from agent_versions where tenant_id = $1', [tenant.tenantId]);
    expect(after[0]!.n).toBe(before[0]!.n);
  });

  it('twelve concurrent PATCHes get versions 2..13, each change kept, each record its own snapshot', async () => {
    const agent = await createAgentFor(t.app, tenant.key, { name: 'Raced' });
    const n = 12;
    const results = await Promise.all(Array.from({ length: n }, (_, i) => call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${agent.id}`, { tags: [`t${i}`] })));
    expect(results.map((r) => r.statusCode)).toEqual(Array(n).fill(200));
    expect(results.map((r) => r.json().version as number).sort((a, b) => a - b)).toEqual(Array.from({ length: n }, (_, i) => i + 2));
    const rows = await versionRows(agent.id);
    expect(rows.map((r) => r.version)).toEqual(Array.from({ length: n + 1 }, (_, i) => i + 1));
    // Each response's tags are the snapshot of the version it reports.
    for (const r of results) expect(rows.find((v) => v.version === r.json().version)!.snapshot.tags).toEqual(r.json().tags);
    const got = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json();
    expect(got.version).toBe(n + 1);
    expect(got.tags).toEqual(rows[n]!.snapshot.tags);
  });

  it('a PATCH renaming onto a taken name answers 409 and leaves the version alone', async () => {
    await createAgentFor(t.app, tenant.key, { name: 'Occupied' });
    const agent = await createAgentFor(t.app, tenant.key, { name: 'Mover' });
    const res = await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${agent.id}`, { name: 'OCCUPIED' });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toContain('OCCUPIED');
    expect((await versionRows(agent.id)).map((r) => r.version)).toEqual([1]);
  });
});
