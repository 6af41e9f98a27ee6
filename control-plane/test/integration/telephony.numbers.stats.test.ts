import { eq } from 'drizzle-orm';
import { beforeAll, describe, expect, it } from 'vitest';
import { phoneNumbers } from '../../src/db/schema/phone-numbers.js';
import { call } from '../helpers.js';
import { numbersWorld, provisioned, storeCall } from '../telephony-numbers-fixtures.js';

const w = numbersWorld();
const stats = (numberId: string, query = '', key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/telephony/numbers/${numberId}/stats${query}`);
const NUMBER = '+14155550100';
const OTHER = '+14155550101';
let number: { id: string; provisionedAt: string };
let start: number;

/**
 * Calls of the number (and around it) after it was provisioned: inbound to it, outbound
 * from it, one in progress, one of another number, one where the number is only the
 * caller of an inbound call, and one of another tenant with the same E.164.
 *
 * The number is dated an hour back so that every call lies in the past: the default period
 * ends with today (UTC), and calls placed after now would fall on tomorrow when the file
 * runs shortly before midnight.
 */
beforeAll(async () => {
  const fresh = await provisioned(w, NUMBER);
  const provisionedAt = new Date(Date.parse(fresh.provisionedAt) - 3_600_000);
  await w.t.database.db.update(phoneNumbers).set({ provisionedAt }).where(eq(phoneNumbers.id, fresh.id));
  number = { ...fresh, provisionedAt: provisionedAt.toISOString() };
  start = Date.parse(number.provisionedAt) + 1000;
  const at = (minutes: number) => new Date(start + minutes * 60_000);
  const tenantId = w.tenant.tenantId;
  await storeCall(w.t.database, { tenantId, direction: 'inbound', callerPhone: '+15550000001', calledPhone: NUMBER, startedAt: at(0), durationSeconds: 61, costUsd: 0.12 });
  await storeCall(w.t.database, { tenantId, direction: 'inbound', callerPhone: '+15550000002', calledPhone: NUMBER, startedAt: at(5), durationSeconds: 30, costUsd: 0.05 });
  await storeCall(w.t.database, { tenantId, direction: 'inbound', callerPhone: '+15550000003', calledPhone: NUMBER, startedAt: at(10), durationSeconds: null });
  await storeCall(w.t.database, { tenantId, direction: 'outbound', callerPhone: NUMBER, calledPhone: '+15550000004', startedAt: at(15), durationSeconds: 125, costUsd: 0.3 });
  // Not this number's: another number, and this number as the far end of an inbound call.
  await storeCall(w.t.database, { tenantId, direction: 'inbound', callerPhone: '+15550000005', calledPhone: OTHER, startedAt: at(20), durationSeconds: 600, costUsd: 9 });
  await storeCall(w.t.database, { tenantId, direction: 'inbound', callerPhone: NUMBER, calledPhone: OTHER, startedAt: at(25), durationSeconds: 600, costUsd: 9 });
  await storeCall(w.t.database, { tenantId: w.other.tenantId, direction: 'inbound', callerPhone: '+15550000006', calledPhone: NUMBER, startedAt: at(30), durationSeconds: 600, costUsd: 9 });
  // Before the number was provisioned: another holder's call, not counted.
  await storeCall(w.t.database, { tenantId, direction: 'inbound', callerPhone: '+15550000007', calledPhone: NUMBER, startedAt: new Date(Date.parse(number.provisionedAt) - 3_600_000), durationSeconds: 600, costUsd: 9 });
});

describe('GET /api/v1/telephony/numbers/{numberId}/stats', () => {
  it('counts inbound calls to the number and outbound calls from it, in the last 30 days by default', async () => {
    const before = new Date().toISOString().slice(0, 10);
    const res = await stats(number.id);
    expect(res.statusCode, res.body).toBe(200);
    // The day the request was answered on: the one before it, unless midnight (UTC) passed meanwhile.
    const today = res.json().period?.to === before ? before : new Date().toISOString().slice(0, 10);
    const from = new Date(Date.parse(`${today}T00:00:00Z`) - 29 * 86_400_000).toISOString().slice(0, 10);
    expect(res.json()).toEqual({
      numberId: number.id,
      phoneNumber: NUMBER,
      period: { from, to: today },
      inboundCalls: 3,
      outboundCalls: 1,
      // Billed minutes: 61 s → 2, 30 s → 1, 125 s → 3; the call in progress has none yet.
      totalMinutes: 6,
      totalCostUsd: 0.47,
    });
  });

  it('counts only calls started within dateFrom..dateTo (instants)', async () => {
    const from = new Date(start + 4 * 60_000).toISOString();
    const to = new Date(start + 12 * 60_000).toISOString();
    const res = await stats(number.id, `?dateFrom=${encodeURIComponent(from)}&dateTo=${encodeURIComponent(to)}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ period: { from, to }, inboundCalls: 2, outboundCalls: 0, totalMinutes: 1, totalCostUsd: 0.05 });
  });

  it('answers zeros for a period without calls', async () => {
    const res = await stats(number.id, '?dateFrom=2020-01-01&dateTo=2020-01-31');
    expect(res.json()).toMatchObject({ period: { from: '2020-01-01', to: '2020-01-31' }, inboundCalls: 0, outboundCalls: 0, totalMinutes: 0, totalCostUsd: 0 });
  });

  it('still answers for a released number, counting its calls up to the release only', async () => {
    const n = await provisioned(w, '+14155550102');
    await storeCall(w.t.database, { tenantId: w.tenant.tenantId, direction: 'inbound', callerPhone: '+15550000008', calledPhone: '+14155550102', startedAt: new Date(n.provisionedAt), durationSeconds: 59, costUsd: 0.02 });
    expect((await call(w.t.app, w.tenant.key, 'DELETE', `/api/v1/telephony/numbers/${n.id}`)).statusCode).toBe(204);
    await storeCall(w.t.database, { tenantId: w.tenant.tenantId, direction: 'inbound', callerPhone: '+15550000009', calledPhone: '+14155550102', startedAt: new Date(Date.now() + 5_000), durationSeconds: 59, costUsd: 0.02 });
    const res = await stats(n.id, `?dateTo=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ inboundCalls: 1, totalMinutes: 1, totalCostUsd: 0.02 });
  });

  it.each([
    ['?dateFrom=yesterday', 'dateFrom'],
    ['?dateTo=2026-13-01', 'dateTo'],
    ['?dateFrom=2026-02-01&dateTo=2026-01-01', 'dateTo'],
    ['?period=month', 'period'],
  ])('answers 422 naming the field for %s', async (query, field) => {
    const res = await stats(number.id, query);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it("answers 404 for another tenant's number and a missing one", async () => {
    expect((await stats(number.id, '', w.other.key)).statusCode).toBe(404);
    expect((await stats('num_00000000000000000000000000')).statusCode).toBe(404);
  });

  it('answers 401 without credentials and 403 without telephony:read', async () => {
    expect((await stats(number.id, '', '')).statusCode).toBe(401);
    const noRead = await w.tenant.mintKey({ scopes: ['conversations:read'] });
    expect((await stats(number.id, '', noRead.key)).statusCode).toBe(403);
  });
});
