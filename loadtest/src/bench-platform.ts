import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createLogger, loadConfig, startControlPlane } from '@vap/control-plane';
import type { ControlPlaneConfig } from '@vap/control-plane';
import { InProcessBus, spareLoopbackPort } from '@vap/shared';
import type { PoolCounts } from './server-probe.js';

/** A control plane started for one benchmark run, on its own fresh database. */
export interface BenchPlatform {
  /** Origin, e.g. http://127.0.0.1:41233. */
  url: string;
  /** The bootstrap key: every scope, enterprise plan. */
  apiKey: string;
  databaseMode: 'external' | 'embedded';
  /** The bootstrap tenant, owner of `apiKey`. */
  tenantId: string;
  /** The bench database (on DATABASE_URL's server or the embedded one), for a benchmark's own pool. */
  databaseUrl: string;
  /** The configuration the control plane runs with. */
  config: ControlPlaneConfig;
  /** The control plane's own Postgres pool (its requests queue here for a connection): a benchmark reads its counters, never queries on it. */
  pool: PoolCounts;
  /** Stops the platform, then drops the bench database or removes the embedded one. */
  close(): Promise<void>;
}

// Enterprise plans take RATE_LIMIT_ENTERPRISE per minute; this is the schema's maximum,
// far above what one machine serves in a minute, so the limiter counts but never refuses.
const RATE_LIMIT_PER_MINUTE = '1000000';

/** `create database` on the server, returning its URL and how to drop it. */
async function createBenchDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `vap_bench_${Date.now()}_${process.pid}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}

/**
 * Starts the control plane in this process on loopback with an ephemeral port, silent
 * logs, the in-process bus and a fresh database, so bootstrap mints a full-scope key.
 * With `serverDatabaseUrl` a new database is created on that server (bootstrap only
 * happens on an empty one); without it an embedded Postgres runs in a temporary directory.
 * `extraEnv` adds or overrides control-plane settings (e.g. WEBHOOK_CONCURRENCY).
 */
export async function startBenchPlatform(serverDatabaseUrl: string | undefined, extraEnv: Record<string, string> = {}): Promise<BenchPlatform> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'vap-bench-'));
  const cleanups: Array<() => Promise<void>> = [async () => rmSync(dataDir, { recursive: true, force: true })];
  const cleanUp = async () => {
    for (const step of cleanups.splice(0).reverse()) await step().catch((err: unknown) => console.error('bench cleanup failed:', err));
  };
  try {
    const env: Record<string, string> = {
      HOST: '127.0.0.1',
      PORT: '0',
      // An ephemeral admin port too: benchmarks (and their CI smokes) may run side by side.
      ADMIN_PORT: '0',
      LOG_LEVEL: 'silent',
      DATA_DIR: dataDir,
      BOOTSTRAP_TENANT_PLAN: 'enterprise',
      RATE_LIMIT_ENTERPRISE: RATE_LIMIT_PER_MINUTE,
      SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      ...extraEnv,
    };
    if (serverDatabaseUrl) {
      const db = await createBenchDatabase(serverDatabaseUrl);
      cleanups.push(db.drop);
      env.DATABASE_URL = db.url;
    } else {
      env.EMBEDDED_PG_PORT = String(await spareLoopbackPort());
    }
    const config = loadConfig(env);
    const bus = new InProcessBus();
    cleanups.push(() => bus.close());
    const cp = await startControlPlane(config, { bus, logger: createLogger(config.logLevel, 'bench') });
    cleanups.push(() => cp.close());
    const apiKey = cp.bootstrap?.apiKey;
    if (!apiKey || !cp.bootstrap) throw new Error('the bench database was not empty: bootstrap minted no API key');
    const databaseUrl = cp.database.pool.options.connectionString;
    if (!databaseUrl) throw new Error('the control plane pool has no connection string');
    return { url: cp.url, apiKey, databaseMode: cp.databaseMode, tenantId: cp.bootstrap.tenantId, databaseUrl, config, pool: cp.database.pool, close: cleanUp };
  } catch (err) {
    await cleanUp();
    throw err;
  }
}
