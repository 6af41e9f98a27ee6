/**
 * Shared by the benchmark smoke tests: runs a package script as CI would (`pnpm run`),
 * bounded in time, on the local Postgres.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

/** The local Postgres the smokes run on; the benchmarks create (and drop) a database of their own there. */
export const SMOKE_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

const LOADTEST_DIR = fileURLToPath(new URL('..', import.meta.url));

/** Whether a Postgres answers at `url` within two seconds. */
export async function postgresReachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface ScriptRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `pnpm -s run <script> -- <args>` in loadtest/ with DATABASE_URL set. The process group
 * is killed if it outlives `timeoutMs` (pnpm, tsx and the benchmark are three processes).
 */
export function runScript(script: string, args: string[], timeoutMs: number): Promise<ScriptRun> {
  const child = spawn('pnpm', ['-s', 'run', script, '--', ...args], {
    cwd: LOADTEST_DIR,
    env: { ...process.env, DATABASE_URL: SMOKE_DATABASE_URL },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGTERM');
      } catch {
        // already gone
      }
      reject(new Error(`${script} ran over ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The report path a benchmark prints after "results written to". */
export function resultsFileOf(stdout: string): string {
  const m = /results written to (\S+\.json)/.exec(stdout);
  if (!m) throw new Error(`no "results written to" line in:\n${stdout}`);
  return m[1]!;
}
