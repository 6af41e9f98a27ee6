import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newId } from '@vap/shared';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import { RateLimiter } from '../../src/modules/rate-limit/rate-limiter.js';
import { testConfig } from '../helpers.js';

// Two limiters on one Postgres are two replicas. Their flush timers are left alone
// (the interval is long); each test flushes when it means to.
let database: Database;
const nowMs = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
let clock = nowMs;
const now = () => clock;
const opts = { flushIntervalMs: 60_000, maxStalenessMs: 60_000 };

async function shared(bucket: string): Promise<number> {
  const { rows } = await database.pool.query<{ count: number }>('select count from rate_limit_windows where bucket = $1 and window_start = $2', [bucket, nowMs - (nowMs % 60_000)]);
  return rows[0]?.count ?? 0;
}

/** Statements a limiter sends while `run` runs. */
async function statementsDuring(run: () => Promise<void>): Promise<number> {
  const spy = vi.spyOn(database.pool, 'query');
  try {
    await run();
    return spy.mock.calls.length;
  } finally {
    spy.mockRestore();
  }
}

beforeAll(() => {
  database = openDatabase(testConfig().databaseUrl!, 5);
});
afterAll(async () => {
  await database.close();
});

describe('rate limiter: in-memory counting with batched flushes', () => {
  it('counts far from the limit without writing per request, and one flush adds the delta to the shared row', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, opts);
    try {
      const first = await a.hit(bucket, 1000);
      expect(first.remaining).toBe(999);
      let last = first;
      const statements = await statementsDuring(async () => {
        for (let i = 0; i < 49; i++) last = await a.hit(bucket, 1000);
      });
      expect(statements).toBe(0);
      expect(last.remaining).toBe(950);
      expect(await shared(bucket)).toBe(1);
      expect(await statementsDuring(() => a.flush())).toBe(1);
      expect(await shared(bucket)).toBe(50);
    } finally {
      await a.close();
    }
  });

  it('shares the count across replicas: a replica reads the total on its first request and after each flush', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, opts);
    const b = new RateLimiter(database.pool, now, opts);
    try {
      for (let i = 0; i < 40; i++) await a.hit(bucket, 1000);
      await a.flush();
      expect((await b.hit(bucket, 1000)).remaining).toBe(1000 - 41);
      for (let i = 0; i < 9; i++) await b.hit(bucket, 1000);
      for (let i = 0; i < 10; i++) await a.hit(bucket, 1000);
      await Promise.all([a.flush(), b.flush()]);
      expect(await shared(bucket)).toBe(60);
      // A flush reads back what the other replica had added by then, and only that.
      await a.hit(bucket, 1000);
      await b.hit(bucket, 1000);
      await a.flush();
      await b.flush();
      expect((await a.hit(bucket, 1000)).remaining).toBe(1000 - 62); // 63rd, B's last one unseen
      await b.hit(bucket, 1000);
      await b.flush();
      await a.flush();
      expect((await a.hit(bucket, 1000)).remaining).toBe(1000 - 65);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('counts in Postgres near the limit, so replicas that flushed refuse exactly past it', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, opts);
    const b = new RateLimiter(database.pool, now, opts);
    try {
      let accepted = 0;
      for (let i = 0; i < 15; i++) if (!(await a.hit(bucket, 30)).exceeded) accepted++;
      await a.flush();
      const codes: boolean[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await (i % 2 === 0 ? b : a).hit(bucket, 30);
        codes.push(r.exceeded);
        if (!r.exceeded) accepted++;
      }
      expect(accepted).toBe(30);
      expect(codes.indexOf(true)).toBe(15);
      expect(codes.slice(15).every(Boolean)).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('answers refusals past the limit from memory and still adds them to the shared count', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, opts);
    try {
      for (let i = 0; i < 4; i++) await a.hit(bucket, 3);
      const statements = await statementsDuring(async () => {
        for (let i = 0; i < 10; i++) expect((await a.hit(bucket, 3)).exceeded).toBe(true);
      });
      expect(statements).toBe(0);
      await a.flush();
      expect(await shared(bucket)).toBe(14);
    } finally {
      await a.close();
    }
  });

  it('re-reads a stale total before counting in memory again, and starts afresh in the next window', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, { flushIntervalMs: 60_000, maxStalenessMs: 1_000 });
    const b = new RateLimiter(database.pool, now, opts);
    try {
      await a.hit(bucket, 1000);
      for (let i = 0; i < 100; i++) await b.hit(bucket, 1000);
      await b.flush();
      clock = nowMs + 2_000;
      expect(await statementsDuring(async () => void (await a.hit(bucket, 1000)))).toBe(1);
      expect((await a.hit(bucket, 1000)).remaining).toBe(1000 - 103);
      clock = nowMs + 60_000;
      expect((await a.hit(bucket, 1000)).remaining).toBe(999);
      await a.flush();
      clock = nowMs;
      expect(await shared(bucket)).toBe(103);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('lets concurrent first requests of a bucket share one read far from the limit', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, opts);
    try {
      let results: Awaited<ReturnType<RateLimiter['hit']>>[] = [];
      const statements = await statementsDuring(async () => {
        results = await Promise.all(Array.from({ length: 20 }, () => a.hit(bucket, 1000)));
      });
      expect(statements).toBe(1);
      expect(results.map((r) => r.remaining).sort((x, y) => y - x)).toEqual(Array.from({ length: 20 }, (_, i) => 999 - i));
      await a.flush();
      expect(await shared(bucket)).toBe(20);
    } finally {
      await a.close();
    }
  });

  it('flushes on close what was counted only in memory', async () => {
    clock = nowMs;
    const bucket = `test:${newId('test')}`;
    const a = new RateLimiter(database.pool, now, opts);
    for (let i = 0; i < 25; i++) await a.hit(bucket, 1000);
    expect(await shared(bucket)).toBe(1);
    await a.close();
    expect(await shared(bucket)).toBe(25);
  });
});
