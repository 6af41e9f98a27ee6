import { sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import { NodePgSession, NodePgTransaction } from 'drizzle-orm/node-postgres';
import type { PgDialect, PgTransactionConfig } from 'drizzle-orm/pg-core';
import pg from 'pg';

/** The parts of drizzle's node-postgres session the replacement reads (private in its types). */
interface SessionInternals {
  client: pg.Pool | pg.PoolClient;
  dialect: PgDialect;
  schema: unknown;
  options: unknown;
}

type SessionCtor = new (client: pg.PoolClient, dialect: PgDialect, schema: unknown, options: unknown) => NodePgSession<Record<string, unknown>, never>;
type TransactionCtor = new (dialect: PgDialect, session: unknown, schema: unknown) => NodePgTransaction<Record<string, unknown>, never> & {
  /** drizzle's own (internal): `isolation level …` and the rest of `config`. */
  getTransactionConfigSQL(config: PgTransactionConfig): SQL;
};

let installed = false;

/**
 * Replaces drizzle-orm's node-postgres `transaction` (0.44.7; 0.45.4 is the same) with one that
 * always gives its client back. drizzle sends `begin` before its try/finally, so when `begin`
 * fails the pooled client is never released: that is what happens to a connection that died
 * while idle in the pool (a Postgres failover or restart, a network cut) and is handed out
 * before the pool noticed. Each such failure kept one connection of the pool for good; once
 * they were all kept, every database operation of the control plane waited forever, long
 * after the database was back. The replacement is drizzle's code with `begin` inside the
 * try; a client whose `begin` or `rollback` failed goes back with the error, so the pool drops
 * it instead of reusing a connection that may still be in a transaction. Idempotent.
 */
export function installTransactionFix(): void {
  if (installed) return;
  installed = true;
  const Session = NodePgSession as unknown as SessionCtor;
  const Transaction = NodePgTransaction as unknown as TransactionCtor;
  (NodePgSession.prototype as unknown as { transaction: unknown }).transaction = async function transaction<T>(
    this: SessionInternals,
    work: (tx: NodePgTransaction<Record<string, unknown>, never>) => Promise<T>,
    config?: PgTransactionConfig,
  ): Promise<T> {
    const pooled = this.client instanceof pg.Pool;
    const client = pooled ? await (this.client as pg.Pool).connect() : null;
    const session = client ? new Session(client, this.dialect, this.schema, this.options) : this;
    const tx = new Transaction(this.dialect, session, this.schema);
    let broken: Error | undefined;
    try {
      try {
        await tx.execute(sql`begin${config ? sql` ${tx.getTransactionConfigSQL(config)}` : undefined}`);
      } catch (err) {
        broken = err instanceof Error ? err : new Error(String(err));
        throw err;
      }
      try {
        const result = await work(tx);
        await tx.execute(sql`commit`);
        return result;
      } catch (error) {
        await tx.execute(sql`rollback`).catch((err: unknown) => {
          broken = err instanceof Error ? err : new Error(String(err));
        });
        throw error;
      }
    } finally {
      client?.release(broken);
    }
  };
}
