import { randomUUID } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signVonageWebhook } from '@vap/shared';
import type { Database } from '../../src/db/database.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { Housekeeping } from '../../src/modules/housekeeping/housekeeping.js';
import { IdempotencyStore } from '../../src/modules/idempotency/idempotency-store.js';
import { RateLimiter } from '../../src/modules/rate-limit/rate-limiter.js';
import { CarrierCallEventStore } from '../../src/modules/telephony/carrier-call-event-store.js';
import { call, createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { adminCall, createAdminApp } from '../admin-fixtures.js';
import { TELEPHONY_ENV, agentWithNumber, postTwilio, randomCallSid } from '../telephony-fixtures.js';
import { seedCall, startCalls } from './calls.fixtures.js';

const SECRET = 'vonage-call-events-test-secret-000';
const silent = pino({ level: 'silent' });

// A database of its own: the purge below deletes every old event of the database it runs on.
let iso: { database: Database; drop(): Promise<void> };
let t: TestApp;
let admin: FastifyInstance;
let calls: CallHandling;
let tenant: TestTenant;
let twilioNumber: { agentId: string; phoneNumber: string };
let vonageNumber: { agentId: string; phoneNumber: string };

beforeAll(async () => {
  iso = await isolatedDatabase();
  t = await createTestApp({ env: { ...TELEPHONY_ENV, VONAGE_SIGNATURE_SECRET: SECRET }, database: iso.database });
  admin = await createAdminApp(iso.database, { APP_ENV: 'production' });
  calls = startCalls(iso.database.db, t.bus);
  tenant = await createTenant(iso.database);
  twilioNumber = await agentWithNumber(t.app, iso.database, tenant);
  vonageNumber = await agentWithNumber(t.app, iso.database, tenant, { provider: 'vonage' });
});
afterAll(async () => {
  await calls.close();
  await admin.close();
  await t.close();
  await iso.drop();
});

/** POSTs a Vonage event signed with `secret`. */
function vonageEvent(body: Record<string, unknown>, secret = SECRET): Promise<LightMyRequestResponse> {
  const raw = JSON.stringify(body);
  return t.app.inject({ method: 'POST', url: '/webhooks/vonage/voice/event', headers: { 'content-type': 'application/json', authorization: `Bearer ${signVonageWebhook({ secret, rawBody: raw })}` }, payload: raw });
}

/** A Vonage event for `uuid` to our Vonage number (sent without the `+`, as Vonage does). */
function vonageBody(uuid: string, status: string, timestamp: string, extra: Record<string, string> = {}): Record<string, string> {
  return { from: '447700900000', to: vonageNumber.phoneNumber.slice(1), uuid, conversation_uuid: `CON-${uuid}`, status, direction: 'inbound', timestamp, ...extra };
}

function twilioStatus(callSid: string, status: string, extra: Record<string, string> = {}): Record<string, string> {
  return { AccountSid: 'AC00000000000000000000000000000001', CallSid: callSid, CallStatus: status, From: '+15551230001', To: twilioNumber.phoneNumber, Direction: 'inbound', ...extra };
}

interface Row {
  provider: string;
  status: string;
  detail: string | null;
  duration_seconds: number | null;
  occurred_at: Date;
  received_at: Date;
  conversation_id: string | null;
  tenant_id: string | null;
}

async function rowsFor(callSid: string): Promise<Row[]> {
  return (await iso.database.pool.query<Row>('select * from carrier_call_events where call_sid = $1 order by occurred_at, received_at', [callSid])).rows;
}

function inspect(callSid: string): Promise<LightMyRequestResponse> {
  return adminCall(admin, 'GET', `/api/v1/telephony/debug/calls/${encodeURIComponent(callSid)}`);
}

describe('Vonage event webhook stores the call status', () => {
  it('stores the events of a call that ended while ringing, with the tenant of the called number; the inspector shows them without a conversation', async () => {
    const uuid = randomUUID();
    // Sent out of order: the inspector orders by the carrier's time.
    for (const [status, at, extra] of [
      ['ringing', '2026-11-25T20:00:01.000Z', {}],
      ['started', '2026-11-25T20:00:00.500Z', {}],
      ['unanswered', '2026-11-25T20:00:31.000Z', { detail: 'timeout' }],
    ] as const) {
      expect((await vonageEvent(vonageBody(uuid, status, at, extra))).statusCode).toBe(204);
    }
    const rows = await rowsFor(uuid);
    expect(rows.map((r) => [r.provider, r.status, r.conversation_id, r.tenant_id])).toEqual([
      ['vonage', 'started', null, tenant.tenantId],
      ['vonage', 'ringing', null, tenant.tenantId],
      ['vonage', 'unanswered', null, tenant.tenantId],
    ]);

    const res = await inspect(uuid);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      callSid: uuid,
      conversation: null,
      outboundCall: null,
      carrierEvents: [
        { provider: 'vonage', status: 'started', detail: null, durationSeconds: null, occurredAt: '2026-11-25T20:00:00.500Z' },
        { provider: 'vonage', status: 'ringing', detail: null, durationSeconds: null, occurredAt: '2026-11-25T20:00:01.000Z' },
        { provider: 'vonage', status: 'unanswered', detail: 'timeout', durationSeconds: null, occurredAt: '2026-11-25T20:00:31.000Z' },
      ],
    });
  });

  it('stores events against the conversation stored under the call id, and the inspector lists them with it', async () => {
    const uuid = randomUUID();
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, vonageNumber.agentId, { ended: false, request: { provider: 'vonage', callSid: uuid } });
    expect((await vonageEvent(vonageBody(uuid, 'answered', '2026-11-25T20:10:00.000Z'))).statusCode).toBe(204);
    expect((await vonageEvent(vonageBody(uuid, 'completed', '2026-11-25T20:13:39.000Z', { duration: '219' }))).statusCode).toBe(204);
    const rows = await rowsFor(uuid);
    expect(rows.map((r) => [r.status, r.duration_seconds, r.conversation_id, r.tenant_id])).toEqual([
      ['answered', null, conversationId, tenant.tenantId],
      ['completed', 219, conversationId, tenant.tenantId],
    ]);
    const body = (await inspect(uuid)).json();
    expect(body.conversation).toMatchObject({ id: conversationId, status: 'InProgress' });
    expect(body.carrierEvents).toEqual([
      { provider: 'vonage', status: 'answered', detail: null, durationSeconds: null, occurredAt: '2026-11-25T20:10:00.000Z' },
      { provider: 'vonage', status: 'completed', detail: null, durationSeconds: 219, occurredAt: '2026-11-25T20:13:39.000Z' },
    ]);
  });

  it('stores a redelivered event once, and a later event of the same status as another', async () => {
    const uuid = randomUUID();
    const body = vonageBody(uuid, 'ringing', '2026-11-25T20:20:00.000Z');
    expect((await vonageEvent(body)).statusCode).toBe(204);
    expect((await vonageEvent(body)).statusCode).toBe(204);
    expect(await rowsFor(uuid)).toHaveLength(1);
    expect((await vonageEvent({ ...body, timestamp: '2026-11-25T20:20:05.000Z' })).statusCode).toBe(204);
    expect(await rowsFor(uuid)).toHaveLength(2);
  });

  it('stores the receipt time when the event has no timestamp, and nothing for a call-flow error (no call id, no status)', async () => {
    const uuid = randomUUID();
    const before = Date.now();
    const { timestamp: _dropped, ...noTime } = vonageBody(uuid, 'busy', 'x');
    expect((await vonageEvent(noTime)).statusCode).toBe(204);
    const [row] = await rowsFor(uuid);
    expect(row!.occurred_at.getTime()).toBe(row!.received_at.getTime());
    expect(row!.received_at.getTime()).toBeGreaterThanOrEqual(before - 1000);
    const count = async () => Number((await iso.database.pool.query<{ n: string }>('select count(*) as n from carrier_call_events')).rows[0]!.n);
    const n = await count();
    expect((await vonageEvent({ reason: 'Syntax error in NCCO', conversation_uuid: 'CON-x', timestamp: new Date().toISOString() })).statusCode).toBe(204);
    expect(await count()).toBe(n);
  });

  it('answers 422 naming the field for a non-string timestamp or to, and stores nothing', async () => {
    const uuid = randomUUID();
    for (const field of ['timestamp', 'to'] as const) {
      const res = await vonageEvent({ ...vonageBody(uuid, 'completed', '2026-11-25T20:30:00.000Z'), [field]: 5 });
      expect(res.statusCode).toBe(422);
      expect(res.json()).toMatchObject({ errors: [{ field }] });
    }
    expect(await rowsFor(uuid)).toEqual([]);
  });

  it('stores nothing for a badly signed event', async () => {
    const uuid = randomUUID();
    expect((await vonageEvent(vonageBody(uuid, 'completed', '2026-11-25T20:30:00.000Z'), 'another-secret-0000000000000000000')).statusCode).toBe(403);
    expect(await rowsFor(uuid)).toEqual([]);
    expect((await inspect(uuid)).statusCode).toBe(404);
  });
});

describe('Twilio status callback stores the call status', () => {
  it('stores CallStatus, CallDuration, the RFC 2822 Timestamp and the SIP code, with the tenant of the called number', async () => {
    const sid = randomCallSid();
    const res = await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'busy', { Timestamp: 'Wed, 25 Nov 2026 20:40:00 +0000', SipResponseCode: '486', SequenceNumber: '1' }));
    expect(res.statusCode).toBe(204);
    const [row, ...more] = await rowsFor(sid);
    expect(more).toEqual([]);
    expect(row).toMatchObject({ provider: 'twilio', status: 'busy', detail: 'sip 486', duration_seconds: null, conversation_id: null, tenant_id: tenant.tenantId });
    expect(row!.occurred_at.toISOString()).toBe('2026-11-25T20:40:00.000Z');
    expect((await inspect(sid)).json()).toMatchObject({ conversation: null, carrierEvents: [{ provider: 'twilio', status: 'busy', detail: 'sip 486', occurredAt: '2026-11-25T20:40:00.000Z' }] });
  });

  it('links the conversation of the call, stores a redelivery once, on both addresses', async () => {
    const sid = randomCallSid();
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, twilioNumber.agentId, { request: { provider: 'twilio', callSid: sid } });
    const params = twilioStatus(sid, 'completed', { CallDuration: '42', Timestamp: 'Wed, 25 Nov 2026 20:45:00 +0000' });
    expect((await postTwilio(t.app, '/webhooks/twilio/status', params)).statusCode).toBe(204);
    expect((await postTwilio(t.app, '/api/v1/webhooks/twilio/status', params)).statusCode).toBe(204);
    const rows = await rowsFor(sid);
    expect(rows.map((r) => [r.status, r.duration_seconds, r.conversation_id, r.tenant_id])).toEqual([['completed', 42, conversationId, tenant.tenantId]]);
    expect((await inspect(sid)).json()).toMatchObject({ conversation: { id: conversationId, status: 'Completed' }, carrierEvents: [{ status: 'completed', durationSeconds: 42 }] });
  });

  it('answers 204 and stores nothing for a callback without CallSid or CallStatus', async () => {
    const sid = randomCallSid();
    const { CallStatus: _status, ...noStatus } = twilioStatus(sid, 'completed');
    expect((await postTwilio(t.app, '/webhooks/twilio/status', noStatus)).statusCode).toBe(204);
    const { CallSid: _sid, ...noSid } = twilioStatus(sid, 'completed');
    expect((await postTwilio(t.app, '/webhooks/twilio/status', noSid)).statusCode).toBe(204);
    expect(await rowsFor(sid)).toEqual([]);
  });

  it('stores nothing for an unsigned or mis-signed callback', async () => {
    const sid = randomCallSid();
    expect((await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'completed'), { signature: null })).statusCode).toBe(403);
    expect((await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'completed'), { token: 'another-token-00000000000000000000' })).statusCode).toBe(403);
    expect(await rowsFor(sid)).toEqual([]);
  });
});

describe('a carrier event that cannot be stored', () => {
  it('is logged and answered 204 as any other (Twilio and Vonage), not 5xx, and a later one is stored again', async () => {
    const sid = randomCallSid();
    const uuid = randomUUID();
    // The insert fails (the table is not there) while the rest of the app works.
    await iso.database.pool.query('alter table carrier_call_events rename to carrier_call_events_away');
    try {
      expect((await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'completed'))).statusCode).toBe(204);
      expect((await vonageEvent(vonageBody(uuid, 'completed', '2026-11-25T21:00:00.000Z'))).statusCode).toBe(204);
    } finally {
      await iso.database.pool.query('alter table carrier_call_events_away rename to carrier_call_events');
    }
    expect(await rowsFor(sid)).toEqual([]);
    expect(await rowsFor(uuid)).toEqual([]);
    expect((await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'completed'))).statusCode).toBe(204);
    expect((await rowsFor(sid)).map((r) => r.status)).toEqual(['completed']);
  });

  it('keeps an event whose text Postgres cannot hold (a NUL, an unpaired surrogate) with U+FFFD in its place, Twilio and Vonage', async () => {
    const uuid = randomUUID();
    const vonage = await vonageEvent({ ...vonageBody(`${uuid}\u0000`, 'completed', '2026-11-25T21:00:00.000Z'), detail: 'remote\ud800' });
    expect(vonage.statusCode).toBe(204);
    expect(await rowsFor(`${uuid}\ufffd`)).toMatchObject([{ provider: 'vonage', status: 'completed', detail: 'remote\ufffd', conversation_id: null }]);
    const sid = randomCallSid();
    expect((await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(`${sid}\u0000`, 'busy'))).statusCode).toBe(204);
    expect(await rowsFor(`${sid}\ufffd`)).toMatchObject([{ provider: 'twilio', status: 'busy', conversation_id: null }]);
  });

  it('CarrierCallEventStore.record reports failed and logs a warning naming the call, without throwing', async () => {
    const warnings: Record<string, unknown>[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line) as Record<string, unknown>) });
    await iso.database.pool.query('alter table carrier_call_events rename to carrier_call_events_away');
    try {
      const store = new CarrierCallEventStore(iso.database.db);
      await expect(store.record({ provider: 'vonage', callSid: 'CALL-x', status: 'ringing' }, log)).resolves.toBe('failed');
    } finally {
      await iso.database.pool.query('alter table carrier_call_events_away rename to carrier_call_events');
    }
    expect(warnings).toMatchObject([{ msg: 'carrier call event could not be stored', provider: 'vonage', callSid: 'CALL-x', callStatus: 'ringing' }]);
  });
});

describe('DELETE /api/v1/conversations/{id}', () => {
  it('deletes the carrier events of its call, also those from before the conversation existed', async () => {
    const sid = randomCallSid();
    const other = randomCallSid();
    // Ringing arrives before the gateway stores the conversation: no conversation_id on it.
    await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'ringing', { Timestamp: 'Wed, 25 Nov 2026 20:50:00 +0000' }));
    await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(other, 'ringing', { Timestamp: 'Wed, 25 Nov 2026 20:50:00 +0000' }));
    const { conversationId } = await seedCall(t.bus, calls, tenant.tenantId, twilioNumber.agentId, { request: { provider: 'twilio', callSid: sid } });
    await postTwilio(t.app, '/webhooks/twilio/status', twilioStatus(sid, 'completed', { CallDuration: '95', Timestamp: 'Wed, 25 Nov 2026 20:52:00 +0000' }));
    expect((await rowsFor(sid)).map((r) => r.conversation_id)).toEqual([null, conversationId]);

    const res = await call(t.app, tenant.key, 'DELETE', `/api/v1/conversations/${conversationId}`);
    expect(res.statusCode, res.body).toBe(204);
    expect(await rowsFor(sid)).toEqual([]);
    expect((await inspect(sid)).statusCode).toBe(404);
    // Another call's events stay.
    expect(await rowsFor(other)).toHaveLength(1);
  });
});

describe('retention', () => {
  const DAY = 86_400_000;
  const nowMs = Date.parse('2026-11-25T21:00:00.000Z');

  /** Stores an event as if received at `receivedMs` (the store's clock), through the same insert the webhooks use. */
  async function storeAt(receivedMs: number, callSid: string, status: string): Promise<void> {
    const store = new CarrierCallEventStore(iso.database.db, () => new Date(receivedMs));
    expect(await store.record({ provider: 'vonage', callSid, status }, silent)).toBe('stored');
  }

  it('housekeeping deletes events received more than 90 days ago, in batches, and keeps the rest', async () => {
    const old = randomUUID();
    const recent = randomUUID();
    for (const status of ['started', 'ringing', 'answered', 'completed', 'disconnected']) await storeAt(nowMs - 91 * DAY, old, status);
    await storeAt(nowMs - 89 * DAY, recent, 'completed');

    // Two rows per statement: the five old rows take three deletes, the recent one stays.
    const store = new CarrierCallEventStore(iso.database.db);
    expect(await store.purgeBefore(new Date(nowMs - 90 * DAY), 2)).toBe(5);
    expect(await rowsFor(old)).toEqual([]);
    expect(await rowsFor(recent)).toHaveLength(1);

    // The housekeeping run applies the 90 days it is given.
    for (const status of ['started', 'ringing', 'completed']) await storeAt(nowMs - 120 * DAY, old, status);
    const hk = new Housekeeping({
      idempotency: new IdempotencyStore(iso.database.pool),
      rateLimiter: new RateLimiter(iso.database.pool, () => nowMs),
      carrierCallEvents: { store, retentionDays: 90 },
      log: silent,
      intervalMs: 60_000,
      now: () => nowMs,
    });
    const result = await hk.runOnce();
    await hk.stop();
    expect(result.carrierCallEvents).toBe(3);
    expect(await rowsFor(old)).toEqual([]);
    expect(await rowsFor(recent)).toHaveLength(1);
  });
});
