import { describe, expect, it } from 'vitest';
import { call } from '../helpers.js';
import { numbersWorld } from '../telephony-numbers-fixtures.js';

const w = numbersWorld();
const search = (query: string, key = w.tenant.key) => call(w.t.app, key, 'GET', `/api/v1/telephony/numbers/search${query}`);

describe('GET /api/v1/telephony/numbers/search', () => {
  it("passes every filter to the named carrier's search and answers its numbers with the provider", async () => {
    const before = w.sims.twilio.requests.length;
    const res = await search('?country=us&areaCode=415&contains=555&capabilities=voice,sms&provider=twilio&limit=3');
    expect(res.statusCode, res.body).toBe(200);
    const sent = w.sims.twilio.requests.slice(before).find((r) => r.method === 'GET' && r.path.endsWith('/AvailablePhoneNumbers/US/Local.json'));
    expect(sent?.query).toMatchObject({ AreaCode: '415', Contains: '555', VoiceEnabled: 'true', SmsEnabled: 'true', PageSize: '3' });
    const { numbers } = res.json<{ numbers: Record<string, unknown>[] }>();
    expect(numbers).toHaveLength(3);
    for (const n of numbers) {
      expect(n).toMatchObject({ country: 'US', region: 'CA', locality: 'San Francisco', provider: 'twilio', tollFree: false, monthlyCostUsd: 1.15 });
      expect(n.phoneNumber).toMatch(/^\+1415555\d{4}$/);
      expect(n.capabilities).toEqual(expect.arrayContaining(['voice', 'sms']));
    }
  });

  it('searches toll-free numbers when tollFree=true', async () => {
    const before = w.sims.twilio.requests.length;
    const res = await search('?country=US&tollFree=true&provider=twilio');
    expect(res.statusCode, res.body).toBe(200);
    expect(w.sims.twilio.requests.slice(before).some((r) => r.path.endsWith('/AvailablePhoneNumbers/US/TollFree.json'))).toBe(true);
    const { numbers } = res.json<{ numbers: { tollFree: boolean; phoneNumber: string; region: string | null }[] }>();
    expect(numbers.length).toBeGreaterThan(0);
    expect(numbers.every((n) => n.tollFree && /^\+18(00|88)/.test(n.phoneNumber) && n.region === null)).toBe(true);
  });

  it('passes filters to Telnyx and Vonage in their own wire formats', async () => {
    const t0 = w.sims.telnyx.requests.length;
    const telnyx = await search('?country=GB&areaCode=20&provider=telnyx&limit=2');
    expect(telnyx.statusCode, telnyx.body).toBe(200);
    expect(telnyx.json().numbers).toHaveLength(2);
    expect(telnyx.json().numbers[0]).toMatchObject({ provider: 'telnyx', country: 'GB', locality: 'London' });
    const sentTelnyx = w.sims.telnyx.requests.slice(t0).find((r) => r.path.endsWith('/available_phone_numbers'));
    expect(sentTelnyx?.query).toMatchObject({ 'filter[country_code]': 'GB', 'filter[national_destination_code]': '20', 'filter[limit]': '2' });

    const v0 = w.sims.vonage.requests.length;
    const vonage = await search('?country=US&contains=212&provider=vonage&limit=2');
    expect(vonage.statusCode, vonage.body).toBe(200);
    expect(vonage.json().numbers.length).toBeGreaterThan(0);
    expect(vonage.json().numbers.every((n: { provider: string; phoneNumber: string }) => n.provider === 'vonage' && n.phoneNumber.includes('212'))).toBe(true);
    expect(w.sims.vonage.requests.slice(v0).some((r) => r.path.includes('/number/search') && r.query.country === 'US')).toBe(true);
  });

  it('without provider asks every configured carrier and merges them round-robin up to limit', async () => {
    const counts = { twilio: w.sims.twilio.requests.length, telnyx: w.sims.telnyx.requests.length, vonage: w.sims.vonage.requests.length };
    const res = await search('?country=US&areaCode=212&limit=5');
    expect(res.statusCode, res.body).toBe(200);
    const found = res.json<{ numbers: { provider: string; phoneNumber: string }[] }>().numbers;
    expect(found.map((n) => n.provider)).toEqual(['twilio', 'telnyx', 'vonage', 'twilio', 'telnyx']);
    // Each carrier's simulator sells its own slice of the fictional range: no number is offered twice.
    expect(new Set(found.map((n) => n.phoneNumber)).size).toBe(found.length);
    expect(w.sims.twilio.requests.length).toBeGreaterThan(counts.twilio);
    expect(w.sims.telnyx.requests.length).toBeGreaterThan(counts.telnyx);
    expect(w.sims.vonage.requests.length).toBeGreaterThan(counts.vonage);
  });

  it('without provider leaves out a failing carrier while another answers', async () => {
    w.sims.telnyx.failNext(10, 401);
    try {
      const res = await search('?country=US&areaCode=312&limit=4');
      expect(res.statusCode, res.body).toBe(200);
      const providers = new Set(res.json<{ numbers: { provider: string }[] }>().numbers.map((n) => n.provider));
      expect(providers).toEqual(new Set(['twilio', 'vonage']));
    } finally {
      w.sims.telnyx.failNext(0, 200);
    }
  });

  it('answers 503 when the carrier is unavailable and 502 when it refuses', async () => {
    w.sims.twilio.failNext(10, 503);
    const unavailable = await search('?country=US&provider=twilio');
    w.sims.twilio.failNext(0, 200);
    expect(unavailable.statusCode, unavailable.body).toBe(503);
    expect(unavailable.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/unavailable$/), detail: expect.stringContaining('Twilio') });
    expect(unavailable.headers['retry-after']).toBe('5');

    w.sims.twilio.failNext(1, 403);
    const refused = await search('?country=US&provider=twilio');
    w.sims.twilio.failNext(0, 200);
    expect(refused.statusCode, refused.body).toBe(502);
    expect(refused.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/carrier-error$/), detail: expect.stringMatching(/Twilio refused to search numbers \(HTTP 403/) });
  });

  it('answers 400 naming country when it is missing', async () => {
    const res = await search('?areaCode=415');
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([expect.objectContaining({ field: 'country' })]);
  });

  it.each([
    ['country=XX', 'country'],
    ['country=USA', 'country'],
    ['country=US&areaCode=4a5', 'areaCode'],
    ['country=US&contains=5-5', 'contains'],
    ['country=US&capabilities=voice,fax', 'capabilities'],
    ['country=US&provider=bandwidth', 'provider'],
    ['country=US&tollFree=maybe', 'tollFree'],
    ['country=US&limit=0', 'limit'],
    ['country=US&limit=51', 'limit'],
    ['country=US&limit=ten', 'limit'],
    ['country=US&color=blue', 'color'],
  ])('answers 422 naming the field for %s', async (query, field) => {
    const before = w.sims.twilio.requests.length;
    const res = await search(`?${query}`);
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toContain(field);
    expect(w.sims.twilio.requests.length).toBe(before);
  });

  it('answers 10 numbers by default', async () => {
    const res = await search('?country=US&provider=twilio');
    expect(res.json().numbers).toHaveLength(10);
  });

  it('answers 401 without credentials and 403 without telephony:read', async () => {
    expect((await search('?country=US', '')).statusCode).toBe(401);
    const noRead = await w.tenant.mintKey({ scopes: ['telephony:write', 'agents:read'] });
    const res = await search('?country=US', noRead.key);
    expect(res.statusCode).toBe(403);
    expect(res.json().detail).toMatch(/telephony:read/);
  });
});
