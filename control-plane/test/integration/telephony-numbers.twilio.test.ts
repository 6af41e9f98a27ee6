import { describe, expect, it } from 'vitest';
import { TwilioNumbersSimulator } from '../../src/modules/telephony/providers/simulators.js';
import { TwilioNumbers } from '../../src/modules/telephony/providers/twilio/numbers.js';
import { telephonyNumbersContract } from '../contracts/telephony-numbers.contract.js';

telephonyNumbersContract(async () => {
  const sim = await TwilioNumbersSimulator.start();
  const provider = new TwilioNumbers({ accountSid: sim.accountSid, authToken: sim.authToken, baseUrl: sim.url, pricingBaseUrl: sim.url });
  return {
    name: 'twilio',
    sim,
    provider,
    expectedAuth: { scheme: 'basic', user: sim.accountSid, password: sim.authToken },
    rotateCredentials: () => sim.setCredentials({ accountSid: sim.accountSid, authToken: 'rotated-token' }),
    hasLocality: true,
    expectStoredRouting: (request) => {
      expect(sim.numbers.get(request.phoneNumber)?.state).toMatchObject({ friendlyName: 'Front desk', voiceUrl: request.voiceWebhookUrl, voiceMethod: 'POST', statusCallback: request.statusWebhookUrl, smsUrl: request.smsWebhookUrl });
    },
    close: () => sim.close(),
  };
});

describe('Twilio numbers on the wire', () => {
  it('searches AvailablePhoneNumbers with Twilio parameters and prices from Pricing v1', async () => {
    const sim = await TwilioNumbersSimulator.start();
    try {
      const provider = new TwilioNumbers({ accountSid: sim.accountSid, authToken: sim.authToken, baseUrl: sim.url, pricingBaseUrl: sim.url });
      await provider.searchNumbers({ country: 'US', areaCode: '415', contains: 'CALL', capabilities: ['sms'], tollFree: false, limit: 5 });
      const [search, pricing] = sim.requests;
      expect(search).toMatchObject({ method: 'GET', path: `/2010-04-01/Accounts/${sim.accountSid}/AvailablePhoneNumbers/US/Local.json`, query: { AreaCode: '415', Contains: 'CALL', SmsEnabled: 'true', PageSize: '5' } });
      expect(pricing).toMatchObject({ method: 'GET', path: '/v1/PhoneNumbers/Countries/US' });
      await provider.searchNumbers({ country: 'US', tollFree: true, limit: 1 });
      expect(sim.requests[2]!.path).toMatch(/\/AvailablePhoneNumbers\/US\/TollFree\.json$/);
    } finally {
      await sim.close();
    }
  });

  it('buys with one form POST carrying VoiceUrl, StatusCallback and SmsUrl, and releases with DELETE', async () => {
    const sim = await TwilioNumbersSimulator.start();
    try {
      const provider = new TwilioNumbers({ accountSid: sim.accountSid, authToken: sim.authToken, baseUrl: sim.url, pricingBaseUrl: sim.url });
      const bought = await provider.provisionNumber({ phoneNumber: '+14155550101', voiceWebhookUrl: 'https://v.example.com/webhooks/twilio/voice', statusWebhookUrl: 'https://v.example.com/s', smsWebhookUrl: 'https://v.example.com/sms' });
      expect(bought.providerSid).toMatch(/^PN[0-9a-f]{32}$/);
      const [post] = sim.requestsTo('POST', /IncomingPhoneNumbers\.json$/);
      expect(post!.headers['content-type']).toBe('application/x-www-form-urlencoded');
      expect(post!.body).toEqual({ PhoneNumber: '+14155550101', VoiceUrl: 'https://v.example.com/webhooks/twilio/voice', VoiceMethod: 'POST', StatusCallback: 'https://v.example.com/s', StatusCallbackMethod: 'POST', SmsUrl: 'https://v.example.com/sms', SmsMethod: 'POST' });
      await provider.releaseNumber({ providerSid: bought.providerSid, phoneNumber: bought.phoneNumber });
      expect(sim.requestsTo('DELETE', /IncomingPhoneNumbers\/PN/)[0]).toMatchObject({ path: `/2010-04-01/Accounts/${sim.accountSid}/IncomingPhoneNumbers/${bought.providerSid}.json`, status: 204 });
    } finally {
      await sim.close();
    }
  });

  it('releases a number held under another sid than the stored one', async () => {
    const sim = await TwilioNumbersSimulator.start();
    try {
      const provider = new TwilioNumbers({ accountSid: sim.accountSid, authToken: sim.authToken, baseUrl: sim.url, pricingBaseUrl: sim.url });
      const sid = sim.seedOwned('+14155550102');
      await provider.releaseNumber({ providerSid: `PN${'f'.repeat(32)}`, phoneNumber: '+14155550102' });
      expect(sim.numbers.get('+14155550102')).toBeUndefined();
      expect(sim.requestsTo('DELETE', new RegExp(sid))).toHaveLength(1);
    } finally {
      await sim.close();
    }
  });
});
