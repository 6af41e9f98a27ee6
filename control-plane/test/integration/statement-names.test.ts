/**
 * The pool's named statements on a real Postgres: a parameterized text sent twice becomes a
 * prepared statement of the connection, a one-off or parameterless text does not, and
 * queries keep their results (drizzle's included).
 */
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tenants } from '../../src/db/schema/tenants.js';
import { StatementNames, namingClient } from '../../src/db/statement-names.js';
import { isolatedDatabase } from '../helpers.js';

let iso: Awaited<ReturnType<typeof isolatedDatabase>>;

beforeAll(async () => {
  // One connection, so every query below runs in the session pg_prepared_statements shows.
  iso = await isolatedDatabase(1);
  await iso.database.pool.query(`insert into tenants (id, name, slug, plan) values ('ten_named', 'Named', 'named', 'enterprise')`);
});
afterAll(async () => iso?.drop());

async function prepared(): Promise<Array<{ name: string; statement: string }>> {
  const { rows } = await iso.database.pool.query<{ name: string; statement: string }>('select name, statement from pg_prepared_statements order by name');
  return rows;
}

describe('named statements', () => {
  it('prepares a parameterized text on its second use, with unchanged results', async () => {
    const { db } = iso.database;
    const read = () => db.select({ id: tenants.id, name: tenants.name }).from(tenants).where(eq(tenants.id, 'ten_named'));
    expect(await read()).toEqual([{ id: 'ten_named', name: 'Named' }]);
    expect((await prepared()).filter((p) => p.statement.includes('"tenants"'))).toEqual([]);
    for (let i = 0; i < 3; i++) expect(await read()).toEqual([{ id: 'ten_named', name: 'Named' }]);
    const named = (await prepared()).filter((p) => p.statement.includes('"tenants"'));
    expect(named).toHaveLength(1);
    expect(named[0]!.name).toMatch(/^vap_\d+$/);
    // Another value, same statement.
    const other = await db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, 'ten_missing'));
    expect(other).toEqual([]);
    expect((await prepared()).filter((p) => p.statement.includes('"tenants"'))).toHaveLength(1);
  });

  it('leaves texts without parameters unnamed, several statements in one included', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await iso.database.pool.query('select 1 as one; select 2 as two');
      expect((res as unknown as Array<{ rows: unknown[] }>).map((r) => r.rows)).toEqual([[{ one: 1 }], [{ two: 2 }]]);
    }
    expect((await prepared()).filter((p) => p.statement.includes('as one'))).toEqual([]);
  });

  it('names texts passed as strings with values too', async () => {
    const text = 'select slug from tenants where id = $1';
    for (let i = 0; i < 3; i++) expect((await iso.database.pool.query(text, ['ten_named'])).rows).toEqual([{ slug: 'named' }]);
    expect((await prepared()).map((p) => p.statement)).toContain(text);
  });

  it('parses again a named text that failed to parse, on the same connection', async () => {
    // A pool drops a connection after any error, so this uses one client of the pool's class.
    const client = new (namingClient(new StatementNames(10, 1)))({ connectionString: iso.url });
    await client.connect();
    try {
      const bad = 'select no_such_column from tenants where id = $1';
      // Each try is parsed and refused anew (not "prepared statement does not exist").
      for (let i = 0; i < 3; i++) await expect(client.query(bad, ['ten_named'])).rejects.toThrow(/no_such_column/);
      const good = 'select name from tenants where id = $1';
      for (let i = 0; i < 2; i++) expect((await client.query(good, ['ten_named'])).rows).toEqual([{ name: 'Named' }]);
      const { rows } = await client.query<{ statement: string }>('select statement from pg_prepared_statements');
      expect(rows.map((r) => r.statement)).toEqual([good]);
    } finally {
      await client.end();
    }
  });
});
