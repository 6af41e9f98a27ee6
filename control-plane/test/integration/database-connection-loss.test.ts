import { sql } from 'drizzle-orm';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { startDatabaseProxy } from '../database-proxy.js';
import type { DatabaseProxy } from '../database-proxy.js';

// Connections that die under the pool (a Postgres failover, a network cut): the database goes
// away behind a TCP hop the test cuts, while the run's server stays up.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let proxy: DatabaseProxy | undefined;
let database: Database | undefined;
afterEach(async () => {
  await proxy?.restore();
  await database?.close();
  await proxy?.cut();
  proxy = database = undefined;
});

async function open(poolSize: number): Promise<Database> {
  proxy = await startDatabaseProxy(inject('databaseUrl'));
  database = openDatabase(proxy.url, poolSize);
  return database;
}

/** Fills the pool with `n` idle connections. */
async function warm(db: Database, n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, () => db.db.transaction(async (tx) => tx.execute(sql`select pg_sleep(0.05)`))));
  expect(db.pool.idleCount).toBe(n);
}

describe('pooled connections lost under the control plane', () => {
  it('gives back a connection whose `begin` failed, so the pool serves again once the database is back', async () => {
    const db = await open(2);
    let beginFailures = 0;
    for (let round = 0; round < 3; round++) {
      await warm(db, 2);
      const cut = proxy!.cut();
      // Handed out before the pool has seen their sockets close: `begin` is what fails.
      const results = await Promise.allSettled([db.db.transaction(async () => 1), db.db.transaction(async () => 2)]);
      await cut;
      expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
      beginFailures += results.filter((r) => r.status === 'rejected' && /terminated|ECONNRESET|EPIPE/.test(String((r.reason as Error).message) + String((r.reason as { cause?: Error }).cause?.message))).length;
      await proxy!.restore();
      // drizzle kept each such connection for good: with both kept, this waited forever.
      const answer = await Promise.race([db.db.transaction(async (tx) => (await tx.execute<{ n: number }>(sql`select 42 as n`)).rows[0]!.n), sleep(5000).then(() => 'the pool is exhausted')]);
      expect(answer).toBe(42);
      expect(db.pool.totalCount - db.pool.idleCount).toBe(0);
    }
    // The case this is about did happen (and not only refused connections).
    expect(beginFailures).toBeGreaterThan(0);
  });

  it('does not crash the process when a connection inside a transaction drops between two queries', async () => {
    const db = await open(1);
    await warm(db, 1);
    const failed = await db.db
      .transaction(async (tx) => {
        await tx.execute(sql`select 1`);
        await proxy!.cut();
        // No query in flight: node-postgres emits 'error' on the client, which without a listener is an uncaught exception.
        await sleep(100);
        await tx.execute(sql`select 2`);
      })
      .then(
        () => null,
        (err: unknown) => err,
      );
    expect(failed).toBeInstanceOf(Error);
    await proxy!.restore();
    expect((await db.pool.query('select 3 as n')).rows[0].n).toBe(3);
  });
});
