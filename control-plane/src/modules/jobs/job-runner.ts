import type pg from 'pg';
import type { Logger } from 'pino';
import { QueueLoop } from '../../db/queue-loop.js';
import type { JobMetrics } from '../metrics/control-plane-metrics.js';
import { JOBS_CHANNEL, JobQueue } from './job-queue.js';
import type { ClaimedJob } from './job-queue.js';

/**
 * Runs one attempt of a job. Throwing fails the attempt (retried with backoff until
 * `maxAttempts`); throw {@link PermanentJobError} when another attempt cannot help. The
 * signal aborts when the runner lost the job's lease (another worker may take it over):
 * stop promptly, the outcome is no longer recorded. Handlers must be idempotent: an attempt
 * whose worker died after its work committed runs again.
 */
export type JobHandler = (job: ClaimedJob, signal: AbortSignal) => Promise<void>;

/** A failure no retry can fix (bad payload, unsupported provider): the job fails at once. */
export class PermanentJobError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'PermanentJobError';
  }
}

/** Delay before attempt n+1 after attempt n failed; the last value repeats. */
export const JOB_RETRY_DELAYS_MS: readonly number[] = [5_000, 30_000, 120_000, 600_000, 1_800_000];

/** Default lease of a claimed job; renewed every third of it while the handler runs. */
export const JOB_LEASE_MS = 60_000;

export interface JobRunnerOptions {
  pool: pg.Pool;
  log: Logger;
  /** Handlers running at once in this process. */
  concurrency: number;
  /** Longest sleep between looks at the queue when nothing woke the runner (other replicas' jobs, expired leases). */
  pollIntervalMs: number;
  leaseMs?: number;
  retryDelaysMs?: readonly number[];
  now?: () => number;
  /** Counts each attempt by kind and result, with its handler time. */
  metrics?: JobMetrics;
}

/**
 * Runs durable jobs from the {@link JobQueue}: claims due jobs of the registered kinds up to
 * `concurrency`, runs their handlers with a renewed lease, and records success, a retry
 * with backoff, or the final failure. Every control plane runs one; they share the queue
 * through Postgres. Woken by `NOTIFY` when a job is committed (any replica), by `wake()`,
 * by a timer set to the next due job and by a slow poll.
 */
export class JobRunner extends QueueLoop<ClaimedJob> {
  readonly queue: JobQueue;
  private readonly o: Required<Omit<JobRunnerOptions, 'pool' | 'metrics'>> & { metrics?: JobMetrics };
  private readonly handlers = new Map<string, JobHandler>();

  constructor(opts: JobRunnerOptions) {
    const o = { leaseMs: JOB_LEASE_MS, retryDelaysMs: JOB_RETRY_DELAYS_MS, now: Date.now, ...opts };
    super({ pool: opts.pool, log: o.log, channel: JOBS_CHANNEL, label: 'job queue', concurrency: o.concurrency, pollIntervalMs: o.pollIntervalMs, now: o.now });
    this.o = o;
    this.queue = new JobQueue(opts.pool);
  }

  /** Registers the handler of one job kind; register before `start()`. */
  register(kind: string, handler: JobHandler): this {
    this.handlers.set(kind, handler);
    return this;
  }

  protected override claim(free: number, now: Date): Promise<ClaimedJob[]> {
    return this.queue.claim({ kinds: [...this.handlers.keys()], limit: free, leaseMs: this.o.leaseMs, now });
  }

  protected override nextDueAt(): Promise<Date | null> {
    return this.queue.nextDueAt([...this.handlers.keys()]);
  }

  protected override process(job: ClaimedJob): Promise<void> {
    return this.run(job).catch((err: unknown) => this.o.log.error({ err, jobId: job.id, kind: job.kind }, 'job outcome not recorded; its lease will expire and it is retried'));
  }

  private async run(job: ClaimedJob): Promise<void> {
    const log = this.o.log.child({ jobId: job.id, kind: job.kind, tenantId: job.tenantId, subjectId: job.subjectId, attempt: job.attempt });
    const handler = this.handlers.get(job.kind);
    const lease = new AbortController();
    const renewal = setInterval(() => {
      this.queue.renew(job, this.o.leaseMs, new Date(this.o.now())).then(
        (held) => {
          if (!held) lease.abort(new DOMException('job lease lost', 'AbortError'));
        },
        (err: unknown) => log.warn({ err }, 'job lease not renewed'),
      );
    }, Math.max(10, Math.floor(this.o.leaseMs / 3)));
    let failure: unknown = null;
    const startedAt = performance.now();
    try {
      if (!handler) throw new PermanentJobError(`no handler for job kind ${job.kind}`);
      await handler(job, lease.signal);
    } catch (err) {
      failure = err ?? new Error('job failed');
    } finally {
      clearInterval(renewal);
    }
    const tookMs = performance.now() - startedAt;
    const now = new Date(this.o.now());
    if (failure === null) {
      const held = await this.queue.succeed(job, now);
      this.o.metrics?.jobAttempt(job.kind, held ? 'succeeded' : 'lease-lost', tookMs);
      if (!held) log.warn('job finished after its lease was lost; outcome not recorded');
      else log.debug('job succeeded');
      return;
    }
    const permanent = failure instanceof PermanentJobError;
    const delays = this.o.retryDelaysMs;
    const retryAt = permanent || job.attempt >= job.maxAttempts ? null : new Date(now.getTime() + (delays[Math.min(job.attempt - 1, delays.length - 1)] ?? 0));
    const message = failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure);
    const outcome = await this.queue.fail(job, message, retryAt, now);
    this.o.metrics?.jobAttempt(job.kind, outcome, tookMs);
    if (outcome === 'failed') log.warn({ err: failure }, 'job failed for good');
    else if (outcome === 'retry') log.info({ err: failure, retryAt }, 'job attempt failed; retrying later');
    else log.warn({ err: failure }, 'job attempt failed after its lease was lost; outcome not recorded');
  }
}
