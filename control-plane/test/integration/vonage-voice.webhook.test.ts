import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, newId, signVonageWebhook } from '@vap/shared';
import { buildApp } from '../../src/app.js';
import type { Database } from '../../src/db/database.js';
import { openDatabase } from '../../src/db/database.js';
import type { CallHandling } from '../../src/modules/conversations/call-handlers.js';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { PhoneNumberRepository } from '../../src/modules/telephony/phone-number-repository.js';
import { VONAGE_SANDBOX_SECRET_FILE, loadVonageSignatureSecret } from '../../src/modules/telephony/vonage-credentials.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, createAgentFor, call, createTenant, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { prepareCall, prepareRequest, startCalls } from './calls.fixtures.js';

const SECRET = 'vonage-test-signature-secret-000000';
const GATEWAY = 'wss://gw.example.com';

let app: FastifyInstance;
let database: Database;
let calls: CallHandling;
let bus: InProcessBus;
let tenant: TestTenant;
let agentId: string;
/** Our number as Vonage sends it: E.164 digits without `+`. */
let ourNumber: string;
const logs: Record<string, unknown>[] = [];

beforeAll(async () => {
  const config = testConfig({ MEDIA_GATEWAY_PUBLIC_URL: GATEWAY, VONAGE_SIGNATURE_SECRET: SECRET, LOG_LEVEL: 'info' });
  database = openDatabase(config.databaseUrl!, 5);
  bus = new InProcessBus();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) logs.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  app = await buildApp(config, { database, bus, secrets: new SecretBox(TEST_SECRET_KEY), logger: pino({ level: 'info' }, sink) });
  await app.ready();
  calls = startCalls(database.db, bus);
  tenant = await createTenant(database);
  const agent = (await createAgentFor(app, tenant.key)) as { id: string };
  expect((await call(app, tenant.key, 'POST', `/api/v1/agents/${agent.id}/activate`)).statusCode).toBe(200);
  agentId = agent.id;
  ourNumber = `4420${String(randomInt(0, 10_000_000)).padStart(7, '0')}`;
  await new PhoneNumberRepository(database.db).insert({ id: newId('num'), tenantId: tenant.tenantId, phoneNumber: `+${ourNumber}`, country: 'GB', provider: 'vonage', assignedAgentId: agentId });
});
afterAll(async () => {
  await calls.close();
  await app.close();
  await database.close();
});

function answerBody(to: string, overrides: Record<string, string> = {}): Record<string, string> {
  const uuid = randomUUID();
  return { to, from: '447700900000', uuid, conversation_uuid: `CON-${uuid}`, ...overrides };
}

/** POSTs `body` (an object is serialised; a string is sent as is) signed like Vonage, unless `token` overrides it (null: no header). */
function post(path: string, body: Record<string, unknown> | string, opts: { token?: string | null; secret?: string; iat?: number } = {}): Promise<LightMyRequestResponse> {
  const raw = typeof body === 'string' ? body : JSON.stringify(body);
  const token = opts.token === undefined ? signVonageWebhook({ secret: opts.secret ?? SECRET, rawBody: raw, ...(opts.iat !== undefined ? { iat: opts.iat } : {}) }) : opts.token;
  return app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', ...(token !== null ? { authorization: `Bearer ${token}` } : {}) }, payload: raw });
}

function routedLogs(callSid: string): Record<string, unknown>[] {
  return logs.filter((l) => l['callSid'] === callSid && typeof l['msg'] === 'string' && /inbound call|Vonage call/.test(l['msg']));
}

type Ncco = { action: string; text?: string; endpoint?: { type: string; uri: string; 'content-type': string; headers: Record<string, string>; authorization?: { type: string } }[] }[];

function expectApology(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.json()).toEqual([{ action: 'talk', text: APOLOGY_TEXT }]);
}

function expectForbidden(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(403);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status: 403, traceId: res.headers['x-request-id'] });
}

describe('Vonage answer webhook', () => {
  it('answers a signed POST for a number with an active agent with an NCCO connecting the gateway WebSocket at 16 kHz', async () => {
    const body = answerBody(ourNumber);
    const res = await post('/webhooks/vonage/voice/answer', body);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const ncco = res.json() as Ncco;
    expect(ncco).toHaveLength(1);
    expect(ncco[0]!.action).toBe('connect');
    expect(ncco[0]!.endpoint).toEqual([
      {
        type: 'websocket',
        uri: `${GATEWAY}/api/v1/webhooks/vonage/media-stream?agentId=${agentId}&tenantId=${tenant.tenantId}`,
        'content-type': 'audio/l16;rate=16000',
        // Numbers normalised to E.164; the carrier call id is Vonage's uuid.
        headers: { agentId, tenantId: tenant.tenantId, callSid: body.uuid, from: '+447700900000', to: `+${ourNumber}`, direction: 'inbound' },
        // Vonage then signs the WebSocket upgrade with its webhook JWT, which the gateway checks.
        authorization: { type: 'vonage' },
      },
    ]);
    expect(routedLogs(body.uuid!).map((l) => l['msg'])).toEqual(['inbound call routed to agent']);
  });

  it('answers a signed GET with query parameters (Vonage default) and the /api/v1 alias', async () => {
    const body = answerBody(ourNumber);
    const query = new URLSearchParams(body).toString();
    for (const path of ['/webhooks/vonage/voice/answer', '/api/v1/webhooks/vonage/voice/answer']) {
      const res = await app.inject({ method: 'GET', url: `${path}?${query}`, headers: { authorization: `Bearer ${signVonageWebhook({ secret: SECRET })}` } });
      expect(res.statusCode).toBe(200);
      expect((res.json() as Ncco)[0]!.endpoint![0]!.headers.callSid).toBe(body.uuid);
    }
    const unsigned = await app.inject({ method: 'GET', url: `/webhooks/vonage/voice/answer?${query}` });
    expectForbidden(unsigned);
  });

  it('refuses a missing token, another secret, a tampered body (payload_hash), an expired or future iat with 403 and routes nothing', async () => {
    const body = answerBody(ourNumber);
    const raw = JSON.stringify(body);
    const now = Math.floor(Date.now() / 1000);
    expectForbidden(await post('/webhooks/vonage/voice/answer', raw, { token: null }));
    expectForbidden(await post('/webhooks/vonage/voice/answer', raw, { token: 'not.a.jwt' }));
    expectForbidden(await post('/webhooks/vonage/voice/answer', raw, { secret: 'another-secret' }));
    const signedOther = signVonageWebhook({ secret: SECRET, rawBody: JSON.stringify({ ...body, to: '447700900999' }) });
    expectForbidden(await post('/webhooks/vonage/voice/answer', raw, { token: signedOther }));
    expectForbidden(await post('/webhooks/vonage/voice/answer', raw, { iat: now - 3600 }));
    expectForbidden(await post('/webhooks/vonage/voice/answer', raw, { iat: now + 3600 }));
    expect(routedLogs(body.uuid!)).toEqual([]);
    expect(logs.filter((l) => l['msg'] === 'Vonage webhook rejected').map((l) => l['reason'])).toEqual(
      expect.arrayContaining(['missing-token', 'malformed', 'bad-signature', 'payload-hash-mismatch', 'stale']),
    );
  });

  it('apologises for an unknown number, and when uuid or to is missing', async () => {
    expectApology(await post('/webhooks/vonage/voice/answer', answerBody('447700900123')));
    const { uuid: _u, ...noUuid } = answerBody(ourNumber);
    expectApology(await post('/webhooks/vonage/voice/answer', noUuid));
    const { to: _t, ...noTo } = answerBody(ourNumber);
    expectApology(await post('/webhooks/vonage/voice/answer', noTo));
  });

  it('answers a signed body that is not a JSON object with a 422 naming it, never a 5xx', async () => {
    const res = await post('/webhooks/vonage/voice/answer', '["x"]');
    expect(res.statusCode).toBe(422);
    expect(res.json()).toMatchObject({ errors: [{ field: 'body' }] });
    expect((await post('/webhooks/vonage/voice/answer', '{"to":')).statusCode).toBe(422);
  });

  it('keeps the rest of the API on its own JSON parser', async () => {
    const res = await call(app, tenant.key, 'POST', '/api/v1/agents', '{"name":');
    expect(res.statusCode).toBe(400);
  });
});

describe('Vonage event webhook', () => {
  function event(uuid: string, status: string, extra: Record<string, string> = {}): Record<string, string> {
    return { from: '447700900000', to: ourNumber, uuid, conversation_uuid: `CON-${uuid}`, status, direction: 'inbound', timestamp: new Date().toISOString(), ...extra };
  }

  it('records a final status of a call whose stream never connected: logged, 204, nothing to close', async () => {
    const uuid = randomUUID();
    const res = await post('/webhooks/vonage/voice/event', event(uuid, 'completed', { duration: '3' }));
    expect(res.statusCode).toBe(204);
    expect(res.body).toBe('');
    const line = logs.find((l) => l['callSid'] === uuid);
    expect(line).toMatchObject({ msg: 'Vonage call ended before its media stream connected', callStatus: 'completed', durationSec: '3' });
    expect(line!['conversationId']).toBeUndefined();
  });

  it('records a status against the conversation the gateway stored under the call id', async () => {
    const uuid = randomUUID();
    const prepared = await prepareCall(bus, prepareRequest(tenant.tenantId, agentId, { provider: 'vonage', callSid: uuid, from: '+447700900000', to: `+${ourNumber}` }));
    const res = await post('/api/v1/webhooks/vonage/voice/event', event(uuid, 'answered'));
    expect(res.statusCode).toBe(204);
    expect(logs.find((l) => l['callSid'] === uuid)).toMatchObject({ msg: 'Vonage call status', callStatus: 'answered', conversationId: prepared.conversationId, conversationStatus: 'in_progress' });
    // The conversation is the gateway's to close: the carrier's event changes nothing stored.
    const got = await call(app, tenant.key, 'GET', `/api/v1/conversations/${prepared.conversationId}`);
    expect(got.json()).toMatchObject({ status: 'in_progress' });
  });

  it('accepts a call-flow error report (reason, no status) and a machine-detection event (call_uuid)', async () => {
    expect((await post('/webhooks/vonage/voice/event', { reason: 'Syntax error in NCCO', conversation_uuid: 'CON-x', timestamp: new Date().toISOString() })).statusCode).toBe(204);
    const uuid = randomUUID();
    expect((await post('/webhooks/vonage/voice/event', { call_uuid: uuid, status: 'human' })).statusCode).toBe(204);
    expect(logs.find((l) => l['callSid'] === uuid)).toMatchObject({ callStatus: 'human' });
  });

  it('answers 422 naming the field for a body without status or with a non-string one', async () => {
    const none = await post('/webhooks/vonage/voice/event', { uuid: randomUUID() });
    expect(none.statusCode).toBe(422);
    expect(none.json()).toMatchObject({ errors: [{ field: 'status' }] });
    const numeric = await post('/webhooks/vonage/voice/event', { uuid: randomUUID(), status: 5 });
    expect(numeric.json()).toMatchObject({ errors: [{ field: 'status' }] });
  });

  it('refuses unsigned, mis-signed and stale events with 403 and records nothing', async () => {
    const uuid = randomUUID();
    const body = event(uuid, 'completed');
    expectForbidden(await post('/webhooks/vonage/voice/event', body, { token: null }));
    expectForbidden(await post('/webhooks/vonage/voice/event', body, { secret: `x${randomBytes(4).toString('hex')}` }));
    expectForbidden(await post('/webhooks/vonage/voice/event', body, { iat: Math.floor(Date.now() / 1000) - 600 }));
    expect(logs.filter((l) => l['callSid'] === uuid)).toEqual([]);
  });
});

describe('without a signature secret', () => {
  it('refuses every Vonage webhook (fail closed)', async () => {
    const config = testConfig({ APP_ENV: 'production', MEDIA_GATEWAY_PUBLIC_URL: GATEWAY });
    const bare = await buildApp(config, { database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger: pino({ level: 'silent' }) });
    try {
      const raw = JSON.stringify(answerBody(ourNumber));
      const res = await bare.inject({ method: 'POST', url: '/webhooks/vonage/voice/answer', headers: { 'content-type': 'application/json', authorization: `Bearer ${signVonageWebhook({ secret: SECRET, rawBody: raw })}` }, payload: raw });
      expectForbidden(res);
    } finally {
      await bare.close();
    }
  });
});

describe('the Vonage signature secret', () => {
  it('is generated once into DATA_DIR in development sandbox mode (0600), and absent in production without VONAGE_SIGNATURE_SECRET', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'vonage-secret-'));
    try {
      const first = loadVonageSignatureSecret(undefined, dir, 'development');
      expect(first).toMatchObject({ sandbox: true, file: path.join(dir, VONAGE_SANDBOX_SECRET_FILE) });
      expect(statSync(first.file!).mode & 0o777).toBe(0o600);
      expect(readFileSync(first.file!, 'utf8').trim()).toBe(first.secret);
      expect(first.secret).toMatch(/^[0-9a-f]{48}$/);
      expect(loadVonageSignatureSecret(undefined, dir, 'development').secret).toBe(first.secret);
      expect(loadVonageSignatureSecret(SECRET, dir, 'production')).toEqual({ secret: SECRET, sandbox: false });
      expect(loadVonageSignatureSecret(undefined, dir, 'production')).toEqual({ secret: undefined, sandbox: false });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
