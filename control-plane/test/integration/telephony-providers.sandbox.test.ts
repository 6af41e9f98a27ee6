import { describe, expect, it } from 'vitest';
import { ControlPlaneMetrics } from '../../src/modules/metrics/control-plane-metrics.js';
import { startTelephonyProviders } from '../../src/modules/telephony/providers/index.js';
import { TwilioNumbersSimulator } from '../../src/modules/telephony/providers/simulators.js';
import { testConfig } from '../helpers.js';

const errors = () => new ControlPlaneMetrics().telephonyApiErrors;

describe('startTelephonyProviders', () => {
  it('runs carriers without credentials on simulators in development, and they answer', async () => {
    const t = await startTelephonyProviders(testConfig({ APP_ENV: 'development' }), { errors: errors() });
    try {
      for (const name of ['twilio', 'telnyx', 'vonage'] as const) {
        expect(t.status[name]).toMatchObject({ configured: true, simulated: true, baseUrl: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+/) });
        expect((await t.providers[name].searchNumbers({ country: 'US', areaCode: '415', limit: 2 })).length).toBe(2);
      }
      expect(t.describe()).toMatch(/^twilio: simulated \(http:\/\/127\.0\.0\.1:\d+\), telnyx: simulated/);
    } finally {
      await t.close();
    }
  });

  it('leaves carriers without credentials unconfigured in production, naming the variables', async () => {
    const t = await startTelephonyProviders(testConfig({ APP_ENV: 'production', ADMIN_TOKEN: 'x'.repeat(16), TWILIO_AUTH_TOKEN: 'tok', PUBLIC_URL: 'https://voice.example.com' }), { errors: errors() });
    expect(t.status).toEqual({
      twilio: { configured: false, missing: ['TWILIO_ACCOUNT_SID'] },
      telnyx: { configured: false, missing: ['TELNYX_API_KEY'] },
      vonage: { configured: false, missing: ['VONAGE_API_KEY', 'VONAGE_API_SECRET'] },
    });
    await expect(t.providers.telnyx.getPricing('US')).rejects.toMatchObject({ slug: 'unavailable', message: 'Telnyx is not configured: set TELNYX_API_KEY.' });
    await t.close();
  });

  it('uses configured credentials and base URLs as they are, even in development', async () => {
    const sim = await TwilioNumbersSimulator.start();
    try {
      const t = await startTelephonyProviders(testConfig({ APP_ENV: 'development', TWILIO_ACCOUNT_SID: sim.accountSid, TWILIO_AUTH_TOKEN: sim.authToken, TWILIO_API_BASE_URL: sim.url, TWILIO_PRICING_BASE_URL: `${sim.url}/` }), { errors: errors() });
      try {
        expect(t.status.twilio).toEqual({ configured: true, simulated: false, baseUrl: sim.url });
        expect(t.status.telnyx).toMatchObject({ simulated: true });
        expect((await t.providers.twilio.getPricing('US')).localNumber.monthlyCostUsd).toBe(1.15);
        expect(sim.requests.map((r) => r.path)).toEqual(['/v1/PhoneNumbers/Countries/US', '/v2/Voice/Countries/US']);
      } finally {
        await t.close();
      }
    } finally {
      await sim.close();
    }
  });
});
