import { readFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DrizzleQueryError, sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailable, isUniqueViolation } from '../../src/db/errors.js';

/** A loopback port nothing listens on (just freed by a listener of our own). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** What `fn` rejects with (failing the test when it does not). */
async function rejection(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a rejection');
}

describe('isDatabaseUnavailable over real errors', () => {
  it('is true for ECONNREFUSED from net.connect to a closed port', async () => {
    const port = await closedPort();
    const err = await new Promise<unknown>((resolve) => connect(port, '127.0.0.1').on('error', resolve));
    expect(err).toMatchObject({ code: 'ECONNREFUSED', syscall: 'connect' });
    expect(isDatabaseUnavailable(err)).toBe(true);
  });

  it('is true for pg.Client and pg.Pool connecting to a closed port, and for drizzle wrapping it', async () => {
    const port = await closedPort();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    const clientErr = await rejection(() => new pg.Client({ connectionString: url }).connect());
    expect(clientErr).toMatchObject({ code: 'ECONNREFUSED' });
    expect(isDatabaseUnavailable(clientErr)).toBe(true);

    const pool = new pg.Pool({ connectionString: url, max: 1 });
    try {
      const poolErr = await rejection(() => pool.query('select 1'));
      expect(isDatabaseUnavailable(poolErr)).toBe(true);
      const drizzleErr = await rejection(() => drizzle(pool).execute(sql`select 1`));
      expect(drizzleErr).toBeInstanceOf(DrizzleQueryError);
      expect((drizzleErr as Error).cause).toMatchObject({ code: 'ECONNREFUSED' });
      expect(isDatabaseUnavailable(drizzleErr)).toBe(true);
    } finally {
      await pool.end();
    }
  });

  it('is true for a Unix socket that is not there (ENOENT on connect), false for a missing file', async () => {
    const dir = path.join(tmpdir(), `vap-no-such-socket-dir-${process.pid}`);
    const socketErr = await rejection(() => new pg.Client({ host: dir, port: 5432, user: 'postgres', database: 'postgres' }).connect());
    expect(socketErr).toMatchObject({ code: 'ENOENT', syscall: 'connect' });
    expect(isDatabaseUnavailable(socketErr)).toBe(true);

    const fileErr = await rejection(() => readFile(path.join(dir, 'nothing.txt')));
    expect(fileErr).toMatchObject({ code: 'ENOENT', syscall: 'open' });
    expect(isDatabaseUnavailable(fileErr)).toBe(false);
  });

  it('is true for a server that accepts and hangs up (Connection terminated unexpectedly)', async () => {
    const server = createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const err = await rejection(() => new pg.Client({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres` }).connect());
      // Usually pg's own message; on a loaded machine the hang-up can reach the client as a reset of its startup write.
      expect(`${(err as Error).message} ${(err as { code?: string }).code ?? ''}`).toMatch(/Connection terminated unexpectedly|ECONNRESET|EPIPE/);
      expect(isDatabaseUnavailable(err)).toBe(true);
    } finally {
      server.close();
    }
  });

  it('is true for pg-pool timing out a connection attempt', async () => {
    // Accepts and never answers: the connection is made but the startup never completes.
    const held: Socket[] = [];
    const server = createServer((socket) => void held.push(socket));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const pool = new pg.Pool({ connectionString: `postgres://postgres@127.0.0.1:${port}/postgres`, max: 1, connectionTimeoutMillis: 200 });
    pool.on('error', () => undefined);
    try {
      const err = await rejection(() => pool.query('select 1'));
      expect((err as Error).message).toBe('Connection terminated due to connection timeout');
      expect(isDatabaseUnavailable(err)).toBe(true);
    } finally {
      await pool.end();
      for (const s of held) s.destroy();
      server.close();
    }
  });

  it('is true for a backend terminated by the server (57P01), false for a unique violation', async () => {
    const victim = new pg.Client({ connectionString: inject('databaseUrl') });
    const killer = new pg.Client({ connectionString: inject('databaseUrl') });
    victim.on('error', () => undefined);
    await victim.connect();
    await killer.connect();
    try {
      const pid = (await victim.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
      const sleeping = rejection(() => victim.query('select pg_sleep(30)'));
      // Terminates only once the sleep is running, so the victim sees 57P01 and not a dropped socket.
      for (let i = 0; i < 100; i++) {
        const { rows } = await killer.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where pid = $1 and state = 'active'", [pid]);
        if (rows[0]!.n === 1) break;
        await new Promise((r) => setTimeout(r, 20));
      }
      await killer.query('select pg_terminate_backend($1)', [pid]);
      const err = await sleeping;
      expect(err).toMatchObject({ code: '57P01' });
      expect(isDatabaseUnavailable(err)).toBe(true);

      await killer.query('create temporary table unavailable_probe (id int primary key)');
      const dup = await rejection(() => killer.query('insert into unavailable_probe values (1), (1)'));
      expect(isUniqueViolation(dup)).toBe(true);
      expect(isDatabaseUnavailable(dup)).toBe(false);
      expect(isDatabaseUnavailable(new DrizzleQueryError('insert …', [], dup as Error))).toBe(false);
    } finally {
      await victim.end().catch(() => undefined);
      await killer.end();
    }
  });

  it('follows drizzle and plain wrappers, but not the cause of another layer\'s error (fetch)', async () => {
    const port = await closedPort();
    const refused = await new Promise<Error>((resolve) => connect(port, '127.0.0.1').on('error', resolve));
    expect(isDatabaseUnavailable(new DrizzleQueryError('select 1', [], refused))).toBe(true);
    expect(isDatabaseUnavailable(new Error('outer', { cause: new DrizzleQueryError('select 1', [], refused) }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('57P03'), { code: '57P03' }))).toBe(true);
    expect(isDatabaseUnavailable(Object.assign(new Error('08006'), { code: '08006' }))).toBe(true);

    // A fetch to a closed port: TypeError('fetch failed') over the same ECONNREFUSED, which is not the database's.
    const fetchErr = await rejection(() => fetch(`http://127.0.0.1:${port}/`));
    expect(fetchErr).toBeInstanceOf(TypeError);
    expect(isDatabaseUnavailable(fetchErr)).toBe(false);

    for (const other of [undefined, null, 'ECONNREFUSED', 42, new Error('boom'), new RangeError('x'), Object.assign(new Error('x'), { code: 'ERR_INVALID_ARG_TYPE' })]) {
      expect(isDatabaseUnavailable(other)).toBe(false);
    }
    // A cause cycle ends.
    const a = new Error('a') as Error & { cause?: unknown };
    a.cause = a;
    expect(isDatabaseUnavailable(a)).toBe(false);
  });
});
