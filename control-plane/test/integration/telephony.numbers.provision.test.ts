import { describe, expect, it } from 'vitest';
import { isId } from '@vap/shared';
import { VONAGE_SIM_APPLICATION_ID } from '../../src/modules/telephony/providers/simulators.js';
import { TELEPHONY_ENV } from '../telephony-fixtures.js';
import { call } from '../helpers.js';
import { numbersWorld, provision } from '../telephony-numbers-fixtures.js';

const w = numbersWorld();
const PUBLIC = TELEPHONY_ENV.PUBLIC_URL;

async function storedRows(phoneNumber: string): Promise<{ id: string; status: string }[]> {
  return (await w.t.database.pool.query('select id, status from phone_numbers where phone_number = $1', [phoneNumber])).rows;
}

describe('POST /api/v1/telephony/numbers', () => {
  it('buys a Twilio number with the platform webhooks set and answers 201 with the number', async () => {
    const res = await provision(w, { phoneNumber: '+14155550100', provider: 'twilio', friendlyName: 'Front desk' });
    expect(res.statusCode, res.body).toBe(201);
    const n = res.json();
    expect(isId('num', n.id)).toBe(true);
    expect(n).toEqual({
      id: n.id,
      phoneNumber: '+14155550100',
      friendlyName: 'Front desk',
      country: 'US',
      provider: 'twilio',
      capabilities: ['voice', 'sms', 'mms'],
      assignedAgentId: null,
      status: 'active',
      monthlyCostUsd: 1.15,
      provisionedAt: expect.any(String),
      releasedAt: null,
    });
    expect(Math.abs(Date.parse(n.provisionedAt) - Date.now())).toBeLessThan(60_000);
    const owned = w.sims.twilio.numbers.get('+14155550100');
    expect(owned?.state).toMatchObject({
      friendlyName: 'Front desk',
      voiceUrl: `${PUBLIC}/webhooks/twilio/voice`,
      statusCallback: `${PUBLIC}/webhooks/twilio/status`,
      smsUrl: `${PUBLIC}/webhooks/twilio/sms`,
    });
    const [row] = (await w.t.database.pool.query('select tenant_id, provider_sid, status from phone_numbers where id = $1', [n.id])).rows;
    expect(row).toEqual({ tenant_id: w.tenant.tenantId, provider_sid: owned!.state.sid, status: 'active' });
  });

  it('names the number in national format when friendlyName is absent', async () => {
    const res = await provision(w, { phoneNumber: '+14155550101', provider: 'twilio' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().friendlyName).toBe('(415) 555-0101');
  });

  it('buys a Vonage number linked to the voice application with the event webhook', async () => {
    const res = await provision(w, { phoneNumber: '+12125550160', provider: 'vonage' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ provider: 'vonage', country: 'US', status: 'active' });
    // Vonage routes voice through the application, which now answers at /webhooks/vonage/voice/answer (signed); the number carries the event URL.
    expect(w.sims.vonage.numbers.get('+12125550160')?.state).toMatchObject({ appId: VONAGE_SIM_APPLICATION_ID, voiceCallbackType: 'app', voiceStatusCallback: `${PUBLIC}/webhooks/vonage/voice/event` });
    expect(w.sims.vonage.applications.get(VONAGE_SIM_APPLICATION_ID)!.capabilities.voice).toMatchObject({
      webhooks: { answer_url: { address: `${PUBLIC}/webhooks/vonage/voice/answer`, http_method: 'POST' }, event_url: { address: `${PUBLIC}/webhooks/vonage/voice/event`, http_method: 'POST' } },
      signed_callbacks: true,
    });
  });

  it('buys a Telnyx number onto a TeXML application answering at the Telnyx voice webhook', async () => {
    const res = await provision(w, { phoneNumber: '+442079460110', provider: 'telnyx' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ provider: 'telnyx', country: 'GB', phoneNumber: '+442079460110' });
    const app = w.sims.telnyx.texmlApps.find((a) => a.voice_url === `${PUBLIC}/webhooks/telnyx/voice`);
    expect(app).toBeDefined();
    expect(w.sims.telnyx.numbers.get('+442079460110')?.state.connectionId).toBe(app!.id);
  });

  it('answers 409 for a number already provisioned, in this or another tenant, without asking the carrier', async () => {
    const before = w.sims.twilio.requests.length;
    const again = await provision(w, { phoneNumber: '+14155550100', provider: 'twilio' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/conflict$/), detail: expect.stringContaining('already provisioned in this account') });
    const other = await provision(w, { phoneNumber: '+14155550100', provider: 'twilio' }, w.other.key);
    expect(other.statusCode).toBe(409);
    expect(other.json().detail).not.toContain('num_');
    expect(w.sims.twilio.requests.length).toBe(before);
    expect(await storedRows('+14155550100')).toHaveLength(1);
  });

  it('answers 409, not the carrier\'s refusal, to purchases of a number made while one is at the carrier: one 201, the carrier asked once', async () => {
    const buys = () => w.sims.twilio.requestsTo('POST', /IncomingPhoneNumbers\.json$/).length;
    const before = buys();
    const all = await Promise.all(Array.from({ length: 8 }, () => provision(w, { phoneNumber: '+14155550106', provider: 'twilio' })));
    expect(all.map((r) => r.statusCode).sort()).toEqual([201, 409, 409, 409, 409, 409, 409, 409]);
    for (const r of all.filter((x) => x.statusCode === 409)) {
      expect(r.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/conflict$/), detail: expect.stringMatching(/^The number \+14155550106 is (being provisioned by another request|already provisioned in this account)/) });
    }
    expect(buys()).toBe(before + 1);
    expect(await storedRows('+14155550106')).toHaveLength(1);
  });

  it('takes purchases of more different numbers at once than the database pool has connections (5 here)', async () => {
    const forSale = async (provider: string, country: string): Promise<string[]> =>
      (await call(w.t.app, w.tenant.key, 'GET', `/api/v1/telephony/numbers/search?provider=${provider}&country=${country}&limit=4`)).json().numbers.map((n: { phoneNumber: string }) => n.phoneNumber);
    const wanted = [...(await forSale('vonage', 'US')).map((n) => ['vonage', n] as const), ...(await forSale('telnyx', 'US')).map((n) => ['telnyx', n] as const)];
    expect(wanted.length).toBeGreaterThan(5);
    const all = await Promise.all(wanted.map(([provider, phoneNumber]) => provision(w, { phoneNumber, provider })));
    expect(all.map((r) => r.statusCode)).toEqual(wanted.map(() => 201));
  });

  it('answers 502 when the carrier refuses the purchase, and stores nothing', async () => {
    w.sims.twilio.numbers.buy('+14155550102', { sid: 'PN' + 'f'.repeat(32), friendlyName: 'x', voiceUrl: null, voiceMethod: 'POST', statusCallback: null, smsUrl: null });
    const res = await provision(w, { phoneNumber: '+14155550102', provider: 'twilio' });
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/carrier-error$/), detail: expect.stringMatching(/^Twilio refused to provision \+14155550102 \(HTTP 400/) });
    expect(await storedRows('+14155550102')).toEqual([]);
  });

  it('answers 503 when the carrier is unavailable, and stores nothing; the same Idempotency-Key then succeeds', async () => {
    w.sims.twilio.failNext(10, 503);
    const headers = { 'idempotency-key': 'provision-0103' };
    const res = await provision(w, { phoneNumber: '+14155550103', provider: 'twilio' }, w.tenant.key, headers);
    w.sims.twilio.failNext(0, 200);
    expect(res.statusCode, res.body).toBe(503);
    expect(res.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/unavailable$/), detail: expect.stringContaining('Twilio') });
    expect(await storedRows('+14155550103')).toEqual([]);
    expect(w.sims.twilio.numbers.get('+14155550103')).toBeUndefined();
    expect(w.carrierErrors).toContain('twilio:provisionNumber');

    const retried = await provision(w, { phoneNumber: '+14155550103', provider: 'twilio' }, w.tenant.key, headers);
    expect(retried.statusCode, retried.body).toBe(201);
    const replayed = await provision(w, { phoneNumber: '+14155550103', provider: 'twilio' }, w.tenant.key, headers);
    expect(replayed.statusCode).toBe(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    expect(replayed.json().id).toBe(retried.json().id);
    expect(await storedRows('+14155550103')).toHaveLength(1);
  });

  it('answers 503 on a carrier timeout without retrying the purchase, and stores nothing', async () => {
    w.sims.vonage.hang = true;
    const before = w.sims.vonage.requestsTo('POST', /\/number\/buy$/).length;
    try {
      const res = await provision(w, { phoneNumber: '+12125550101', provider: 'vonage' });
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().detail).toMatch(/Vonage .*timeout/);
    } finally {
      w.sims.vonage.hang = false;
    }
    expect(w.sims.vonage.requestsTo('POST', /\/number\/buy$/).length - before).toBeLessThanOrEqual(1);
    expect(await storedRows('+12125550101')).toEqual([]);
  });

  it('releases the number at the carrier again when storing it fails after the purchase', async () => {
    // A real storage failure inside Postgres (this file's own database): inserts of this name raise.
    const pool = w.t.database.pool;
    await pool.query(`create function fail_number_insert() returns trigger language plpgsql as $$ begin if new.friendly_name = 'store-fails' then raise exception 'storage failed'; end if; return new; end $$`);
    await pool.query('create trigger fail_number_insert before insert on phone_numbers for each row execute function fail_number_insert()');
    const bought = w.sims.twilio.requestsTo('POST', /\/IncomingPhoneNumbers\.json$/).length;
    try {
      const res = await provision(w, { phoneNumber: '+13125550100', provider: 'twilio', friendlyName: 'store-fails' });
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json().detail).toContain('released at Twilio again; nothing was provisioned');
    } finally {
      await pool.query('drop trigger fail_number_insert on phone_numbers');
      await pool.query('drop function fail_number_insert()');
    }
    const buys = w.sims.twilio.requestsTo('POST', /\/IncomingPhoneNumbers\.json$/).slice(bought);
    expect(buys.map((r) => (r.body as Record<string, string>).PhoneNumber)).toEqual(['+13125550100']);
    const releases = w.sims.twilio.requestsTo('DELETE', /\/IncomingPhoneNumbers\/PN[0-9a-f]{32}\.json$/).filter((r) => r.status === 204);
    expect(releases.length).toBeGreaterThan(0);
    expect(w.sims.twilio.numbers.get('+13125550100')).toBeUndefined();
    expect(w.sims.twilio.numbers.isAvailable('+13125550100')).toBe(true);
    expect(await storedRows('+13125550100')).toEqual([]);
  });

  it('answers 422 naming the field for bad bodies', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ phoneNumber: '4155550104', provider: 'twilio' }, 'phoneNumber'],
      [{ phoneNumber: '+1 415 555 0104', provider: 'twilio' }, 'phoneNumber'],
      [{ phoneNumber: '+15551234567', provider: 'twilio' }, 'phoneNumber'],
      [{ phoneNumber: '+14155550104', provider: 'plivo' }, 'provider'],
      [{ phoneNumber: '+14155550104', provider: 'twilio', friendlyName: '' }, 'friendlyName'],
      [{ phoneNumber: '+14155550104', provider: 'twilio', friendlyName: 'x'.repeat(65) }, 'friendlyName'],
      [{ phoneNumber: '+14155550104', provider: 'twilio', tenantId: 'ten_x' }, 'tenantId'],
    ];
    const before = w.sims.twilio.requests.length;
    for (const [body, field] of cases) {
      const res = await provision(w, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().errors.map((e: { field: string }) => e.field), JSON.stringify(body)).toContain(field);
    }
    const missing = await provision(w, { provider: 'twilio' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toEqual([expect.objectContaining({ field: 'phoneNumber' })]);
    expect(w.sims.twilio.requests.length).toBe(before);
  });

  it('answers 401 without credentials and 403 without telephony:write', async () => {
    expect((await provision(w, { phoneNumber: '+14155550104', provider: 'twilio' }, '')).statusCode).toBe(401);
    const readOnly = await w.tenant.mintKey({ scopes: ['telephony:read'] });
    const res = await provision(w, { phoneNumber: '+14155550104', provider: 'twilio' }, readOnly.key);
    expect(res.statusCode).toBe(403);
    expect(res.json().detail).toMatch(/telephony:write/);
    expect(await storedRows('+14155550104')).toEqual([]);
  });
});
