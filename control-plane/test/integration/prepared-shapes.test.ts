import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { and, asc, eq, sql } from 'drizzle-orm';
import { createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { agents } from '../../src/db/schema/agents.js';
import { PreparedPages, pageWithTotal } from '../../src/db/page-query.js';
import type { ListSpec } from '../../src/db/page-query.js';
import { ShapedStatements } from '../../src/db/shaped-statements.js';

/** Statements built once per shape with placeholders answer exactly what building them per call does. */
let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  other = await createTenant(t.database);
  for (let i = 1; i <= 7; i++) await createAgentFor(t.app, tenant.key, { name: `Shape ${i}`, tags: i % 2 === 0 ? ['even'] : ['odd'] });
  await createAgentFor(t.app, other.key, { name: 'Shape elsewhere', tags: ['even'] });
});
afterAll(async () => t.close());

/** The agents of `tenantId` by name, optionally with one tag, as a spec with values inline. */
function inline(tenantId: string, tag?: string): ListSpec {
  const where = and(eq(agents.tenantId, tenantId), tag ? sql`${agents.tags} @> ${sql.param([tag])}::text[]` : undefined);
  return { where, orderBy: [asc(agents.name), asc(agents.id)] };
}

/** The same with placeholders `tenantId` and (when `withTag`) `tag`. */
function shaped(withTag: boolean): ListSpec {
  const where = and(eq(agents.tenantId, sql.placeholder('tenantId')), withTag ? sql`${agents.tags} @> ${sql.placeholder('tag')}::text[]` : undefined);
  return { where, orderBy: [asc(agents.name), asc(agents.id)] };
}

describe('PreparedPages', () => {
  it('builds a shape once and answers every page, values and tenant as pageWithTotal does', async () => {
    const pages = new PreparedPages(t.database.db, agents);
    const builds: string[] = [];
    const build = (withTag: boolean) => () => {
      builds.push(withTag ? 'tag' : 'all');
      return shaped(withTag);
    };
    for (const [tenantId, tag] of [[tenant.tenantId, undefined], [tenant.tenantId, 'even'], [tenant.tenantId, 'odd'], [other.tenantId, 'even'], [other.tenantId, undefined]] as const) {
      for (const page of [1, 2, 3, 4]) {
        const q = { page, pageSize: 3 };
        const values = tag ? { tenantId, tag: [tag] } : { tenantId };
        const got = await pages.page(tag ? 'tag' : 'all', build(tag !== undefined), values, q);
        const expected = await pageWithTotal(t.database.db, agents, inline(tenantId, tag), q);
        expect(got).toEqual(expected);
      }
    }
    // Two shapes, each built once for 20 pages (past-the-end pages counted on their own included).
    expect(builds).toEqual(['all', 'tag']);
    expect(pages.size).toBe(2);
    const past = await pages.page('all', build(false), { tenantId: tenant.tenantId }, { page: 9, pageSize: 3 });
    expect(past).toEqual({ rows: [], total: 7 });
    const names = await pages.page('tag', build(true), { tenantId: tenant.tenantId, tag: ['odd'] }, { page: 1, pageSize: 10 });
    expect(names.rows.map((r) => r.name)).toEqual(['Shape 1', 'Shape 3', 'Shape 5', 'Shape 7']);
    expect(names.total).toBe(4);
  });

  it('beyond its shapes builds per call, with the same answers', async () => {
    const pages = new PreparedPages(t.database.db, agents, 1);
    let builds = 0;
    const build = (withTag: boolean) => () => {
      builds += 1;
      return shaped(withTag);
    };
    await pages.page('all', build(false), { tenantId: tenant.tenantId }, { page: 1, pageSize: 3 });
    for (const page of [1, 3]) {
      const got = await pages.page('tag', build(true), { tenantId: tenant.tenantId, tag: ['even'] }, { page, pageSize: 2 });
      expect(got).toEqual(await pageWithTotal(t.database.db, agents, inline(tenant.tenantId, 'even'), { page, pageSize: 2 }));
    }
    expect(pages.size).toBe(1);
    expect(builds).toBe(3);
  });
});

describe('ShapedStatements', () => {
  it('builds a shape once and fills its placeholders anew on every execution', async () => {
    const statements = new ShapedStatements(t.database.pool);
    let builds = 0;
    const build = () => {
      builds += 1;
      return sql`select count(*)::int as n from ${agents} where ${agents.tenantId} = ${sql.placeholder('tenantId')} and ${agents.tags} @> ${sql.placeholder('tags')}::text[] and ${agents.name} like ${'Shape%'}`;
    };
    const count = async (tenantId: string, tags: string[]) => (await statements.query<{ n: number }>('count', build, { tenantId, tags })).rows[0]!.n;
    expect(await count(tenant.tenantId, ['even'])).toBe(3);
    expect(await count(tenant.tenantId, ['odd'])).toBe(4);
    expect(await count(other.tenantId, ['even'])).toBe(1);
    expect(await count(other.tenantId, ['odd'])).toBe(0);
    expect(builds).toBe(1);
    expect(statements.size).toBe(1);
  });

  it('beyond its shapes runs the statement built per call', async () => {
    const statements = new ShapedStatements(t.database.pool, 0);
    const build = () => sql`select ${sql.placeholder('a')}::int + ${sql.placeholder('b')}::int as sum`;
    expect((await statements.query<{ sum: number }>('sum', build, { a: 2, b: 3 })).rows).toEqual([{ sum: 5 }]);
    expect((await statements.query<{ sum: number }>('sum', build, { a: 7, b: 3 })).rows).toEqual([{ sum: 10 }]);
    expect(statements.size).toBe(0);
  });

  it('names a missing value', async () => {
    const statements = new ShapedStatements(t.database.pool);
    await expect(statements.query('missing', () => sql`select ${sql.placeholder('absent')}::int`, {})).rejects.toThrow(/absent/);
  });
});
