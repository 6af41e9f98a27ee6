import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ControlPlaneMetrics } from '../../src/modules/metrics/control-plane-metrics.js';
import { createTelephonyProviders } from '../../src/modules/telephony/providers/index.js';
import { startCarrierSimulators } from '../../src/modules/telephony/providers/simulators.js';
import type { CarrierSimulators } from '../../src/modules/telephony/providers/simulators.js';
import { createTestApp } from '../helpers.js';
import type { TestApp } from '../helpers.js';
import { ADMIN_TOKEN, adminCall, createAdminApp } from '../admin-fixtures.js';
import { errorCount } from '../contracts/telephony-numbers.contract.js';

const PATH = '/api/v1/telephony/debug/validate-connection';
const TIMEOUT_MS = 1500;
let t: TestApp;
let sims: CarrierSimulators;
let metrics: ControlPlaneMetrics;
let admin: FastifyInstance;

beforeAll(async () => {
  t = await createTestApp();
  sims = await startCarrierSimulators();
  metrics = new ControlPlaneMetrics();
  // Vonage left without credentials: the "not configured" case.
  const config = { ...sims.config, vonage: { ...sims.config.vonage, apiKey: undefined, apiSecret: undefined }, timeoutMs: TIMEOUT_MS };
  admin = await createAdminApp(t.database, { APP_ENV: 'production' }, { telephony: createTelephonyProviders(config, { errors: metrics.telephonyApiErrors, retry: { baseDelayMs: 5 } }) });
});
afterAll(async () => {
  await admin?.close();
  await sims?.close();
  await t?.close();
});
beforeEach(() => {
  for (const sim of [sims.twilio, sims.telnyx, sims.vonage]) {
    sim.requests.length = 0;
    sim.hang = false;
    sim.failNext(0, 500);
  }
  sims.twilio.setCredentials({ accountSid: sims.config.twilio.accountSid!, authToken: sims.config.twilio.authToken! });
});

describe('POST /api/v1/telephony/debug/validate-connection', () => {
  it('succeeds after one authenticated pricing lookup, for the default country US', async () => {
    const res = await adminCall(admin, 'POST', PATH, { provider: 'Twilio' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ provider: 'Twilio', success: true, probeCountry: 'US' });
    expect(res.json().detail).toMatch(/^Authenticated: Twilio answered a pricing lookup for US/);
    expect(sims.twilio.requests.map((r) => r.path)).toEqual(['/v1/PhoneNumbers/Countries/US', '/v2/Voice/Countries/US']);
    for (const r of sims.twilio.requests) expect(r.auth).toEqual({ scheme: 'basic', user: sims.config.twilio.accountSid, password: sims.config.twilio.authToken });
  });

  it('takes the provider in any case and the country in lower case', async () => {
    const res = await adminCall(admin, 'POST', PATH, { provider: 'tElNyX', countryCode: 'gb' });
    expect(res.json()).toMatchObject({ provider: 'Telnyx', success: true, probeCountry: 'GB' });
    expect(sims.telnyx.requests[0]!.query['filter[country_code]']).toBe('GB');
  });

  it('names the system error when the carrier cannot be reached', async () => {
    // A port that was just free: nothing listens there.
    const { createServer } = await import('node:net');
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const dead = `http://127.0.0.1:${port}`;
    const config = { ...sims.config, twilio: { ...sims.config.twilio, apiBaseUrl: dead, pricingBaseUrl: dead }, timeoutMs: TIMEOUT_MS };
    const offline = await createAdminApp(t.database, { APP_ENV: 'production' }, { telephony: createTelephonyProviders(config, { errors: new ControlPlaneMetrics().telephonyApiErrors, retry: { baseDelayMs: 5 } }) });
    try {
      const res = await adminCall(offline, 'POST', PATH, { provider: 'twilio' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ provider: 'Twilio', success: false, detail: 'Network error: Twilio could not be reached (ECONNREFUSED).' });
    } finally {
      await offline.close();
    }
  });

  it('names the variables to set for a carrier without configuration, calling nobody', async () => {
    const res = await adminCall(admin, 'POST', PATH, { provider: 'vonage' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ provider: 'Vonage', success: false, probeCountry: 'US', detail: 'Vonage is not configured: set VONAGE_API_KEY and VONAGE_API_SECRET.' });
    expect(sims.vonage.requests).toHaveLength(0);
  });

  it('reports Unauthorized (401) when the carrier refuses the credentials', async () => {
    sims.twilio.setCredentials({ accountSid: sims.config.twilio.accountSid!, authToken: 'rotated-elsewhere' });
    const res = await adminCall(admin, 'POST', PATH, { provider: 'Twilio' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ success: false, detail: 'Unauthorized (401): Twilio refused the credentials.' });
    expect(sims.twilio.requests.map((r) => r.status)).toEqual([401]);
  });

  it('reports Forbidden (403)', async () => {
    sims.telnyx.failNext(1, 403);
    const res = await adminCall(admin, 'POST', PATH, { provider: 'Telnyx' });
    expect(res.json()).toMatchObject({ provider: 'Telnyx', success: false, detail: expect.stringMatching(/^Forbidden \(403\)/) });
  });

  it('reports an HTTP timeout after the configured time, and counts it', async () => {
    sims.telnyx.hang = true;
    const before = await errorCount(metrics, 'telnyx', 'getPricing');
    const started = Date.now();
    const res = await adminCall(admin, 'POST', PATH, { provider: 'Telnyx' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(res.json()).toMatchObject({ success: false, detail: `HTTP timeout: Telnyx did not answer the pricing lookup, timed out after ${TIMEOUT_MS} ms.` });
    expect(await errorCount(metrics, 'telnyx', 'getPricing')).toBe(before + 1);
  });

  it('does not retry a failing carrier: one lookup, its status in the detail', async () => {
    sims.twilio.failNext(5, 503);
    const res = await adminCall(admin, 'POST', PATH, { provider: 'Twilio' });
    expect(res.json()).toMatchObject({ success: false, detail: 'Twilio answered the pricing lookup with HTTP 503.' });
    expect(sims.twilio.requests).toHaveLength(1);
  });

  it('answers 422 naming the field for a bad provider or country, 400 for malformed JSON', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ provider: 'Plivo' }, 'provider'],
      [{ provider: 'Twilio', countryCode: 'USA' }, 'countryCode'],
      [{ provider: 'Twilio', countryCode: 1 }, 'countryCode'],
      [{ provider: 'Twilio', extra: true }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const res = await adminCall(admin, 'POST', PATH, body);
      expect(res.statusCode, field).toBe(422);
      expect(res.json().errors.map((e: { field: string }) => e.field), field).toEqual([field]);
    }
    const missing = await adminCall(admin, 'POST', PATH, {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toEqual([{ field: 'provider', message: 'is required' }]);
    const malformed = await admin.inject({ method: 'POST', url: PATH, headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' }, payload: '{"provider":' });
    expect(malformed.statusCode).toBe(400);
    expect(sims.twilio.requests).toHaveLength(0);
  });

  it('answers 401 without a token and 403 with another one, before calling any carrier', async () => {
    expect((await adminCall(admin, 'POST', PATH, { provider: 'Twilio' }, null)).statusCode).toBe(401);
    expect((await adminCall(admin, 'POST', PATH, { provider: 'Twilio' }, 'svc_live_not-the-admin-token-000000000000')).statusCode).toBe(403);
    expect(sims.twilio.requests).toHaveLength(0);
  });
});
