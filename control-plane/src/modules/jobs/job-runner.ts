import type pg from 'pg';
import type { Logger } from 'pino';
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
}

/**
 * Runs durable jobs from the {@link JobQueue}: claims due jobs of the registered kinds up to
 * `concurrency`, runs their handlers with a renewed lease, and records success, a retry
 * with backoff, or the final failure. Every control plane runs one; they share the queue
 * through Postgres. Woken by `NOTIFY` when a job is committed (any replica), by `wake()`,
 * by a timer set to the next due job and by a slow poll.
 */
export class JobRunner {
  readonly queue: JobQueue;
  private readonly o: Required<Omit<JobRunnerOptions, 'pool'>>;
  private readonly pool: pg.Pool;
  private readonly handlers = new Map<string, JobHandler>();
  private readonly inFlight = new Set<Promise<void>>();
  private listener: { release(): Promise<void> } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private tickAgain = false;
  private stopped = true;

  constructor(opts: JobRunnerOptions) {
    this.pool = opts.pool;
    this.queue = new JobQueue(opts.pool);
    this.o = { leaseMs: JOB_LEASE_MS, retryDelaysMs: JOB_RETRY_DELAYS_MS, now: Date.now, ...opts };
  }

  /** Registers the handler of one job kind; register before `start()`. */
  register(kind: string, handler: JobHandler): this {
    this.handlers.set(kind, handler);
    return this;
  }

  /** Starts listening for new jobs and looks at the queue at once (jobs left from before a restart included). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.listen();
    this.wake();
  }

  /** Looks at the queue now (coalesced: a look in progress runs once more). */
  wake(): void {
    if (this.stopped) return;
    if (this.ticking) {
      this.tickAgain = true;
      return;
    }
    void this.tick();
  }

  /** Stops claiming and waits for the running handlers and their outcomes to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.release();
    while (this.ticking || this.inFlight.size > 0) await Promise.allSettled([...this.inFlight, new Promise((r) => setTimeout(r, 10))]);
  }

  private async listen(): Promise<void> {
    let client: pg.PoolClient | undefined;
    let released = false;
    const release = (err?: Error): void => {
      if (released || !client) return;
      released = true;
      client.removeAllListeners('notification');
      client.release(err);
    };
    const retryLater = (): void => {
      if (!this.stopped) setTimeout(() => void this.listen(), this.o.pollIntervalMs).unref();
    };
    try {
      client = await this.pool.connect();
      client.on('notification', () => this.wake());
      client.on('error', (err) => {
        if (released) return; // after release the pool owns the client and its errors
        this.o.log.warn({ err }, 'job queue listener lost; polling until it is back');
        this.listener = undefined;
        release(err);
        retryLater();
      });
      await client.query(`listen ${JOBS_CHANNEL}`);
      if (this.stopped) return release();
      const c = client;
      this.listener = {
        release: async () => {
          await c.query(`unlisten ${JOBS_CHANNEL}`).catch(() => undefined);
          release();
        },
      };
    } catch (err) {
      release(err instanceof Error ? err : undefined);
      this.o.log.warn({ err }, 'job queue listener not started; polling instead');
      retryLater();
    }
  }

  private async tick(): Promise<void> {
    this.ticking = true;
    clearTimeout(this.timer);
    let delayMs = this.o.pollIntervalMs;
    const kinds = [...this.handlers.keys()];
    try {
      do {
        this.tickAgain = false;
        const free = this.o.concurrency - this.inFlight.size;
        if (free > 0 && !this.stopped) {
          const claimed = await this.queue.claim({ kinds, limit: free, leaseMs: this.o.leaseMs, now: new Date(this.o.now()) });
          for (const job of claimed) this.launch(job);
        }
        if (this.inFlight.size >= this.o.concurrency) {
          delayMs = this.o.pollIntervalMs; // a finishing handler wakes us
          continue;
        }
        const next = await this.queue.nextDueAt(kinds);
        const nowMs = this.o.now();
        delayMs = next === null ? this.o.pollIntervalMs : Math.min(this.o.pollIntervalMs, Math.max(next.getTime() - nowMs, 0));
        // Due but not claimable (another worker holds the row lock): look again shortly rather than spin.
        if (delayMs === 0 && !this.tickAgain) delayMs = 25;
      } while (this.tickAgain && !this.stopped);
    } catch (err) {
      this.o.log.error({ err }, 'job queue look failed; retrying');
    } finally {
      this.ticking = false;
    }
    if (this.stopped) return;
    if (this.tickAgain) return this.wake();
    this.timer = setTimeout(() => this.wake(), delayMs);
    this.timer.unref();
  }

  private launch(job: ClaimedJob): void {
    const run = this.run(job)
      .catch((err: unknown) => this.o.log.error({ err, jobId: job.id, kind: job.kind }, 'job outcome not recorded; its lease will expire and it is retried'))
      .finally(() => {
        this.inFlight.delete(run);
        this.wake();
      });
    this.inFlight.add(run);
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
    try {
      if (!handler) throw new PermanentJobError(`no handler for job kind ${job.kind}`);
      await handler(job, lease.signal);
    } catch (err) {
      failure = err ?? new Error('job failed');
    } finally {
      clearInterval(renewal);
    }
    const now = new Date(this.o.now());
    if (failure === null) {
      if (!(await this.queue.succeed(job, now))) log.warn('job finished after its lease was lost; outcome not recorded');
      else log.debug('job succeeded');
      return;
    }
    const permanent = failure instanceof PermanentJobError;
    const delays = this.o.retryDelaysMs;
    const retryAt = permanent || job.attempt >= job.maxAttempts ? null : new Date(now.getTime() + (delays[Math.min(job.attempt - 1, delays.length - 1)] ?? 0));
    const message = failure instanceof Error ? `${failure.name}: ${failure.message}` : String(failure);
    const outcome = await this.queue.fail(job, message, retryAt, now);
    if (outcome === 'failed') log.warn({ err: failure }, 'job failed for good');
    else if (outcome === 'retry') log.info({ err: failure, retryAt }, 'job attempt failed; retrying later');
    else log.warn({ err: failure }, 'job attempt failed after its lease was lost; outcome not recorded');
  }
}
