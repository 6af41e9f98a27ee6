import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { newId } from '@vap/shared';
import { openDatabase } from '../../src/db/database.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { HEARTBEAT_RETENTION_MS } from '../../src/modules/conversations/call-service.js';
import { createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { activeAgent, endedRecord, message, prepareCall, prepareRequest, publishHeartbeat, recordEvents, startCalls, waitForRow } from './calls.fixtures.js';

// The clock of every time rule. Calls and heartbeats are dated in the past and the
// watchdog runs at the real time (see calls.fixtures.ts: never move it into the future).
let offsetMs = 0;
const now = () => Date.now() + offsetMs;

let t: TestApp;
let tenant: TestTenant;
let agent: { id: string };
let calls: CallHandling;
let events: ReturnType<typeof recordEvents>;

let iso: Awaited<ReturnType<typeof isolatedDatabase>>;

beforeAll(async () => {
  // A database of its own: these tests leave gateways silent on purpose, and any other file's
  // control plane on the shared database (its watchdog judges every gateway there) could fail
  // their calls first.
  iso = await isolatedDatabase();
  t = await createTestApp({ database: iso.database });
  tenant = await createTenant(t.database);
  agent = await activeAgent(t.app, tenant.key);
  calls = startCalls(t.database.db, t.bus, { now });
  events = recordEvents(t.bus, tenant.tenantId);
});
afterAll(async () => {
  await events.close();
  await calls.close();
  await t.close();
  await iso.drop();
});

/** Starts a call on `gatewayId` dated `agoMs` in the past. */
async function callStartedAgo(agoMs: number, gatewayId: string): Promise<string> {
  offsetMs = -agoMs;
  try {
    return (await prepareCall(t.bus, prepareRequest(tenant.tenantId, agent.id, { gatewayId }))).conversationId;
  } finally {
    offsetMs = 0;
  }
}

async function heartbeatAgo(agoMs: number, gatewayId: string, active: string[], intervalMs = 1000): Promise<void> {
  offsetMs = -agoMs;
  try {
    await calls.calls.heartbeat({ gatewayId, activeConversationIds: active, intervalMs, at: new Date(now()).toISOString() });
  } finally {
    offsetMs = 0;
  }
}

async function statusOf(id: string): Promise<string> {
  const { rows } = await t.database.pool.query('select status from conversations where id = $1', [id]);
  return rows[0].status;
}

describe('lost gateways', () => {
  it('fails the calls of a gateway that stopped heartbeating, with Error and SessionEnded events', async () => {
    const gw = newId('gw');
    const id = await callStartedAgo(10_000, gw);
    await heartbeatAgo(10_000, gw, [id]);

    // 2 s after the last heartbeat of a 1 s interval: not yet lost (3 intervals).
    offsetMs = -8_000;
    await calls.watchdog.runOnce();
    offsetMs = 0;
    expect(await statusOf(id)).toBe('in_progress');

    const before = Date.now();
    await calls.watchdog.runOnce();
    const row = await waitForRow(t.database.pool, id, () => undefined);
    expect(row).toMatchObject({ status: 'failed', end_reason: 'gateway_lost', duration_seconds: 10, costs: null, error: { code: 'gateway_lost', message: 'The media gateway carrying this call stopped responding' } });
    expect((row.ended_at as Date).getTime()).toBeGreaterThanOrEqual(before - 5);

    await vi.waitFor(() => expect(events.of(id).map((e) => e.type)).toEqual(['SessionStarted', 'Error', 'SessionEnded']));
    expect(events.of(id, 'Error')[0]!.data).toEqual({ conversationId: id, errorCode: 'gateway_lost', errorMessage: 'The media gateway carrying this call stopped responding', recoverable: false });
    expect(events.of(id, 'SessionEnded')[0]!.data).toMatchObject({ conversationId: id, endReason: 'gateway_lost', durationSeconds: 10, cost: null, caller: { phoneNumber: '+14155550123', country: 'US' } });

    // A later pass finds nothing more to do for it.
    await calls.watchdog.runOnce();
    await new Promise((r) => setTimeout(r, 30));
    expect(events.of(id)).toHaveLength(3);
  });

  it('fails a call whose gateway never sent a heartbeat once it is 30 s old, not before', async () => {
    const young = await callStartedAgo(25_000, newId('gw'));
    const old = await callStartedAgo(31_000, newId('gw'));
    await calls.watchdog.runOnce();
    expect(await statusOf(young)).toBe('in_progress');
    expect(await statusOf(old)).toBe('failed');
  });

  it('fails a call its gateway no longer lists once it is two heartbeat intervals old', async () => {
    const gw = newId('gw');
    const dropped = await callStartedAgo(5_000, gw);
    const listed = await callStartedAgo(5_000, gw);
    const justStarted = await callStartedAgo(500, gw);
    await publishHeartbeat(t.bus, gw, [listed], 1000);

    const row = await waitForRow(t.database.pool, dropped, (r) => expect(r.status).toBe('failed'));
    expect(row).toMatchObject({ end_reason: 'gateway_lost', duration_seconds: 5 });
    expect(await statusOf(listed)).toBe('in_progress');
    expect(await statusOf(justStarted)).toBe('in_progress');
    await vi.waitFor(() => expect(events.of(dropped).map((e) => e.type)).toEqual(['SessionStarted', 'Error', 'SessionEnded']));
    const { rows } = await t.database.pool.query('select interval_ms from gateway_heartbeats where gateway_id = $1', [gw]);
    expect(rows).toEqual([{ interval_ms: 1000 }]);
  });

  it('counts the two intervals from the heartbeat\'s arrival, not from after its settle wait', async () => {
    const gw = newId('gw');
    // 1.5 s old when the heartbeat (1 s interval) arrives: younger than two intervals then, and
    // older than two by the end of the 1 s settle wait, which must not count.
    const young = await callStartedAgo(1500, gw);
    const old = await callStartedAgo(2500, gw);
    await calls.calls.heartbeat({ gatewayId: gw, activeConversationIds: [], intervalMs: 1000, at: new Date().toISOString() }, 1000);
    expect(await statusOf(young)).toBe('in_progress');
    expect(await statusOf(old)).toBe('failed');
  });

  it('does not fail a call its gateway is still preparing (the answer to call.prepare not yet back), by provider and call id', async () => {
    const gw = newId('gw');
    const req = prepareRequest(tenant.tenantId, agent.id, { gatewayId: gw });
    offsetMs = -5000;
    const preparing = (await prepareCall(t.bus, req)).conversationId;
    offsetMs = 0;
    const dropped = await callStartedAgo(5000, gw);
    // A call id names a call of its carrier only: this Vonage call is not the Twilio one listed.
    const vonage = prepareRequest(tenant.tenantId, agent.id, { gatewayId: gw, provider: 'vonage' });
    offsetMs = -5000;
    const sameSidElsewhere = (await prepareCall(t.bus, vonage)).conversationId;
    offsetMs = 0;
    await calls.calls.heartbeat({ gatewayId: gw, activeConversationIds: [], intervalMs: 1000, at: new Date().toISOString(), preparing: [{ provider: 'twilio', callSid: req.callSid }, { provider: 'twilio', callSid: vonage.callSid }] });
    expect(await statusOf(preparing)).toBe('in_progress');
    expect(await statusOf(dropped)).toBe('failed');
    expect(await statusOf(sameSidElsewhere)).toBe('failed');
  });

  it('forgets gateways not heard from for an hour (the voice webhooks read the table on every call); a call of one is still failed', async () => {
    const gone = newId('gw');
    const id = await callStartedAgo(HEARTBEAT_RETENTION_MS + 60_000, gone);
    await heartbeatAgo(HEARTBEAT_RETENTION_MS + 1000, gone, [id]);
    const recent = newId('gw');
    await heartbeatAgo(HEARTBEAT_RETENTION_MS - 60_000, recent, []);
    const rowsOf = async (gatewayId: string) => (await t.database.pool.query('select gateway_id from gateway_heartbeats where gateway_id = $1', [gatewayId])).rowCount;
    // (Another file's watchdog on this database may be the one that prunes it: any control plane does.)
    await calls.calls.failLostCalls();
    expect(await rowsOf(gone)).toBe(0);
    expect(await rowsOf(recent)).toBe(1);
    expect(await statusOf(id)).toBe('failed');
  });

  it('lets the gateway’s end record replace the watchdog’s verdict and emits a corrected SessionEnded', async () => {
    const id = await callStartedAgo(31_000, newId('gw'));
    await calls.watchdog.runOnce();
    expect(await statusOf(id)).toBe('failed');

    const rec = endedRecord(tenant.tenantId, agent.id, id, [message(0), message(1)], { status: 'completed', endReason: 'user_ended', durationSeconds: 31 });
    await calls.calls.end(rec);
    await calls.calls.end(rec);
    const row = await waitForRow(t.database.pool, id, () => undefined);
    expect(row).toMatchObject({ status: 'completed', end_reason: 'user_ended', duration_seconds: 31, error: null });
    expect(row.costs).not.toBeNull();

    await vi.waitFor(() => expect(events.of(id, 'SessionEnded')).toHaveLength(2));
    const [lost, corrected] = events.of(id, 'SessionEnded');
    expect(lost!.data).toMatchObject({ endReason: 'gateway_lost', cost: null });
    expect(corrected!.data).toMatchObject({ endReason: 'user_ended', durationSeconds: 31, cost: { totalUsd: expect.any(Number) } });
  });

  it('fails each call once when several control planes run the watchdog at the same moment', async () => {
    const otherDb = openDatabase(iso.url, 3);
    const other = startCalls(otherDb.db, t.bus, { now });
    try {
      const ids = [await callStartedAgo(40_000, newId('gw')), await callStartedAgo(40_000, newId('gw'))];
      await Promise.all([calls.watchdog.runOnce(), other.watchdog.runOnce(), calls.watchdog.runOnce(), other.watchdog.runOnce()]);
      for (const id of ids) expect(await statusOf(id)).toBe('failed');
      await vi.waitFor(() => {
        for (const id of ids) expect(events.of(id).map((e) => e.type)).toEqual(['SessionStarted', 'Error', 'SessionEnded']);
      });
      await new Promise((r) => setTimeout(r, 50));
      for (const id of ids) expect(events.of(id)).toHaveLength(3);
    } finally {
      await other.close();
      await otherDb.close();
    }
  });

  it('does not count gateway silence over a stall of its own process (heartbeats wait unread behind its timer)', async () => {
    const timed = startCalls(t.database.db, t.bus, { now, watchdog: { intervalMs: 100 } });
    try {
      const gw = newId('gw');
      const id = await callStartedAgo(0, gw);
      const beat = () => calls.calls.heartbeat({ gatewayId: gw, activeConversationIds: [id], intervalMs: 300, at: new Date().toISOString() });
      await beat();
      // The loop blocked for 1.2 s: four heartbeat intervals, past the stale limit of three.
      const until = performance.now() + 1200;
      while (performance.now() < until);
      // The watchdog's late tick comes first; the gateway's beats (here: the next one) after it.
      await new Promise((r) => setTimeout(r, 150));
      await beat();
      await new Promise((r) => setTimeout(r, 100));
      await beat();
      expect(await statusOf(id)).toBe('in_progress');
    } finally {
      await timed.close();
    }
  });

  it('runs on its own timer while the control plane runs', async () => {
    const timed = startCalls(t.database.db, t.bus, { now, watchdog: { intervalMs: 50 } });
    try {
      const id = await callStartedAgo(45_000, newId('gw'));
      await waitForRow(t.database.pool, id, (r) => expect(r.status).toBe('failed'));
    } finally {
      await timed.close();
    }
  });
});
