import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { pino } from 'pino';
import { spareLoopbackPort } from '@vap/shared';
import { openDatabase, runMigrations } from '../src/db/database.js';
import { startEmbeddedPostgres } from '../src/db/embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * One fresh, migrated database per test run. With DATABASE_URL (CI: the machine's
 * Postgres) a new database is created on that server and dropped afterwards; without it
 * an embedded Postgres is started in a temporary directory, so a newcomer with only Node
 * runs the same tests. Each test file creates its own tenants, so files do not collide.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
   
  const serverUrl = process.env.DATABASE_URL;
  let teardown: () => Promise<void>;
  let url: string;
  if (serverUrl) {
    const name = `vap_test_${process.pid}_${Date.now()}`;
    const admin = new pg.Client({ connectionString: serverUrl });
    await admin.connect();
    await admin.query(`create database ${name}`);
    await admin.end();
    const u = new URL(serverUrl);
    u.pathname = `/${name}`;
    url = u.toString();
    teardown = async () => {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    };
  } else {
    const dir = mkdtempSync(path.join(tmpdir(), 'vap-test-pg-'));
    const port = await spareLoopbackPort();
    const embedded = await startEmbeddedPostgres({ dataDir: dir, port, log: pino({ level: 'silent' }), database: 'test' });
    url = embedded.url;
    teardown = async () => {
      await embedded.stop();
      rmSync(dir, { recursive: true, force: true });
    };
  }
  const database = openDatabase(url, 2);
  await runMigrations(database);
  await database.close();
  project.provide('databaseUrl', url);
  return teardown;
}
