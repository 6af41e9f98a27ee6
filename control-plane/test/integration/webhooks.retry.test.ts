/**
 * The spec's retry schedule in real time (Events: "1 immediate, 2 after 1 s, 3 after 2 s,
 * 4 after 4 s, 5 after 8 s, 6 after 16 s"; a response slower than 5 s fails), and its
 * durability across a restart. Timings are measured at the receiver.
 */
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/database.js';
import { call } from '../helpers.js';
import { emit, startDispatcher, until } from './webhooks.fixtures.js';
import { webhookWorld } from './webhooks.world.js';

const w = webhookWorld();

/** Gaps between consecutive arrivals, ms. */
const gaps = (arrivals: { atMs: number }[]) => arrivals.slice(1).map((r, i) => r.atMs - arrivals[i]!.atMs);

async function deliveryOf(webhookId: string, deliveryId: string) {
  const res = await call(w.t.app, w.tenant.key, 'GET', `/api/v1/webhooks/${webhookId}/deliveries/${deliveryId}`);
  expect(res.statusCode).toBe(200);
  return res.json();
}

describe('webhook retry schedule', () => {
  it('makes six attempts 1, 2, 4, 8 and 16 s apart, then fails for good; a replay starts a new run', { timeout: 70_000 }, async () => {
    const hook = await w.webhook('/always-failing');
    w.receiver.script('/always-failing', [], { status: 500 });
    const dispatcher = startDispatcher(w.t.database);
    w.outbox.onWake(() => dispatcher.wake());
    await dispatcher.start();
    try {
      const event = await emit(w.t.database, w.outbox, { tenantId: w.tenant.tenantId, agentId: w.agentId });
      const arrivals = await w.receiver.waitFor(6, '/always-failing', 45_000);
      const measured = gaps(arrivals);
      const expected = [1000, 2000, 4000, 8000, 16000];
      measured.forEach((gap, i) => {
        expect(gap, `gap before attempt ${i + 2}`).toBeGreaterThanOrEqual(expected[i]! - 30);
        expect(gap, `gap before attempt ${i + 2}`).toBeLessThan(expected[i]! + 400);
      });
      // Same delivery, byte-identical body, each attempt signed at its own time.
      expect(new Set(arrivals.map((a) => a.headers['x-webhook-delivery-id']))).toEqual(new Set([event.id]));
      expect(new Set(arrivals.map((a) => a.body)).size).toBe(1);
      const stamps = arrivals.map((a) => Number(a.headers['x-webhook-timestamp']));
      expect(stamps.at(-1)! - stamps[0]!).toBeGreaterThanOrEqual(30);

      await until(async () => (await deliveryOf(hook.id, event.id)).status === 'failed', 5000);
      await new Promise((r) => setTimeout(r, 2500));
      expect(w.receiver.forDelivery(event.id)).toHaveLength(6);
      const failed = await deliveryOf(hook.id, event.id);
      expect(failed).toMatchObject({ status: 'failed', attemptCount: 6, nextAttemptAt: null, lastStatusCode: 500, lastError: 'HTTP 500: receiver says no', deliveredAt: null });
      expect(failed.attempts.map((a: { attempt: number; run: number; statusCode: number; success: boolean }) => [a.attempt, a.run, a.statusCode, a.success])).toEqual([1, 2, 3, 4, 5, 6].map((n) => [n, 0, 500, false]));

      // Failed events are replayable: a new run, same id and body.
      w.receiver.script('/always-failing', [], { status: 204 });
      const replay = await call(w.t.app, w.tenant.key, 'POST', `/api/v1/webhooks/${hook.id}/deliveries/${event.id}/replay`);
      expect(replay.statusCode).toBe(202);
      expect(replay.json()).toMatchObject({ status: 'pending', replays: 1 });
      const seventh = (await w.receiver.waitFor(7, '/always-failing', 5000))[6]!;
      expect(seventh.body).toBe(arrivals[0]!.body);
      await until(async () => (await deliveryOf(hook.id, event.id)).status === 'delivered', 5000);
      const delivered = await deliveryOf(hook.id, event.id);
      expect(delivered).toMatchObject({ attemptCount: 7, replays: 1, lastStatusCode: 204, lastError: null });
      expect(delivered.attempts.at(-1)).toMatchObject({ attempt: 7, run: 1, statusCode: 204, success: true });
    } finally {
      await dispatcher.stop();
    }
  });

  it('counts a response slower than 5 s as a failed attempt and retries 1 s after it', { timeout: 30_000 }, async () => {
    const hook = await w.webhook('/slow-then-ok');
    w.receiver.script('/slow-then-ok', [{ status: 200, delayMs: 6000 }], { status: 200 });
    const dispatcher = startDispatcher(w.t.database);
    w.outbox.onWake(() => dispatcher.wake());
    await dispatcher.start();
    try {
      const event = await emit(w.t.database, w.outbox, { tenantId: w.tenant.tenantId, agentId: w.agentId });
      const arrivals = await w.receiver.waitFor(2, '/slow-then-ok', 15_000);
      const [gap] = gaps(arrivals);
      expect(gap).toBeGreaterThanOrEqual(5950);
      expect(gap).toBeLessThan(6500);
      await until(async () => (await deliveryOf(hook.id, event.id)).status === 'delivered', 5000);
      const d = await deliveryOf(hook.id, event.id);
      expect(d.attempts).toHaveLength(2);
      expect(d.attempts[0]).toMatchObject({ attempt: 1, statusCode: null, success: false, error: expect.stringContaining('timeout') });
      expect(d.attempts[0].latencyMs).toBeGreaterThanOrEqual(4950);
      expect(d.attempts[0].latencyMs).toBeLessThan(5500);
      expect(d.attempts[1]).toMatchObject({ attempt: 2, statusCode: 200, success: true });
    } finally {
      await dispatcher.stop();
    }
  });

  it('resumes the schedule after a restart between attempts, without losing or repeating one', { timeout: 30_000 }, async () => {
    const hook = await w.webhook('/flaky');
    w.receiver.script('/flaky', [{ status: 503 }, { status: 503 }], { status: 200 });
    const first = startDispatcher(w.t.database);
    const unsubscribe = w.outbox.onWake(() => first.wake());
    await first.start();
    const event = await emit(w.t.database, w.outbox, { tenantId: w.tenant.tenantId, agentId: w.agentId });
    await w.receiver.waitFor(2, '/flaky', 10_000);
    await until(async () => (await deliveryOf(hook.id, event.id)).attemptCount === 2, 2000);
    await first.stop();
    unsubscribe();

    // A new process: its own pool and dispatcher, nothing carried over but the database.
    const database = openDatabase(w.t.database.pool.options.connectionString!, 2);
    const second = startDispatcher(database);
    try {
      await second.start();
      const arrivals = await w.receiver.waitFor(3, '/flaky', 10_000);
      const [, gap] = gaps(arrivals);
      expect(gap).toBeGreaterThanOrEqual(1970);
      expect(gap).toBeLessThan(2500);
      await until(async () => (await deliveryOf(hook.id, event.id)).status === 'delivered', 3000);
      await new Promise((r) => setTimeout(r, 1500));
      expect(w.receiver.forDelivery(event.id)).toHaveLength(3);
      const d = await deliveryOf(hook.id, event.id);
      expect(d.attempts.map((a: { attempt: number; statusCode: number }) => [a.attempt, a.statusCode])).toEqual([
        [1, 503],
        [2, 503],
        [3, 200],
      ]);
    } finally {
      await second.stop();
      await database.close();
    }
  });
});
