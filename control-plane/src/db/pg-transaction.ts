import type pg from 'pg';

/**
 * Runs `work` inside `begin … commit` on a pooled client of its own (for code on plain `pg`
 * rather than drizzle). It rolls back and rethrows when `work` throws, and rolls back instead
 * of committing when `commitIf` says no; the client always goes back to the pool.
 */
export async function inPgTransaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>, commitIf: (result: T) => boolean = () => true): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const result = await work(client);
    await client.query(commitIf(result) ? 'commit' : 'rollback');
    return result;
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
