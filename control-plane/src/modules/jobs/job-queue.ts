import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { newId } from '@vap/shared';
import type { JobStatus } from '../../db/schema/jobs.js';
import type { SqlExecutor } from '../webhooks/event-outbox.js';

/** Postgres channel that tells every control plane's job runner new jobs were committed. */
export const JOBS_CHANNEL = 'jobs_enqueued';

/** Work to do later, durably. `(kind, subjectId)` is unique: enqueueing it again does nothing. */
export interface JobSpec {
  kind: string;
  tenantId: string;
  /** What the job is about (a conversation id for analysis). */
  subjectId: string;
  payload?: Record<string, unknown>;
  /** Attempts before the job fails for good (crashed attempts whose lease ran out count too). */
  maxAttempts: number;
  /** Not before this time; default now. */
  runAt?: Date;
}

/** A job claimed by one worker for one attempt. */
export interface ClaimedJob {
  id: string;
  kind: string;
  tenantId: string;
  subjectId: string;
  payload: Record<string, unknown>;
  /** 1 for the first attempt. Also the claim's fencing token: a later claim has a higher one. */
  attempt: number;
  maxAttempts: number;
}

/** A job as stored (for status reads and tests). */
export interface JobRecord extends Omit<ClaimedJob, 'attempt'> {
  status: JobStatus;
  attempts: number;
  runAt: Date;
  leaseUntil: Date | null;
  lastError: string | null;
  finishedAt: Date | null;
}

type Row = { id: string; kind: string; tenant_id: string; subject_id: string; payload: Record<string, unknown>; status: JobStatus; attempts: number; max_attempts: number; run_at: Date; lease_until: Date | null; last_error: string | null; finished_at: Date | null };

const record = (r: Row): JobRecord => ({
  id: r.id,
  kind: r.kind,
  tenantId: r.tenant_id,
  subjectId: r.subject_id,
  payload: r.payload,
  status: r.status,
  attempts: r.attempts,
  maxAttempts: r.max_attempts,
  runAt: r.run_at,
  leaseUntil: r.lease_until,
  lastError: r.last_error,
  finishedAt: r.finished_at,
});

/**
 * Adds a job in `tx`, the transaction of the change that calls for it, so the job exists
 * exactly when the change committed. A second job for the same `(kind, subjectId)` is
 * ignored; returns whether this call created it. Runners are woken by `NOTIFY` at commit.
 */
export async function enqueueJob(tx: SqlExecutor, spec: JobSpec): Promise<boolean> {
  const runAt = (spec.runAt ?? new Date()).toISOString();
  const result = await tx.execute<{ id: string }>(sql`
    insert into jobs (id, kind, tenant_id, subject_id, payload, max_attempts, run_at)
    values (${newId('job')}, ${spec.kind}, ${spec.tenantId}, ${spec.subjectId}, ${JSON.stringify(spec.payload ?? {})}::jsonb, ${spec.maxAttempts}, ${runAt}::timestamptz)
    on conflict (kind, subject_id) do nothing
    returning id`);
  if (result.rows.length === 0) return false;
  await tx.execute(sql`select pg_notify(${JOBS_CHANNEL}, ${spec.kind})`);
  return true;
}

/**
 * The durable job queue in Postgres (table `jobs`). Due rows are claimed with
 * `FOR UPDATE SKIP LOCKED` and a lease, so replicas never run one attempt twice at once;
 * a `running` row whose lease ran out (its worker died) is claimed again. Results are
 * written only by the claim that holds the job (`attempts` is the fencing token), so a
 * worker that lost its lease cannot overwrite its successor's outcome.
 */
export class JobQueue {
  constructor(private readonly pool: pg.Pool) {}

  /**
   * Claims up to `limit` due jobs of `kinds`, oldest due first, leased until `now + leaseMs`.
   * A job whose last allowed attempt was lost with its worker is failed here instead.
   */
  async claim(opts: { kinds: readonly string[]; limit: number; leaseMs: number; now: Date }): Promise<ClaimedJob[]> {
    if (opts.limit <= 0 || opts.kinds.length === 0) return [];
    const now = opts.now.toISOString();
    await this.pool.query(
      `update jobs set status = 'failed', lease_until = null, finished_at = $2,
              last_error = coalesce(last_error || '; ', '') || 'worker lost during the last attempt (lease expired)'
        where kind = any($1) and status = 'running' and lease_until <= $2 and attempts >= max_attempts`,
      [opts.kinds, now],
    );
    const res = await this.pool.query<Row>(
      `with due as (
         select id from jobs
          where kind = any($1) and run_at <= $2
            and (status = 'pending' or (status = 'running' and lease_until <= $2 and attempts < max_attempts))
          order by run_at, id
          limit $3
          for update skip locked
       )
       update jobs j set status = 'running', attempts = j.attempts + 1, lease_until = $2::timestamptz + $4 * interval '1 millisecond'
         from due where j.id = due.id
       returning j.*`,
      [opts.kinds, now, opts.limit, opts.leaseMs],
    );
    return res.rows.map((r) => ({ id: r.id, kind: r.kind, tenantId: r.tenant_id, subjectId: r.subject_id, payload: r.payload, attempt: r.attempts, maxAttempts: r.max_attempts }));
  }

  /** Extends the lease of a job this claim still holds; false when it was lost. */
  async renew(job: ClaimedJob, leaseMs: number, now: Date): Promise<boolean> {
    const res = await this.pool.query(`update jobs set lease_until = $3::timestamptz + $4 * interval '1 millisecond' where id = $1 and status = 'running' and attempts = $2`, [job.id, job.attempt, now.toISOString(), leaseMs]);
    return res.rowCount === 1;
  }

  /** Marks the job done; false when this claim no longer holds it. */
  async succeed(job: ClaimedJob, now: Date): Promise<boolean> {
    const res = await this.pool.query(`update jobs set status = 'succeeded', lease_until = null, finished_at = $3 where id = $1 and status = 'running' and attempts = $2`, [job.id, job.attempt, now.toISOString()]);
    return res.rowCount === 1;
  }

  /**
   * Records a failed attempt: back to `pending` at `retryAt`, or `failed` for good when
   * `retryAt` is null. Returns what happened, or `lease-lost` when this claim no longer holds it.
   */
  async fail(job: ClaimedJob, error: string, retryAt: Date | null, now: Date): Promise<'retry' | 'failed' | 'lease-lost'> {
    const res = await this.pool.query(
      `update jobs set lease_until = null, last_error = $3,
              status = case when $4::timestamptz is null then 'failed' else 'pending' end,
              run_at = coalesce($4::timestamptz, run_at),
              finished_at = case when $4::timestamptz is null then $5::timestamptz end
        where id = $1 and status = 'running' and attempts = $2`,
      [job.id, job.attempt, error.slice(0, 2000), retryAt?.toISOString() ?? null, now.toISOString()],
    );
    if (res.rowCount !== 1) return 'lease-lost';
    return retryAt ? 'retry' : 'failed';
  }

  /** When the next job of `kinds` becomes claimable (due, or its lease runs out), or null. */
  async nextDueAt(kinds: readonly string[]): Promise<Date | null> {
    const res = await this.pool.query<{ at: Date | null }>(
      `select min(case when status = 'pending' then run_at else greatest(run_at, lease_until) end) as at
         from jobs where kind = any($1) and status in ('pending', 'running')`,
      [kinds],
    );
    return res.rows[0]?.at ?? null;
  }

  /** The job of `(kind, subjectId)`, if any. */
  async find(kind: string, subjectId: string): Promise<JobRecord | undefined> {
    const res = await this.pool.query<Row>('select * from jobs where kind = $1 and subject_id = $2', [kind, subjectId]);
    return res.rows[0] ? record(res.rows[0]) : undefined;
  }
}
