import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { parseSchedstat, startServerProbe } from '../src/server-probe.js';
import { postgresReachable, SMOKE_DATABASE_URL } from './api-smoke.js';

const linux = process.platform === 'linux';
const reachable = await postgresReachable(SMOKE_DATABASE_URL);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('parseSchedstat', () => {
  it('reads run and run-queue wait (ns) from the first two fields, and refuses what is not numbers', () => {
    expect(parseSchedstat('7382917236 1204885011 20473\n')).toEqual({ runNs: 7382917236, waitNs: 1204885011 });
    expect(parseSchedstat('12')).toBeNull();
    expect(parseSchedstat('')).toBeNull();
    expect(parseSchedstat('x y z')).toBeNull();
  });
});

describe('startServerProbe', () => {
  it("measures a loop that was held for 80 ms, without the sampling period, and this thread's time on a core (Linux)", async () => {
    const probe = startServerProbe();
    await sleep(50);
    const heldUntil = performance.now() + 80;
    while (performance.now() < heldUntil) {
      // hold the loop, as a long synchronous handler would
    }
    await sleep(100);
    const f = probe.stop();
    expect(f.loopDelayMaxMs).toBeGreaterThanOrEqual(60);
    expect(f.loopDelayMaxMs).toBeLessThan(1000);
    // Most of the run the loop was free: its timer fired about on time. Every interval the
    // histogram holds is at least its 10 ms period, so this fails if the period is not taken off.
    expect(f.loopDelayP50Ms).toBeLessThan(8);
    expect(f.loopDelayP50Ms).toBeLessThanOrEqual(f.loopDelayP99Ms);
    expect(f.loopDelayP99Ms).toBeLessThanOrEqual(f.loopDelayMaxMs);
    expect(f.pool).toBeNull();
    if (linux) {
      // 80 ms of work in about 230 ms of wall time: well over 100 ms a second on a core.
      expect(f.loopRanMsPerSec).toBeGreaterThan(100);
      expect(f.loopRanMsPerSec).toBeLessThanOrEqual(1000);
      expect(f.loopWaitedMsPerSec).toBeGreaterThanOrEqual(0);
    }
    // A second stop returns the same figures: the probe stopped sampling at the first.
    expect(probe.stop()).toBe(f);
  });

  it.skipIf(!reachable)('sees requests queue on a busy Postgres pool, and an idle pool never waiting', async () => {
    const pool = new pg.Pool({ connectionString: SMOKE_DATABASE_URL, max: 1 });
    try {
      const busy = startServerProbe(pool);
      // Two statements of 150 ms on a pool of one: the second waits for the first's connection.
      await Promise.all([pool.query('select pg_sleep(0.15)'), pool.query('select pg_sleep(0.15)')]);
      const f = busy.stop();
      expect(f.pool!.samples).toBeGreaterThan(5);
      expect(f.pool!.waitingMax).toBe(1);
      expect(f.pool!.busyMax).toBe(1);
      // About half the ~300 ms had a request waiting.
      expect(f.pool!.waitingShare).toBeGreaterThan(0.2);
      expect(f.pool!.waitingShare).toBeLessThan(0.8);

      const idle = startServerProbe(pool);
      await sleep(60);
      const g = idle.stop();
      expect(g.pool!.samples).toBeGreaterThan(0);
      expect(g.pool).toMatchObject({ waitingMax: 0, waitingShare: 0, busyMax: 0 });
    } finally {
      await pool.end();
    }
  });
});
