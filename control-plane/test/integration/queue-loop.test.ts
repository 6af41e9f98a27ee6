/**
 * The Postgres queue loop shared by the job runner and the webhook dispatcher, on a real
 * Postgres: NOTIFY wake-ups, the LISTEN connection lost and re-opened, concurrency and stop.
 * The queue itself is an in-memory list here; each test listens on a channel of its own.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, inject } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { QueueLoop } from '../../src/db/queue-loop.js';
import type { QueueLoopOptions } from '../../src/db/queue-loop.js';

let database: Database;
const loops: ListLoop[] = [];

beforeAll(() => {
  database = openDatabase(inject('databaseUrl'), 4);
});
afterEach(async () => {
  await Promise.all(loops.splice(0).map((l) => l.stop()));
});
afterAll(async () => {
  await database.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(check: () => boolean | Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(10);
  }
}

/** A loop over an in-memory list of due items; `hold` keeps each item in process until released. */
class ListLoop extends QueueLoop<number> {
  readonly queued: number[] = [];
  readonly processed: number[] = [];
  readonly releases: (() => void)[] = [];
  running = 0;
  maxRunning = 0;

  constructor(
    opts: QueueLoopOptions,
    private readonly hold: boolean,
  ) {
    super(opts);
  }

  protected override claim(free: number): Promise<number[]> {
    return Promise.resolve(this.queued.splice(0, free));
  }

  protected override nextDueAt(now: Date): Promise<Date | null> {
    return Promise.resolve(this.queued.length > 0 ? now : null);
  }

  protected override async process(item: number): Promise<void> {
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    if (this.hold) await new Promise<void>((r) => this.releases.push(r));
    this.running -= 1;
    this.processed.push(item);
  }
}

function world(opts: Partial<QueueLoopOptions> & { hold?: boolean } = {}) {
  const { hold = false, ...over } = opts;
  const channel = `queue_loop_test_${randomBytes(4).toString('hex')}`;
  const logs: { level: number; msg: string }[] = [];
  const log = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        logs.push(JSON.parse(chunk.toString()) as { level: number; msg: string });
        done();
      },
    }),
  );
  const loop = new ListLoop({ pool: database.pool, log, channel, label: 'test queue', concurrency: 2, pollIntervalMs: 60_000, now: Date.now, ...over }, hold);
  loops.push(loop);
  const listeners = async () =>
    (await database.pool.query<{ pid: number }>(`select pid from pg_stat_activity where query = $1 and pid <> pg_backend_pid()`, [`listen ${channel}`])).rows.map((r) => r.pid);
  return { loop, channel, queued: loop.queued, processed: loop.processed, releases: loop.releases, logs, listeners, maxRunning: () => loop.maxRunning };
}

describe('queue loop', () => {
  it('processes what is queued when a NOTIFY on its channel wakes it, long before the poll', async () => {
    const w = world();
    await w.loop.start();
    w.queued.push(1, 2, 3);
    await database.pool.query(`notify ${w.channel}`);
    await until(() => w.processed.length === 3);
    expect(w.processed.sort()).toEqual([1, 2, 3]);
  });

  it('re-opens a lost LISTEN connection after the poll interval and logs the loss', async () => {
    const w = world({ pollIntervalMs: 200 });
    await w.loop.start();
    const [pid] = await w.listeners();
    expect(pid).toBeDefined();
    await database.pool.query('select pg_terminate_backend($1)', [pid]);
    await until(() => w.logs.some((l) => l.msg === 'test queue listener lost; polling until it is back'));
    await until(async () => (await w.listeners()).length === 1);
    expect(await w.listeners()).not.toContain(pid);
    expect(w.logs.filter((l) => l.msg.startsWith('test queue listener'))).toHaveLength(1);
  });

  it('keeps at most `concurrency` items in process and stop waits for them', async () => {
    const w = world({ hold: true });
    await w.loop.start();
    w.queued.push(1, 2, 3, 4);
    w.loop.wake();
    await until(() => w.releases.length === 2);
    await sleep(50);
    expect(w.releases).toHaveLength(2);
    expect(w.queued).toEqual([3, 4]);
    w.releases.splice(0).forEach((r) => r()); // finishing items wake the loop for the rest
    await until(() => w.releases.length === 2);
    let stopped = false;
    const stopping = w.loop.stop().then(() => (stopped = true));
    await sleep(50);
    expect(stopped).toBe(false);
    w.releases.splice(0).forEach((r) => r());
    await stopping;
    expect(w.processed.sort()).toEqual([1, 2, 3, 4]);
    expect(w.maxRunning()).toBe(2);
    expect(await w.listeners()).toEqual([]);
  });
});
