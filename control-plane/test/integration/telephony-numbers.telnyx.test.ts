import { describe, expect, it } from 'vitest';
import { TelnyxNumbersSimulator } from '../../src/modules/telephony/providers/simulators.js';
import { TELNYX_TEXML_APP_NAME, TelnyxNumbers } from '../../src/modules/telephony/providers/telnyx/numbers.js';
import { telephonyNumbersContract } from '../contracts/telephony-numbers.contract.js';

telephonyNumbersContract(async () => {
  const sim = await TelnyxNumbersSimulator.start();
  const provider = new TelnyxNumbers({ apiKey: sim.apiKey, baseUrl: sim.apiBaseUrl });
  return {
    name: 'telnyx',
    sim,
    provider,
    expectedAuth: { scheme: 'bearer', token: sim.apiKey },
    rotateCredentials: () => sim.setCredentials({ apiKey: 'KEY-rotated' }),
    hasLocality: true,
    expectStoredRouting: (request) => {
      // Telnyx routes by connection: the number is on the TeXML application whose voice URL is ours.
      const app = sim.texmlApps.find((a) => a.voice_url === request.voiceWebhookUrl);
      expect(app).toMatchObject({ friendly_name: TELNYX_TEXML_APP_NAME, voice_method: 'post', status_callback: request.statusWebhookUrl });
      expect(sim.numbers.get(request.phoneNumber)?.state).toMatchObject({ connectionId: app!.id, customerReference: 'Front desk' });
    },
    close: () => sim.close(),
  };
});

describe('Telnyx numbers on the wire', () => {
  it('searches with filter[...] parameters, features repeated', async () => {
    const sim = await TelnyxNumbersSimulator.start();
    try {
      const provider = new TelnyxNumbers({ apiKey: sim.apiKey, baseUrl: sim.apiBaseUrl });
      await provider.searchNumbers({ country: 'us', areaCode: '415', contains: '01', capabilities: ['voice', 'sms'], tollFree: true, limit: 4 });
      expect(sim.requests[0]).toMatchObject({
        method: 'GET',
        path: '/v2/available_phone_numbers',
        query: { 'filter[country_code]': 'US', 'filter[phone_number_type]': 'toll_free', 'filter[national_destination_code]': '415', 'filter[phone_number][contains]': '01', 'filter[features][]': ['voice', 'sms'], 'filter[limit]': '4' },
      });
    } finally {
      await sim.close();
    }
  });

  it('orders onto the configured connection and returns the phone-number id, not the order entry id', async () => {
    const sim = await TelnyxNumbersSimulator.start();
    try {
      const provider = new TelnyxNumbers({ apiKey: sim.apiKey, baseUrl: sim.apiBaseUrl, connectionId: '1684641123236054244' });
      const bought = await provider.provisionNumber({ phoneNumber: '+14155550131', voiceWebhookUrl: 'https://v.example.com/webhooks/telnyx/voice' });
      const state = sim.numbers.get('+14155550131')!.state;
      expect(bought.providerSid).toBe(state.id);
      expect(bought.providerSid).not.toBe(state.orderEntryId);
      expect(sim.requestsTo('POST', /^\/v2\/number_orders$/)[0]!.body).toEqual({ phone_numbers: [{ phone_number: '+14155550131' }], connection_id: '1684641123236054244' });
      expect(sim.requestsTo('POST', /texml_applications/)).toHaveLength(0);
      expect(state.connectionId).toBe('1684641123236054244');
    } finally {
      await sim.close();
    }
  });

  it('creates the TeXML application once and reuses it', async () => {
    const sim = await TelnyxNumbersSimulator.start();
    try {
      const voiceWebhookUrl = 'https://v.example.com/webhooks/telnyx/voice';
      await new TelnyxNumbers({ apiKey: sim.apiKey, baseUrl: sim.apiBaseUrl }).provisionNumber({ phoneNumber: '+14155550131', voiceWebhookUrl });
      // A second process (fresh adapter) finds the application by name instead of creating another.
      await new TelnyxNumbers({ apiKey: sim.apiKey, baseUrl: sim.apiBaseUrl }).provisionNumber({ phoneNumber: '+14155550132', voiceWebhookUrl });
      expect(sim.texmlApps).toHaveLength(1);
      expect(sim.numbers.get('+14155550132')!.state.connectionId).toBe(sim.texmlApps[0]!.id);
    } finally {
      await sim.close();
    }
  });

  it('releases a number stored under its order entry id through its canonical id', async () => {
    const sim = await TelnyxNumbersSimulator.start();
    try {
      const provider = new TelnyxNumbers({ apiKey: sim.apiKey, baseUrl: sim.apiBaseUrl });
      const seeded = sim.seedOwned('+14155550133');
      await provider.releaseNumber({ providerSid: seeded.orderEntryId, phoneNumber: '+14155550133' });
      expect(sim.numbers.get('+14155550133')).toBeUndefined();
      expect(sim.requestsTo('DELETE', /^\/v2\/phone_numbers\//).map((r) => [r.path, r.status])).toEqual([
        [`/v2/phone_numbers/${seeded.orderEntryId}`, 404],
        [`/v2/phone_numbers/${seeded.id}`, 200],
      ]);
    } finally {
      await sim.close();
    }
  });
});
