import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { computeTwilioSignature } from '@vap/shared';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { GatewayIntake } from '../../src/modules/telephony/gateway-intake.js';
import { InboundCallRouter } from '../../src/modules/telephony/inbound-call-router.js';
import { PhoneNumberRepository } from '../../src/modules/telephony/phone-number-repository.js';
import { createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { TELEPHONY_ENV, agentWithNumber, postTwilio, randomE164, voiceParams } from '../telephony-fixtures.js';
import { child, parseXml } from '../xml.js';

let t: TestApp;
let tenant: TestTenant;
let routed: { agentId: string; phoneNumber: string };

beforeAll(async () => {
  t = await createTestApp({ env: { ...TELEPHONY_ENV } });
  tenant = await createTenant(t.database);
  routed = await agentWithNumber(t.app, t.database, tenant);
});
afterAll(async () => t.close());

function expectApology(res: { statusCode: number; headers: Record<string, unknown>; body: string }): void {
  expect(res.statusCode).toBe(200);
  expect(String(res.headers['content-type'])).toMatch(/^text\/xml/);
  const response = parseXml(res.body);
  expect(response.name).toBe('Response');
  expect(response.children.map((c) => c.name)).toEqual(['Say', 'Hangup']);
  expect(child(response, 'Say').text).toBe(APOLOGY_TEXT);
}

describe('POST /webhooks/twilio/voice', () => {
  it('answers a signed call to a number with an active agent with a TwiML stream to the gateway', async () => {
    const params = voiceParams(routed.phoneNumber);
    const res = await postTwilio(t.app, '/webhooks/twilio/voice', params);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/xml/);
    expect(res.body.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    const response = parseXml(res.body);
    expect(response.name).toBe('Response');
    const stream = child(child(response, 'Connect'), 'Stream');
    expect(stream.attrs.url).toBe(`wss://gw.example.com/api/v1/webhooks/twilio/media-stream?agentId=${routed.agentId}&tenantId=${tenant.tenantId}`);
    expect(stream.attrs.name).toBe(`call-${params.CallSid}`);
    expect(stream.children.map((p) => [p.name, p.attrs.name, p.attrs.value])).toEqual([
      ['Parameter', 'agentId', routed.agentId],
      ['Parameter', 'tenantId', tenant.tenantId],
      ['Parameter', 'callSid', params.CallSid],
      ['Parameter', 'from', params.From],
      ['Parameter', 'to', routed.phoneNumber],
      ['Parameter', 'direction', 'inbound'],
    ]);
    // The raw URL attribute is escaped: Twilio reads XML, not HTML.
    expect(res.body).toContain(`?agentId=${routed.agentId}&amp;tenantId=${tenant.tenantId}`);
  });

  it('serves the same handler under /api/v1 without a bearer credential', async () => {
    const params = voiceParams(routed.phoneNumber);
    const res = await postTwilio(t.app, '/api/v1/webhooks/twilio/voice', params);
    expect(res.statusCode).toBe(200);
    expect(child(child(parseXml(res.body), 'Connect'), 'Stream').attrs.url).toContain(`agentId=${routed.agentId}`);
  });

  it('XML-escapes every value it echoes from the carrier', async () => {
    const params = voiceParams(routed.phoneNumber, { From: `client:O'Brien <&> "x"`, CallSid: 'CA&<>"' });
    const res = await postTwilio(t.app, '/webhooks/twilio/voice', params);
    const stream = child(child(parseXml(res.body), 'Connect'), 'Stream');
    expect(stream.attrs.name).toBe('call-CA&<>"');
    expect(stream.children.find((p) => p.attrs.name === 'from')?.attrs.value).toBe(`client:O'Brien <&> "x"`);
  });

  it('refuses a request without a signature with 403', async () => {
    const res = await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(routed.phoneNumber), { signature: null });
    expect(res.statusCode).toBe(403);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 403, traceId: res.headers['x-request-id'] });
  });

  it('refuses a tampered body, a wrong token and a signature of another path with 403', async () => {
    const params = voiceParams(routed.phoneNumber);
    const signature = computeTwilioSignature(TELEPHONY_ENV.TWILIO_AUTH_TOKEN, `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/voice`, params);
    const tampered = await postTwilio(t.app, '/webhooks/twilio/voice', { ...params, To: randomE164() }, { signature });
    expect(tampered.statusCode).toBe(403);
    const wrongToken = await postTwilio(t.app, '/webhooks/twilio/voice', params, { token: 'another_token_000000000000000000' });
    expect(wrongToken.statusCode).toBe(403);
    const otherPath = await postTwilio(t.app, '/webhooks/twilio/voice', params, { signedUrl: `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/status` });
    expect(otherPath.statusCode).toBe(403);
  });

  it('checks the signature over the public URL, not the address the request reached behind a proxy', async () => {
    const params = voiceParams(routed.phoneNumber);
    // The request arrives at control-plane.internal:3000 (see postTwilio) but Twilio signed the public URL.
    const viaProxy = await postTwilio(t.app, '/webhooks/twilio/voice', params, { host: 'control-plane.internal:3000' });
    expect(viaProxy.statusCode).toBe(200);
    expect(viaProxy.body).toContain('<Connect>');
    // A signature over the internal URL is what a spoofer next to the service could make: refused.
    const internal = await postTwilio(t.app, '/webhooks/twilio/voice', params, { signedUrl: 'http://control-plane.internal:3000/webhooks/twilio/voice' });
    expect(internal.statusCode).toBe(403);
  });

  it('includes the query string as received in the signed URL', async () => {
    const params = voiceParams(routed.phoneNumber);
    const ok = await postTwilio(t.app, '/webhooks/twilio/voice?region=eu&x=1', params);
    expect(ok.statusCode).toBe(200);
    const without = await postTwilio(t.app, '/webhooks/twilio/voice?region=eu&x=1', params, { signedUrl: `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/voice` });
    expect(without.statusCode).toBe(403);
  });

  it('refuses a JSON body (Twilio voice webhooks are form-encoded) with 403', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/webhooks/twilio/voice',
      headers: { 'content-type': 'application/json', 'x-twilio-signature': computeTwilioSignature(TELEPHONY_ENV.TWILIO_AUTH_TOKEN, `${TELEPHONY_ENV.PUBLIC_URL}/webhooks/twilio/voice`) },
      payload: JSON.stringify({ To: routed.phoneNumber }),
    });
    expect(res.statusCode).toBe(403);
  });

  it('apologises and hangs up for an unknown number', async () => {
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(randomE164())));
  });

  it('apologises and hangs up for a number without an agent, or with a draft or inactive agent', async () => {
    const unassigned = await agentWithNumber(t.app, t.database, tenant, { assign: false });
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(unassigned.phoneNumber)));
    const draft = await agentWithNumber(t.app, t.database, tenant, { status: 'draft' });
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(draft.phoneNumber)));
    const inactive = await agentWithNumber(t.app, t.database, tenant, { status: 'inactive' });
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(inactive.phoneNumber)));
  });

  it('apologises when the carrier leaves out To or CallSid', async () => {
    const { To: _to, ...noTo } = voiceParams(routed.phoneNumber);
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', noTo));
    const { CallSid: _sid, ...noSid } = voiceParams(routed.phoneNumber);
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', noSid));
  });

  it('takes a called number with a NUL or an unpaired surrogate for an unknown number (no lookup, no error)', async () => {
    expectApology(await postTwilio(t.app, '/webhooks/twilio/voice', voiceParams(`${routed.phoneNumber}\u0000`)));
    const router = new InboundCallRouter({ numbers: new PhoneNumberRepository(t.database.db), mediaGatewayPublicUrl: 'wss://gw.example.com', gateways: new GatewayIntake(t.database.db) });
    for (const to of ['+1555\u0000', '+1555\ud800']) {
      const decision = await router.answer('twilio', { callSid: `CA${'1'.repeat(32)}`, from: '+14155550100', to });
      expect(decision.outcome, JSON.stringify(to)).toBe('unknown-number');
    }
  });

  it('still refuses form bodies elsewhere: the form parser is scoped to the webhooks', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/api/v1/agents', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${tenant.key}` }, payload: 'name=x' });
    expect(res.statusCode).toBe(415);
  });
});

describe('POST /webhooks/twilio/status', () => {
  const status = (sid: string) => ({ AccountSid: 'AC00000000000000000000000000000001', CallSid: sid, CallStatus: 'completed', CallDuration: '42', SequenceNumber: '3' });

  it('accepts a signed status callback with 204', async () => {
    const res = await postTwilio(t.app, '/webhooks/twilio/status', status('CA1'));
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    expect((await postTwilio(t.app, '/api/v1/webhooks/twilio/status', status('CA2'))).statusCode).toBe(204);
  });

  it('refuses an unsigned or mis-signed status callback with 403', async () => {
    expect((await postTwilio(t.app, '/webhooks/twilio/status', status('CA3'), { signature: null })).statusCode).toBe(403);
    expect((await postTwilio(t.app, '/webhooks/twilio/status', status('CA4'), { signature: 'AAAAAAAAAAAAAAAAAAAAAAAAAAA=' })).statusCode).toBe(403);
  });
});

describe('without a Twilio auth token', () => {
  it('refuses every webhook (fail closed)', async () => {
    const bare = await createTestApp({ database: t.database });
    try {
      const res = await postTwilio(bare.app, '/webhooks/twilio/voice', voiceParams(routed.phoneNumber));
      expect(res.statusCode).toBe(403);
    } finally {
      await bare.close();
    }
  });
});
