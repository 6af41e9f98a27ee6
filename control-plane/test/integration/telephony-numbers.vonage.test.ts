import { describe, expect, it } from 'vitest';
import { VONAGE_SIM_APPLICATION_ID, VonageNumbersSimulator } from '../../src/modules/telephony/providers/simulators.js';
import { TelephonyProviderError } from '../../src/modules/telephony/providers/types.js';
import { VonageNumbers } from '../../src/modules/telephony/providers/vonage/numbers.js';
import { telephonyNumbersContract } from '../contracts/telephony-numbers.contract.js';

const adapter = (sim: VonageNumbersSimulator, applicationId: string | null = VONAGE_SIM_APPLICATION_ID) => new VonageNumbers({ apiKey: sim.apiKey, apiSecret: sim.apiSecret, baseUrl: sim.url, applicationsBaseUrl: sim.url, applicationId: applicationId ?? undefined });

telephonyNumbersContract(async () => {
  const sim = await VonageNumbersSimulator.start();
  return {
    name: 'vonage',
    sim,
    provider: adapter(sim),
    expectedAuth: { scheme: 'basic', user: sim.apiKey, password: sim.apiSecret },
    rotateCredentials: () => sim.setCredentials({ apiKey: sim.apiKey, apiSecret: 'rotated-secret' }),
    hasLocality: false,
    expectStoredRouting: (request) => {
      // Voice goes to the application, whose answer_url (and event_url) are now ours, signed; status and SMS URLs sit on the number.
      expect(sim.numbers.get(request.phoneNumber)?.state).toEqual({ appId: VONAGE_SIM_APPLICATION_ID, voiceCallbackType: 'app', voiceCallbackValue: VONAGE_SIM_APPLICATION_ID, voiceStatusCallback: request.statusWebhookUrl, moHttpUrl: request.smsWebhookUrl });
      const voice = sim.applications.get(VONAGE_SIM_APPLICATION_ID)!.capabilities.voice!;
      expect(voice.webhooks!.answer_url).toEqual({ address: request.voiceWebhookUrl, http_method: 'POST' });
      if (request.statusWebhookUrl) expect(voice.webhooks!.event_url).toEqual({ address: request.statusWebhookUrl, http_method: 'POST' });
      expect(voice.signed_callbacks).toBe(true);
    },
    close: () => sim.close(),
  };
});

describe('Vonage numbers on the wire', () => {
  it('searches by area code as an MSISDN prefix, with features, and applies `contains` itself', async () => {
    const sim = await VonageNumbersSimulator.start();
    try {
      const found = await adapter(sim).searchNumbers({ country: 'US', areaCode: '415', contains: '0165', capabilities: ['voice', 'sms'], limit: 5 });
      expect(found.map((n) => n.phoneNumber)).toEqual(['+14155550165']);
      expect(sim.requests[0]).toMatchObject({ method: 'GET', path: '/number/search', query: { country: 'US', type: 'landline', pattern: '1415', search_pattern: '0', features: 'VOICE,SMS', size: '100' } });
    } finally {
      await sim.close();
    }
  });

  it('buys, links and cancels with form POSTs carrying country and msisdn', async () => {
    const sim = await VonageNumbersSimulator.start();
    try {
      const bought = await adapter(sim).provisionNumber({ phoneNumber: '+442079460210', voiceWebhookUrl: 'https://v.example.com/webhooks/vonage/voice/answer', smsWebhookUrl: 'https://v.example.com/sms' });
      expect(bought).toMatchObject({ providerSid: '442079460210', country: 'GB', capabilities: ['voice', 'sms'] });
      expect(sim.requestsTo('POST', /^\/number\/buy$/)[0]!.body).toEqual({ country: 'GB', msisdn: '442079460210' });
      expect(sim.requestsTo('POST', /^\/number\/update$/)[0]!.body).toEqual({ country: 'GB', msisdn: '442079460210', app_id: VONAGE_SIM_APPLICATION_ID, voiceCallbackType: 'app', voiceCallbackValue: VONAGE_SIM_APPLICATION_ID, moHttpUrl: 'https://v.example.com/sms' });
      await adapter(sim).releaseNumber({ providerSid: bought.providerSid, phoneNumber: bought.phoneNumber });
      expect(sim.requestsTo('POST', /^\/number\/cancel$/)[0]!.body).toEqual({ country: 'GB', msisdn: '442079460210' });
    } finally {
      await sim.close();
    }
  });

  it('gives a bought number back when linking it fails, and does not buy without an application', async () => {
    const sim = await VonageNumbersSimulator.start();
    try {
      const noApp = await adapter(sim, null).provisionNumber({ phoneNumber: '+14155550161', voiceWebhookUrl: 'https://v.example.com/a' }).catch((e: unknown) => e);
      expect(noApp).toMatchObject({ code: 'rejected' });
      expect(sim.requests).toHaveLength(0);

      sim.failNext(1, 500, /^\/number\/update$/);
      const p = adapter(sim).provisionNumber({ phoneNumber: '+14155550161', voiceWebhookUrl: 'https://v.example.com/a' });
      const err = await p.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TelephonyProviderError);
      expect((err as TelephonyProviderError).status).toBeUndefined();
      const app = `/v2/applications/${VONAGE_SIM_APPLICATION_ID}`;
      expect(sim.requests.map((r) => `${r.path} ${r.status}`)).toEqual([`${app} 200`, `${app} 200`, '/number/search 200', '/number/buy 200', '/number/update 500', '/number/cancel 200']);
      expect(sim.numbers.isAvailable('+14155550161')).toBe(true);
    } finally {
      await sim.close();
    }
  });

  it("points the application's voice webhooks at the platform before buying, keeping the rest of the application, once per URL pair", async () => {
    const sim = await VonageNumbersSimulator.start();
    try {
      const app = sim.applications.get(VONAGE_SIM_APPLICATION_ID)!;
      sim.applications.set(app.id, { ...app, keys: { public_key: 'PEM' }, capabilities: { ...app.capabilities, messages: { webhooks: { inbound_url: { address: 'https://m.example.com/in', http_method: 'POST' } } } } });
      const a = adapter(sim);
      const urls = { voiceWebhookUrl: 'https://p.example.com/webhooks/vonage/voice/answer', statusWebhookUrl: 'https://p.example.com/webhooks/vonage/voice/event' };
      await a.provisionNumber({ phoneNumber: '+14155550162', ...urls });
      const put = sim.requestsTo('PUT', /^\/v2\/applications\//);
      expect(put).toHaveLength(1);
      expect(put[0]!.auth).toEqual({ scheme: 'basic', user: sim.apiKey, password: sim.apiSecret });
      expect(put[0]!.body).toMatchObject({ name: app.name, keys: { public_key: 'PEM' }, capabilities: { messages: { webhooks: { inbound_url: { address: 'https://m.example.com/in' } } }, voice: { webhooks: { answer_url: { address: urls.voiceWebhookUrl, http_method: 'POST' }, event_url: { address: urls.statusWebhookUrl, http_method: 'POST' } }, signed_callbacks: true } } });
      expect(put[0]!.body).not.toHaveProperty('_links');
      // The same URLs again: no application call at all; another adapter (a restart) reads it and finds it right.
      await a.provisionNumber({ phoneNumber: '+14155550163', ...urls });
      await adapter(sim).provisionNumber({ phoneNumber: '+14155550164', ...urls });
      expect(sim.requestsTo('GET', /^\/v2\/applications\//)).toHaveLength(2);
      expect(sim.requestsTo('PUT', /^\/v2\/applications\//)).toHaveLength(1);
    } finally {
      await sim.close();
    }
  });

  it('buys nothing when the application does not exist or cannot be updated', async () => {
    const sim = await VonageNumbersSimulator.start();
    try {
      const missing = await adapter(sim, 'no-such-app').provisionNumber({ phoneNumber: '+14155550165', voiceWebhookUrl: 'https://p.example.com/a' }).catch((e: unknown) => e);
      expect(missing).toMatchObject({ code: 'not-found', status: 404 });
      expect((missing as Error).message).toContain('Not Found');
      sim.failNext(1, 403, /^\/v2\/applications\//);
      const refused = await adapter(sim).provisionNumber({ phoneNumber: '+14155550165', voiceWebhookUrl: 'https://p.example.com/a' }).catch((e: unknown) => e);
      expect(refused).toMatchObject({ code: 'forbidden' });
      expect(sim.requestsTo('POST', /^\/number\/buy$/)).toHaveLength(0);
      expect(sim.numbers.isAvailable('+14155550165')).toBe(true);
    } finally {
      await sim.close();
    }
  });

  it('accepts the legacy api_key/api_secret parameters', async () => {
    const sim = await VonageNumbersSimulator.start();
    try {
      const res = await fetch(`${sim.url}/number/search?country=US&api_key=${sim.apiKey}&api_secret=${sim.apiSecret}`);
      expect(res.status).toBe(200);
      const wrong = await fetch(`${sim.url}/number/search?country=US&api_key=${sim.apiKey}&api_secret=nope`);
      expect(wrong.status).toBe(401);
      expect(await wrong.json()).toEqual({ 'error-code': '401', 'error-code-label': 'authentication failed' });
    } finally {
      await sim.close();
    }
  });
});
