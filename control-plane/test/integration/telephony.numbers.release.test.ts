import { beforeAll, describe, expect, it } from 'vitest';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { call } from '../helpers.js';
import { postTwilio, voiceParams } from '../telephony-fixtures.js';
import { agentOf, numbersWorld, provisioned } from '../telephony-numbers-fixtures.js';
import { child, parseXml } from '../xml.js';

const w = numbersWorld();
const release = (numberId: string, key = w.tenant.key) => call(w.t.app, key, 'DELETE', `/api/v1/telephony/numbers/${numberId}`);
let agent: { id: string };

beforeAll(async () => {
  agent = await agentOf(w);
  expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`)).statusCode).toBe(200);
});

async function assignedNumber(phoneNumber: string, provider: 'twilio' | 'telnyx' | 'vonage' = 'twilio'): Promise<string> {
  const n = await provisioned(w, phoneNumber, provider);
  expect((await call(w.t.app, w.tenant.key, 'POST', `/api/v1/telephony/numbers/${n.id}/assign/${agent.id}`)).statusCode).toBe(200);
  return n.id;
}

async function row(id: string): Promise<{ status: string; released_at: Date | null; assigned_agent_id: string | null }> {
  return (await w.t.database.pool.query('select status, released_at, assigned_agent_id from phone_numbers where id = $1', [id])).rows[0];
}

describe('DELETE /api/v1/telephony/numbers/{numberId}', () => {
  it('releases the number at the carrier, keeps the row as released, and its calls get the apology', async () => {
    const id = await assignedNumber('+14155550100');
    const routed = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+14155550100'));
    expect(child(child(parseXml(routed.body), 'Connect'), 'Stream').attrs.url).toContain(agent.id);
    const sid = w.sims.twilio.numbers.get('+14155550100')!.state.sid;

    const res = await release(id);
    expect(res.statusCode, res.body).toBe(204);
    expect(res.body).toBe('');
    expect(w.sims.twilio.requestsTo('DELETE', new RegExp(`/IncomingPhoneNumbers/${sid}\\.json$`)).map((r) => r.status)).toEqual([204]);
    expect(w.sims.twilio.numbers.get('+14155550100')).toBeUndefined();

    const stored = await row(id);
    expect(stored).toMatchObject({ status: 'released', assigned_agent_id: null });
    expect(Math.abs(stored.released_at!.getTime() - Date.now())).toBeLessThan(60_000);

    const answer = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+14155550100'));
    expect(answer.statusCode).toBe(200);
    const response = parseXml(answer.body);
    expect(response.children.map((c) => c.name)).toEqual(['Say', 'Hangup']);
    expect(child(response, 'Say').text).toBe(APOLOGY_TEXT);
  });

  it('lets the same E.164 be provisioned again after release, as a new number', async () => {
    const first = await provisioned(w, '+14155550101');
    expect((await release(first.id)).statusCode).toBe(204);
    const again = await provisioned(w, '+14155550101');
    expect(again.id).not.toBe(first.id);
    expect((await row(first.id)).status).toBe('released');
    expect((await row(again.id)).status).toBe('active');
  });

  it('releases Telnyx and Vonage numbers at their carriers', async () => {
    const telnyx = await assignedNumber('+442079460110', 'telnyx');
    const vonage = await assignedNumber('+12125550160', 'vonage');
    expect((await release(telnyx)).statusCode).toBe(204);
    expect((await release(vonage)).statusCode).toBe(204);
    expect(w.sims.telnyx.numbers.get('+442079460110')).toBeUndefined();
    expect(w.sims.vonage.numbers.get('+12125550160')).toBeUndefined();
    expect(w.sims.vonage.requestsTo('POST', /\/number\/cancel$/).length).toBeGreaterThan(0);
  });

  it('looks up the carrier id of a number stored without one before releasing it', async () => {
    const id = await assignedNumber('+14155550102');
    await w.t.database.pool.query('update phone_numbers set provider_sid = null where id = $1', [id]);
    expect((await release(id)).statusCode).toBe(204);
    expect(w.sims.twilio.numbers.get('+14155550102')).toBeUndefined();
  });

  it('changes nothing when the carrier fails: 503 or 502, the number still routes', async () => {
    const id = await assignedNumber('+14155550103');
    w.sims.twilio.failNext(10, 500);
    const unavailable = await release(id);
    w.sims.twilio.failNext(0, 200);
    expect(unavailable.statusCode, unavailable.body).toBe(503);
    expect(unavailable.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/unavailable$/), detail: expect.stringContaining('Twilio') });

    w.sims.twilio.failNext(1, 403);
    const refused = await release(id);
    w.sims.twilio.failNext(0, 200);
    expect(refused.statusCode, refused.body).toBe(502);
    expect(refused.json().type).toMatch(/\/errors\/carrier-error$/);

    expect(await row(id)).toMatchObject({ status: 'active', released_at: null, assigned_agent_id: agent.id });
    expect(w.sims.twilio.numbers.get('+14155550103')).toBeDefined();
    const answer = await postTwilio(w.t.app, '/webhooks/twilio/voice', voiceParams('+14155550103'));
    expect(child(child(parseXml(answer.body), 'Connect'), 'Stream').attrs.url).toContain(agent.id);
  });

  it("answers 404 for a released number, another tenant's number and a missing one", async () => {
    const id = await assignedNumber('+14155550104');
    expect((await release(id, w.other.key)).statusCode).toBe(404);
    expect((await row(id)).status).toBe('active');
    expect((await release(id)).statusCode).toBe(204);
    expect((await release(id)).statusCode).toBe(404);
    expect((await release('num_00000000000000000000000000')).statusCode).toBe(404);
  });

  it('answers 401 without credentials and 403 without telephony:write', async () => {
    const id = await assignedNumber('+14155550105');
    expect((await release(id, '')).statusCode).toBe(401);
    const readOnly = await w.tenant.mintKey({ scopes: ['telephony:read'] });
    expect((await release(id, readOnly.key)).statusCode).toBe(403);
    expect((await row(id)).status).toBe('active');
  });
});
