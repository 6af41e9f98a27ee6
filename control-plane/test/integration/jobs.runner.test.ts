/**
 * The durable job queue and runner on a real Postgres (a database of this file's own: a
 * runner claims any tenant's jobs). Replicas are separate runners with their own pools.
 */
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { JobQueue, enqueueJob } from '../../src/modules/jobs/job-queue.js';
import type { ClaimedJob, JobSpec } from '../../src/modules/jobs/job-queue.js';
import { JobRunner, PermanentJobError } from '../../src/modules/jobs/job-runner.js';
import type { JobHandler, JobRunnerOptions } from '../../src/modules/jobs/job-runner.js';
import { isolatedDatabase } from '../helpers.js';

let database: Database;
let url: string;
let drop: () => Promise<void>;
const runners: JobRunner[] = [];
const extraDatabases: Database[] = [];

beforeAll(async () => {
  const iso = await isolatedDatabase();
  database = iso.database;
  url = iso.url;
  drop = iso.drop;
});
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
  await database.pool.query('delete from jobs');
});
afterAll(async () => {
  await Promise.all(extraDatabases.map((d) => d.close()));
  await drop();
});

const kind = 'test.work';
const spec = (over: Partial<JobSpec> = {}): JobSpec => ({ kind, tenantId: 'ten_test', subjectId: `subj_${randomBytes(6).toString('hex')}`, maxAttempts: 3, ...over });
const enqueue = (s: JobSpec, db: Database = database) => db.db.transaction((tx) => enqueueJob(tx, s));
/** A runner on its own pool, as another control plane would have. */
function runner(handler: JobHandler, opts: Partial<Omit<JobRunnerOptions, 'pool' | 'log'>> = {}): JobRunner {
  const db = openDatabase(url, 4);
  extraDatabases.push(db);
  const r = new JobRunner({ pool: db.pool, log: pino({ level: 'silent' }), concurrency: 4, pollIntervalMs: 200, ...opts }).register(kind, handler);
  runners.push(r);
  return r;
}
const row = async (subjectId: string) => (await new JobQueue(database.pool).find(kind, subjectId))!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('job queue', () => {
  it('enqueues one job per (kind, subject) and ignores repeats', async () => {
    const s = spec({ payload: { a: 1 } });
    expect(await enqueue(s)).toBe(true);
    expect(await enqueue({ ...s, payload: { a: 2 } })).toBe(false);
    const { rows } = await database.pool.query('select payload, status, attempts from jobs where subject_id = $1', [s.subjectId]);
    expect(rows).toEqual([{ payload: { a: 1 }, status: 'pending', attempts: 0 }]);
  });

  it('does not create the job when the enqueueing transaction rolls back', async () => {
    const s = spec();
    await expect(
      database.db.transaction(async (tx) => {
        await enqueueJob(tx, s);
        throw new Error('change failed');
      }),
    ).rejects.toThrow('change failed');
    expect(await new JobQueue(database.pool).find(kind, s.subjectId)).toBeUndefined();
  });
});

describe('job runner', () => {
  it('runs a committed job at once, woken by its commit, and records success', async () => {
    const seen: ClaimedJob[] = [];
    await runner(async (job) => void seen.push(job), { pollIntervalMs: 60_000 }).start();
    const s = spec({ payload: { hello: 'world' } });
    await enqueue(s);
    await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 3000 });
    expect(seen[0]).toMatchObject({ subjectId: s.subjectId, tenantId: 'ten_test', payload: { hello: 'world' }, attempt: 1, maxAttempts: 3 });
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('succeeded'));
    expect((await row(s.subjectId)).finishedAt).toBeInstanceOf(Date);
  });

  it('never runs one job twice across two runners, even when handlers outlast the lease', async () => {
    const runs = new Map<string, number>();
    const handler: JobHandler = async (job) => {
      runs.set(job.subjectId, (runs.get(job.subjectId) ?? 0) + 1);
      await sleep(job.payload.slow ? 700 : 5);
    };
    const a = runner(handler, { leaseMs: 300, pollIntervalMs: 50 });
    const b = runner(handler, { leaseMs: 300, pollIntervalMs: 50 });
    await Promise.all([a.start(), b.start()]);
    const specs = Array.from({ length: 40 }, (_, i) => spec({ payload: { slow: i < 4 } }));
    for (const s of specs) await enqueue(s);
    await vi.waitFor(
      async () => {
        const { rows } = await database.pool.query<{ n: number }>(`select count(*)::int as n from jobs where status = 'succeeded'`);
        expect(rows[0]?.n).toBe(40);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(40);
    const { rows } = await database.pool.query<{ attempts: number }>('select distinct attempts from jobs');
    expect(rows).toEqual([{ attempts: 1 }]);
  });

  it('keeps at most `concurrency` handlers running in one runner', async () => {
    let running = 0;
    let peak = 0;
    await runner(
      async () => {
        peak = Math.max(peak, ++running);
        await sleep(40);
        running--;
      },
      { concurrency: 3, pollIntervalMs: 50 },
    ).start();
    for (let i = 0; i < 12; i++) await enqueue(spec());
    await vi.waitFor(async () => expect((await database.pool.query(`select 1 from jobs where status = 'succeeded'`)).rowCount).toBe(12), { timeout: 5000 });
    expect(peak).toBe(3);
  });

  it('takes over a job whose worker died (lease expired), and fences the dead worker out', async () => {
    const s = spec();
    await enqueue(s);
    const dead = new JobQueue(database.pool);
    const [claimed] = await dead.claim({ kinds: [kind], limit: 1, leaseMs: 300, now: new Date() });
    expect(claimed?.attempt).toBe(1);
    const seen: ClaimedJob[] = [];
    await runner(async (job) => void seen.push(job), { pollIntervalMs: 50 }).start();
    await sleep(150);
    expect(seen).toHaveLength(0); // still leased
    await vi.waitFor(() => expect(seen).toHaveLength(1), { timeout: 3000 });
    expect(seen[0]?.attempt).toBe(2);
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('succeeded'));
    expect(await dead.succeed(claimed!, new Date())).toBe(false);
    expect(await dead.fail(claimed!, 'late', null, new Date())).toBe('lease-lost');
    expect((await row(s.subjectId)).status).toBe('succeeded');
  });

  it('retries a failed attempt with exponential backoff, then fails for good with the last error', async () => {
    const t0 = Date.now();
    let clock = t0;
    const attempts: number[] = [];
    const r = runner(
      async (job) => {
        attempts.push(job.attempt);
        throw new Error(`provider down (attempt ${job.attempt})`);
      },
      { now: () => clock, retryDelaysMs: [5_000, 30_000], pollIntervalMs: 50 },
    );
    const s = spec({ maxAttempts: 3, runAt: new Date(t0) });
    await enqueue(s);
    await r.start();
    await vi.waitFor(async () => expect((await row(s.subjectId)).attempts).toBe(1));
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('pending'));
    let job = await row(s.subjectId);
    expect(job.runAt.getTime() - t0).toBe(5_000);
    expect(job.lastError).toBe('Error: provider down (attempt 1)');
    await sleep(300);
    expect(attempts).toEqual([1]); // not due yet on the runner's clock
    clock = t0 + 5_000;
    r.wake();
    await vi.waitFor(async () => expect((await row(s.subjectId)).attempts).toBe(2));
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('pending'));
    expect((await row(s.subjectId)).runAt.getTime() - t0).toBe(35_000);
    clock = t0 + 35_000;
    r.wake();
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('failed'));
    job = await row(s.subjectId);
    expect(attempts).toEqual([1, 2, 3]);
    expect(job.lastError).toBe('Error: provider down (attempt 3)');
    expect(job.finishedAt).toBeInstanceOf(Date);
  });

  it('fails at once on a PermanentJobError', async () => {
    await runner(async () => {
      throw new PermanentJobError('provider not supported');
    }).start();
    const s = spec({ maxAttempts: 5 });
    await enqueue(s);
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('failed'));
    expect(await row(s.subjectId)).toMatchObject({ attempts: 1, lastError: 'PermanentJobError: provider not supported' });
  });

  it('survives a restart: stop waits for the running handler, a new runner picks up what was left', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const done: string[] = [];
    const first = runner(async (job) => {
      await gate;
      done.push(job.subjectId);
    }, { concurrency: 1 });
    await first.start();
    const a = spec();
    const b = spec();
    await enqueue(a);
    await vi.waitFor(async () => expect((await row(a.subjectId)).status).toBe('running'));
    await enqueue(b);
    let stopped = false;
    const stopping = first.stop().then(() => (stopped = true));
    await sleep(100);
    expect(stopped).toBe(false); // waits for the handler in flight
    release();
    await stopping;
    expect(done).toEqual([a.subjectId]);
    expect((await row(a.subjectId)).status).toBe('succeeded');
    expect((await row(b.subjectId)).status).toBe('pending');
    await runner(async (job) => void done.push(job.subjectId)).start();
    await vi.waitFor(async () => expect((await row(b.subjectId)).status).toBe('succeeded'));
    expect(done).toEqual([a.subjectId, b.subjectId]);
  });

  it('fails a job whose last allowed attempt died with its worker', async () => {
    const s = spec({ maxAttempts: 1 });
    await enqueue(s);
    await new JobQueue(database.pool).claim({ kinds: [kind], limit: 1, leaseMs: 50, now: new Date() });
    const seen: string[] = [];
    await runner(async (job) => void seen.push(job.id), { pollIntervalMs: 50 }).start();
    await vi.waitFor(async () => expect((await row(s.subjectId)).status).toBe('failed'));
    expect(seen).toEqual([]);
    expect((await row(s.subjectId)).lastError).toMatch(/worker lost/);
  });
});
