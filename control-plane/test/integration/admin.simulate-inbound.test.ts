import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, createTestApp, TEST_SECRET_KEY } from '../helpers.js';
import { SecretBox } from '../../src/secret-box.js';
import { StreamTokens } from '../../src/modules/telephony/stream-token.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { adminCall, createAdminApp } from '../admin-fixtures.js';
import { TELEPHONY_ENV, agentWithNumber, postTwilio, voiceParams } from '../telephony-fixtures.js';
import { child, parseXml } from '../xml.js';

const PATH = '/api/v1/telephony/debug/simulate-inbound';
let t: TestApp;
let tenant: TestTenant;
let admin: FastifyInstance;
let routed: { agentId: string; phoneNumber: string };

beforeAll(async () => {
  t = await createTestApp({ env: { ...TELEPHONY_ENV } });
  tenant = await createTenant(t.database);
  routed = await agentWithNumber(t.app, t.database, tenant);
  admin = await createAdminApp(t.database, { ...TELEPHONY_ENV });
});
afterAll(async () => {
  await admin.close();
  await t.close();
});

function body(overrides: Record<string, unknown> = {}) {
  return { provider: 'Twilio', agentId: routed.agentId, tenantId: tenant.tenantId, from: '+15551230001', to: routed.phoneNumber, host: 'gw.example.com', ...overrides };
}

async function countRows(table: string): Promise<number> {
  const { rows } = await t.database.pool.query<{ n: number }>(`select count(*)::int as n from ${table}`);
  return rows[0]!.n;
}

describe('POST /api/v1/telephony/debug/simulate-inbound', () => {
  it('returns byte for byte the TwiML the voice webhook answers for the same call', async () => {
    const params = voiceParams(routed.phoneNumber, { From: `client:O'Brien & co` });
    const webhook = await postTwilio(t.app, '/webhooks/twilio/voice', params);
    expect(webhook.statusCode).toBe(200);
    const res = await adminCall(admin, 'POST', PATH, body({ from: params.From, callSid: params.CallSid }));
    expect(res.statusCode).toBe(200);
    const sim = res.json();
    expect(sim.provider).toBe('Twilio');
    expect(sim.responseBody).toBe(webhook.body);
    expect(sim.mediaStreamUrl).toBe(`wss://gw.example.com/api/v1/webhooks/twilio/media-stream?agentId=${routed.agentId}&tenantId=${tenant.tenantId}`);
    expect(child(child(parseXml(sim.responseBody), 'Connect'), 'Stream').attrs.url).toBe(sim.mediaStreamUrl);
  });

  it('accepts the provider in any case and defaults the call id to SIMULATED-<uuid>', async () => {
    const res = await adminCall(admin, 'POST', PATH, body({ provider: 'tWiLiO' }));
    expect(res.statusCode).toBe(200);
    expect(res.json().provider).toBe('Twilio');
    const stream = child(child(parseXml(res.json().responseBody), 'Connect'), 'Stream');
    const callSid = stream.children.find((p) => p.attrs.name === 'callSid')?.attrs.value;
    expect(callSid).toMatch(/^SIMULATED-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  it('marks a SIP-trunk call with connectionType=sip in the URL and as a stream parameter', async () => {
    const res = await adminCall(admin, 'POST', PATH, body({ isSipTrunk: true, to: 'sip:reception@trunk.example.com' }));
    expect(res.statusCode).toBe(200);
    const sim = res.json();
    expect(new URL(sim.mediaStreamUrl).searchParams.get('connectionType')).toBe('sip');
    const stream = child(child(parseXml(sim.responseBody), 'Connect'), 'Stream');
    expect(stream.attrs.url).toBe(sim.mediaStreamUrl);
    expect(stream.children.map((p) => [p.attrs.name, p.attrs.value])).toContainEqual(['connectionType', 'sip']);
    const plain = (await adminCall(admin, 'POST', PATH, body())).json();
    expect(plain.mediaStreamUrl).not.toContain('connectionType');
    expect(plain.responseBody).not.toContain('connectionType');
  });

  it('returns TeXML for Telnyx: well-formed XML streaming to the Telnyx media-stream path', async () => {
    const res = await adminCall(admin, 'POST', PATH, body({ provider: 'telnyx', callSid: 'v3:abc', isSipTrunk: true }));
    expect(res.statusCode).toBe(200);
    const sim = res.json();
    expect(sim.provider).toBe('Telnyx');
    expect(sim.mediaStreamUrl).toBe(`wss://gw.example.com/api/v1/webhooks/telnyx/media-stream?agentId=${routed.agentId}&tenantId=${tenant.tenantId}&connectionType=sip`);
    const response = parseXml(sim.responseBody);
    const stream = child(child(response, 'Connect'), 'Stream');
    expect(stream.attrs).toMatchObject({ url: sim.mediaStreamUrl, bidirectionalMode: 'rtp', bidirectionalCodec: 'PCMU' });
    const params = Object.fromEntries(stream.children.map((p) => [p.attrs.name, p.attrs.value]));
    expect(params).toMatchObject({ callSid: 'v3:abc', connectionType: 'sip', direction: 'inbound' });
    // As the real webhook's answer: a stream token the control plane's call.prepare accepts for this call.
    const tokens = new StreamTokens(new SecretBox(TEST_SECRET_KEY));
    expect(tokens.check(params['streamToken'], { provider: 'telnyx', tenantId: tenant.tenantId, agentId: routed.agentId, callSid: 'v3:abc' })).toBeNull();
  });

  it('returns an NCCO for Vonage: a JSON array connecting a websocket endpoint', async () => {
    const res = await adminCall(admin, 'POST', PATH, body({ provider: 'VONAGE', from: '447700900000', to: '442079460000', callSid: 'aaaaaaaa-bbbb' }));
    expect(res.statusCode).toBe(200);
    const sim = res.json();
    expect(sim.provider).toBe('Vonage');
    const ncco = JSON.parse(sim.responseBody);
    expect(Array.isArray(ncco)).toBe(true);
    expect(ncco[0]).toMatchObject({ action: 'connect' });
    const endpoint = ncco[0].endpoint[0];
    expect(endpoint).toMatchObject({ type: 'websocket', uri: sim.mediaStreamUrl, 'content-type': 'audio/l16;rate=16000' });
    expect(endpoint.uri).toBe(`wss://gw.example.com/api/v1/webhooks/vonage/media-stream?agentId=${routed.agentId}&tenantId=${tenant.tenantId}`);
    expect(endpoint.headers).toEqual({ agentId: routed.agentId, tenantId: tenant.tenantId, callSid: 'aaaaaaaa-bbbb', from: '447700900000', to: '442079460000', direction: 'inbound' });
  });

  it('writes nothing to the database', async () => {
    const before = { conversations: await countRows('conversations'), numbers: await countRows('phone_numbers'), agents: await countRows('agents') };
    for (const provider of ['Twilio', 'Telnyx', 'Vonage']) expect((await adminCall(admin, 'POST', PATH, body({ provider }))).statusCode).toBe(200);
    expect({ conversations: await countRows('conversations'), numbers: await countRows('phone_numbers'), agents: await countRows('agents') }).toEqual(before);
  });

  it('answers 422 naming the field for a bad provider, host, id or flag', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ provider: 'Plivo' }, 'provider'],
      [{ host: 'https://gw.example.com/path' }, 'host'],
      [{ agentId: 'agent-7' }, 'agentId'],
      [{ tenantId: 'acme' }, 'tenantId'],
      [{ from: '' }, 'from'],
      [{ isSipTrunk: 'yes' }, 'isSipTrunk'],
      [{ extra: 1 }, 'extra'],
    ];
    for (const [overrides, field] of cases) {
      const res = await adminCall(admin, 'POST', PATH, body(overrides));
      expect(res.statusCode, field).toBe(422);
      expect(res.json().errors.map((e: { field: string }) => e.field), field).toEqual([field]);
    }
  });

  it('answers 400 naming a missing required field', async () => {
    const { host: _host, ...noHost } = body();
    const res = await adminCall(admin, 'POST', PATH, noHost);
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([{ field: 'host', message: 'is required' }]);
  });

  it('answers 403 outside Development, whatever the body', async () => {
    const prod = await createAdminApp(t.database, { APP_ENV: 'production' });
    try {
      const res = await adminCall(prod, 'POST', PATH, body());
      expect(res.statusCode).toBe(403);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.json().detail).toContain('APP_ENV=development');
      expect((await adminCall(prod, 'POST', PATH, { provider: 'nope' })).statusCode).toBe(403);
      // Authentication still comes first.
      expect((await adminCall(prod, 'POST', PATH, body(), null)).statusCode).toBe(401);
    } finally {
      await prod.close();
    }
  });
});
