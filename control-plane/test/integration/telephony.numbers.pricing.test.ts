import { describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { numbersWorld } from '../telephony-numbers-fixtures.js';

const w = numbersWorld();
const pricing = (query: string, key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/telephony/numbers/pricing${query}`);

describe('GET /api/v1/telephony/numbers/pricing', () => {
  it("answers the carrier's local and toll-free prices for the country from its pricing lookup", async () => {
    const before = w.sims.twilio.requests.length;
    const res = await pricing('?country=us&provider=twilio');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      country: 'US',
      provider: 'twilio',
      localNumber: { monthlyCostUsd: 1.15, inboundMinuteCostUsd: 0.0085, outboundMinuteCostUsd: 0.014 },
      tollFreeNumber: { monthlyCostUsd: 2.15, inboundMinuteCostUsd: 0.022, outboundMinuteCostUsd: 0.014 },
    });
    const paths = w.sims.twilio.requests.slice(before).map((r) => r.path);
    expect(paths).toEqual(expect.arrayContaining(['/v1/PhoneNumbers/Countries/US', '/v2/Voice/Countries/US']));
  });

  it('asks the named carrier, and Twilio by default', async () => {
    const telnyx = await pricing('?country=GB&provider=telnyx&tollFree=true');
    expect(telnyx.statusCode, telnyx.body).toBe(200);
    expect(telnyx.json()).toMatchObject({ country: 'GB', provider: 'telnyx', localNumber: { monthlyCostUsd: 1.25 }, tollFreeNumber: { monthlyCostUsd: 2.5 } });
    const vonage = await pricing('?country=GB&provider=vonage');
    expect(vonage.statusCode, vonage.body).toBe(200);
    expect(vonage.json()).toMatchObject({ provider: 'vonage', localNumber: { monthlyCostUsd: 1.25 } });
    const before = w.sims.twilio.requests.length;
    const byDefault = await pricing('?country=GB');
    expect(byDefault.json().provider).toBe('twilio');
    expect(w.sims.twilio.requests.length).toBeGreaterThan(before);
  });

  it('answers 502 for a country the carrier does not price and 503 when it is unavailable', async () => {
    const unknown = await pricing('?country=FR&provider=twilio');
    expect(unknown.statusCode, unknown.body).toBe(502);
    expect(unknown.json().detail).toMatch(/^Twilio refused to look up prices for FR \(HTTP 404/);
    w.sims.twilio.failNext(10, 503);
    const unavailable = await pricing('?country=US&provider=twilio');
    w.sims.twilio.failNext(0, 200);
    expect(unavailable.statusCode).toBe(503);
  });

  it.each([
    ['?country=ZZ', 'country'],
    ['?country=US&provider=sinch', 'provider'],
    ['?country=US&tollFree=yes', 'tollFree'],
  ])('answers 422 naming the field for %s', async (query, field) => {
    const res = await pricing(query);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('answers 400 naming country when it is missing', async () => {
    const res = await pricing('?provider=twilio');
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([expect.objectContaining({ field: 'country' })]);
  });

  it('answers 401 without credentials and 403 without telephony:read', async () => {
    expect((await pricing('?country=US', '')).statusCode).toBe(401);
    const noRead = await w.tenant.mintKey({ scopes: ['telephony:write'] });
    expect((await pricing('?country=US', noRead.key)).statusCode).toBe(403);
  });
});
