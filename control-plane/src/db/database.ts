import { fileURLToPath } from 'node:url';
import { drizzle } from 'drizzle-orm/node-postgres';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import * as schema from './schema/index.js';
import { StatementNames, namingClient } from './statement-names.js';
import { installTransactionFix } from './transaction-fix.js';

export type Db = NodePgDatabase<typeof schema>;

/** The pool behind `db` (drizzle's node-postgres driver keeps it as `$client`). */
export function poolOf(db: Db): pg.Pool {
  return (db as Db & { $client: pg.Pool }).$client;
}

/** The pool and the drizzle handle over it; `close()` ends the pool. */
export interface Database {
  pool: pg.Pool;
  db: Db;
  close(): Promise<void>;
}

const MIGRATIONS_DIR = fileURLToPath(new URL('../../drizzle', import.meta.url));
// Any constant works; it only has to be the same for every replica.
const MIGRATION_LOCK_ID = 7_361_001;

export function openDatabase(url: string, poolSize: number): Database {
  // Statements used more than once go as named statements: Postgres parses each text once per connection.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, idleTimeoutMillis: 30_000, Client: namingClient(new StatementNames()) });
  // An idle client that loses its server emits 'error'; without a listener that kills the process.
  pool.on('error', () => undefined);
  // So does a checked-out one (a transaction between two queries when the connection drops): its
  // queries fail on their own and the pool drops it when it comes back, so the event says nothing new.
  pool.on('connect', (client) => void client.on('error', () => undefined));
  installTransactionFix();
  const db = drizzle(pool, { schema });
  return { pool, db, close: () => pool.end() };
}

/**
 * Applies the committed migrations. Several replicas may start at once, so the run is
 * serialised with a session advisory lock; the migrator skips what is already applied.
 */
export async function runMigrations(database: Database): Promise<void> {
  const client = await database.pool.connect();
  try {
    await client.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_ID]);
    try {
      await migrate(drizzle(client, { schema }), { migrationsFolder: MIGRATIONS_DIR });
    } finally {
      await client.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_ID]);
    }
  } finally {
    client.release();
  }
}
