import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BusRequestError, InProcessBus, SUBJECTS, newId } from '@vap/shared';
import { openDatabase } from '../../src/db/database.js';
import type { Database } from '../../src/db/database.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { startDatabaseProxy } from '../database-proxy.js';
import type { DatabaseProxy } from '../database-proxy.js';
import { createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest, publishMessage, recordEvents, startCalls } from './calls.fixtures.js';

// The control plane's side of `call.end` (the gateway's acknowledged end record) and of the
// watchdog across a database outage, with the database reached through a hop the test cuts.

let proxy: DatabaseProxy;
let database: Database;
let t: TestApp;
let tenant: TestTenant;
let agent: { id: string };
let bus: InProcessBus;

let iso: Awaited<ReturnType<typeof isolatedDatabase>>;

beforeAll(async () => {
  // A database of its own: the watchdog tests below leave a gateway silent for longer than three
  // intervals on purpose, and any other file's control plane on the shared database (its watchdog
  // judges every gateway there) would take that gateway for lost and fail their calls.
  iso = await isolatedDatabase(1);
  proxy = await startDatabaseProxy(iso.url);
  database = openDatabase(proxy.url, 4);
  bus = new InProcessBus();
  t = await createTestApp({ database, bus });
  tenant = await createTenant(database);
  agent = await activeAgent(t.app, tenant.key);
});
afterAll(async () => {
  await proxy?.restore();
  await t?.close();
  await database?.close();
  await proxy?.cut();
  await iso?.drop();
});

async function statusOf(id: string): Promise<{ status: string; end_reason: string | null; cost_total_usd: string | null }> {
  const { rows } = await database.pool.query('select status, end_reason, cost_total_usd from conversations where id = $1', [id]);
  return rows[0];
}

describe('call.end', () => {
  let calls: CallHandling;
  beforeAll(() => void (calls = startCalls(database.db, bus)));
  afterAll(async () => calls?.close());

  it('answers once the record is stored, and again for a duplicate or an unknown conversation (retrying would change nothing)', async () => {
    const { conversationId } = await prepareCall(bus, prepareRequest(tenant.tenantId, agent.id));
    const rec = endedRecord(tenant.tenantId, agent.id, conversationId, [message(0), message(1)]);
    expect(await bus.request('callEnd', rec)).toEqual({ ok: true });
    expect(await statusOf(conversationId)).toMatchObject({ status: 'completed', end_reason: 'user_ended' });
    expect(await bus.request('callEnd', rec)).toEqual({ ok: true });
    expect(await bus.request('callEnd', { ...rec, conversationId: newId('conv') })).toEqual({ ok: true });
  });

  it('answers responder-failed while the database is unreachable, so the gateway sends it again; the retry is stored', async () => {
    const { conversationId } = await prepareCall(bus, prepareRequest(tenant.tenantId, agent.id));
    const rec = endedRecord(tenant.tenantId, agent.id, conversationId, [message(0), message(1), message(2)]);
    await proxy.cut();
    try {
      const failed = await bus.request('callEnd', rec).then(
        () => null,
        (err: unknown) => err,
      );
      expect(failed).toBeInstanceOf(BusRequestError);
      expect((failed as BusRequestError).code).toBe('responder-failed');
    } finally {
      await proxy.restore();
    }
    expect(await bus.request('callEnd', rec)).toEqual({ ok: true });
    const row = await statusOf(conversationId);
    expect(row).toMatchObject({ status: 'completed', end_reason: 'user_ended' });
    expect(Number(row.cost_total_usd)).toBeGreaterThan(0);
    const { rows } = await database.pool.query('select count(*)::int as n from conversation_messages where conversation_id = $1', [conversationId]);
    expect(rows[0].n).toBe(3);
  });
});

describe('live reports while the database is unreachable', () => {
  it('are stored once it is back: a tool call becomes its ToolCallCompleted event, a message its row (before: dropped)', async () => {
    const calls = startCalls(database.db, bus);
    const events = recordEvents(bus, tenant.tenantId);
    try {
      const { conversationId } = await prepareCall(bus, prepareRequest(tenant.tenantId, agent.id));
      await proxy.cut();
      try {
        await bus.publish('sessionEvent', SUBJECTS.sessionEvent.subject(tenant.tenantId, conversationId), {
          conversationId,
          tenantId: tenant.tenantId,
          agentId: agent.id,
          at: new Date().toISOString(),
          event: { type: 'ToolCallCompleted', data: { toolName: 'book_table', toolType: 'webhook', input: { guests: 2 }, output: { booked: true }, latencyMs: 120, success: true } },
        });
        await publishMessage(bus, tenant.tenantId, conversationId, message(0));
        await new Promise((r) => setTimeout(r, 800));
        expect(events.of(conversationId, 'ToolCallCompleted')).toEqual([]);
      } finally {
        await proxy.restore();
      }
      await expect.poll(() => events.of(conversationId, 'ToolCallCompleted').length, { timeout: 10_000 }).toBe(1);
      expect(events.of(conversationId, 'ToolCallCompleted')[0]!.data).toMatchObject({ conversationId, toolName: 'book_table', success: true });
      await expect
        .poll(async () => (await database.pool.query('select count(*)::int as n from conversation_messages where conversation_id = $1', [conversationId])).rows[0].n, { timeout: 10_000 })
        .toBe(1);
    } finally {
      await events.close();
      await calls.close();
    }
  });
});

describe('the watchdog judges only heartbeats it could see', () => {
  // Wide enough that a loaded machine's late timers do not cross the three-interval line.
  const intervalMs = 500;
  const heartbeat = (calls: CallHandling, gatewayId: string, active: string[]) => calls.calls.heartbeat({ gatewayId, activeConversationIds: active, intervalMs, at: new Date().toISOString() });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('after a restart: a gateway whose heartbeats went unstored meanwhile is given three intervals from the start', async () => {
    const gw = newId('gw');
    const first = startCalls(database.db, bus);
    const { conversationId } = await prepareCall(bus, prepareRequest(tenant.tenantId, agent.id, { gatewayId: gw }));
    await heartbeat(first, gw, [conversationId]);
    await first.close();
    // The control plane was down for longer than three intervals; the gateway kept its call.
    await sleep(4 * intervalMs);
    const restarted = startCalls(database.db, bus, { heartbeatsSeenSince: Date.now() });
    try {
      expect(await restarted.watchdog.runOnce()).toBe(0);
      expect((await statusOf(conversationId)).status).toBe('in_progress');
      // The gateway's next heartbeat arrives and the call goes on.
      await heartbeat(restarted, gw, [conversationId]);
      await sleep(2 * intervalMs);
      expect(await restarted.watchdog.runOnce()).toBe(0);
      // A gateway that stays silent for three intervals this control plane saw is lost.
      await sleep(2 * intervalMs);
      expect(await restarted.watchdog.runOnce()).toBe(1);
      expect(await statusOf(conversationId)).toMatchObject({ status: 'failed', end_reason: 'gateway_lost' });
    } finally {
      await restarted.close();
    }
  });

  it('after the database was unreachable: heartbeats it could not store are not taken for silence', async () => {
    const gw = newId('gw');
    const calls = startCalls(database.db, bus, { heartbeatsSeenSince: Date.now() - 60_000 });
    try {
      const { conversationId } = await prepareCall(bus, prepareRequest(tenant.tenantId, agent.id, { gatewayId: gw }));
      await heartbeat(calls, gw, [conversationId]);
      await proxy.cut();
      try {
        // The gateway keeps beating; none can be stored.
        for (let i = 0; i < 4; i++) {
          await expect(heartbeat(calls, gw, [conversationId])).rejects.toThrow();
          await sleep(intervalMs);
        }
      } finally {
        await proxy.restore();
      }
      // The stored heartbeat is four intervals old, but this control plane was blind then.
      expect(await calls.watchdog.runOnce()).toBe(0);
      expect((await statusOf(conversationId)).status).toBe('in_progress');
      await sleep(4 * intervalMs);
      expect(await calls.watchdog.runOnce()).toBe(1);
    } finally {
      await calls.close();
    }
  });
});
