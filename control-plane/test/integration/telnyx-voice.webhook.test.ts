import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus, checkTelnyxSignature, telnyxPublicKeyBase64, telnyxSignatureHeaders } from '@vap/shared';
import { loadConfig } from '../../src/config.js';
import { startControlPlane } from '../../src/control-plane.js';
import { APOLOGY_TEXT } from '../../src/modules/telephony/inbound-answer.js';
import { TELNYX_SANDBOX_KEY_FILE, loadTelnyxWebhookKey, telnyxSandboxSigningKey } from '../../src/modules/telephony/telnyx-credentials.js';
import { createTenant, createTestApp, TEST_SECRET_KEY } from '../helpers.js';
import { SecretBox } from '../../src/secret-box.js';
import { StreamTokens } from '../../src/modules/telephony/stream-token.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { TELEPHONY_ENV, agentWithNumber, freshDatabases, randomE164 } from '../telephony-fixtures.js';
import { child, parseXml } from '../xml.js';

// reference/telephony-telnyx.md §5: the verified test vector.
const VECTOR = {
  publicKey: 'ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=',
  timestamp: '1700000000',
  body: '{"data":{"event_type":"call.initiated","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0","occurred_at":"2023-11-14T22:13:20.000000Z","payload":{"call_control_id":"v3:abc","direction":"incoming","from":"+15551230001","to":"+15551230002","state":"parked"},"record_type":"event"},"meta":{"attempt":1,"delivered_to":"https://example.com/telnyx"}}',
  signature: '74hP1LqGvD0tX0H/Feh7rOD7GOt+1UNjcJa15LfDkQK4R45SVAOL1Hn/fVTCt5mbsy4E8ypMpkKrST6X4IlNCw==',
};

const telnyxKey: KeyObject = generateKeyPairSync('ed25519').privateKey;
const databases = freshDatabases('vap_telnyx');
let t: TestApp;
let tenant: TestTenant;
let routed: { agentId: string; phoneNumber: string };

beforeAll(async () => {
  t = await createTestApp({ env: { ...TELEPHONY_ENV, TELNYX_PUBLIC_KEY: telnyxPublicKeyBase64(telnyxKey) } });
  tenant = await createTenant(t.database);
  routed = await agentWithNumber(t.app, t.database, tenant, { provider: 'telnyx' });
});
afterAll(async () => {
  await t.close();
  await databases.dropAll();
});

/** TeXML voice-webhook parameters (reference §1: Twilio's names, CallSid = the Call Control id). */
function texmlParams(to: string, overrides: Record<string, string> = {}): Record<string, string> {
  const id = Math.random().toString(36).slice(2);
  return { AccountSid: 'a0c3e5b2-0d1e-4b0f-9a51-3b7c0f6d2e11', CallSid: `v3:${id}`, From: '+15551230001', To: to, CallStatus: 'ringing', Direction: 'inbound', ...overrides };
}

/** POSTs `body` as Telnyx would, signed with `key` at `nowSec`; `headers` override or (undefined) drop the signature headers. */
function postTelnyx(
  app: FastifyInstance,
  body: string,
  opts: { path?: string; key?: KeyObject; nowSec?: number; contentType?: string; headers?: Record<string, string | undefined> } = {},
): Promise<LightMyRequestResponse> {
  const signed = telnyxSignatureHeaders(opts.key ?? telnyxKey, body, opts.nowSec);
  const headers: Record<string, string> = { 'content-type': opts.contentType ?? 'application/x-www-form-urlencoded' };
  for (const [name, value] of Object.entries({ ...signed, ...opts.headers })) if (value !== undefined) headers[name] = value;
  return app.inject({ method: 'POST', url: opts.path ?? '/webhooks/telnyx/voice', headers, payload: body });
}

const form = (params: Record<string, string>): string => new URLSearchParams(params).toString();

function expectApology(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(200);
  expect(String(res.headers['content-type'])).toMatch(/^text\/xml/);
  const response = parseXml(res.body);
  expect(response.children.map((c) => c.name)).toEqual(['Say', 'Hangup']);
  expect(child(response, 'Say').text).toBe(APOLOGY_TEXT);
}

function expectForbidden(res: LightMyRequestResponse): void {
  expect(res.statusCode).toBe(403);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.json()).toMatchObject({ status: 403, traceId: res.headers['x-request-id'] });
  expect(res.body).not.toContain('<Response>');
}

describe('POST /webhooks/telnyx/voice', () => {
  it('answers a signed TeXML call to a Telnyx number with a bidirectional RTP PCMU stream to the gateway', async () => {
    const params = texmlParams(routed.phoneNumber);
    const res = await postTelnyx(t.app, form(params));
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/xml/);
    const stream = child(child(parseXml(res.body), 'Connect'), 'Stream');
    expect(stream.attrs).toMatchObject({
      url: `wss://gw.example.com/api/v1/webhooks/telnyx/media-stream?agentId=${routed.agentId}&tenantId=${tenant.tenantId}`,
      name: `call-${params.CallSid}`,
      bidirectionalMode: 'rtp',
      bidirectionalCodec: 'PCMU',
      bidirectionalSamplingRate: '8000',
    });
    expect(stream.children.map((p) => [p.name, p.attrs.name, p.attrs.value])).toEqual([
      ['Parameter', 'agentId', routed.agentId],
      ['Parameter', 'tenantId', tenant.tenantId],
      ['Parameter', 'callSid', params.CallSid],
      ['Parameter', 'from', params.From],
      ['Parameter', 'to', routed.phoneNumber],
      ['Parameter', 'direction', 'inbound'],
      ['Parameter', 'streamToken', expect.stringMatching(/^st1\.\d+\.[\w-]{43}$/)],
    ]);
    // The token vouches for exactly this call: call.prepare takes the stream with it (stream-token.ts).
    const token = stream.children.find((p) => p.attrs.name === 'streamToken')!.attrs.value;
    const tokens = new StreamTokens(new SecretBox(TEST_SECRET_KEY));
    const ids = { provider: 'telnyx', tenantId: tenant.tenantId, agentId: routed.agentId, callSid: params.CallSid! };
    expect(tokens.check(token, ids)).toBeNull();
    expect(tokens.check(token, { ...ids, callSid: 'v3:another-call' })).toBe('mismatch');
    // Stream URLs end up in logs: the token travels only as a parameter.
    expect(stream.attrs.url).not.toContain('st1.');
  });

  it('serves the same handler under /api/v1 without a bearer credential', async () => {
    const res = await postTelnyx(t.app, form(texmlParams(routed.phoneNumber)), { path: '/api/v1/webhooks/telnyx/voice' });
    expect(res.statusCode).toBe(200);
    expect(child(child(parseXml(res.body), 'Connect'), 'Stream').attrs.url).toContain('/telnyx/media-stream?agentId=');
  });

  it('tolerates a JSON body: Twilio-named fields, or a Call Control call.initiated envelope', async () => {
    const flat = await postTelnyx(t.app, JSON.stringify(texmlParams(routed.phoneNumber, { CallSid: 'v3:flat' })), { contentType: 'application/json' });
    expect(child(child(parseXml(flat.body), 'Connect'), 'Stream').attrs.name).toBe('call-v3:flat');
    const envelope = VECTOR.body.replace('+15551230002', routed.phoneNumber).replace('v3:abc', 'v3:envelope');
    const res = await postTelnyx(t.app, envelope, { contentType: 'application/json; charset=utf-8' });
    const stream = child(child(parseXml(res.body), 'Connect'), 'Stream');
    expect(stream.children.find((p) => p.attrs.name === 'callSid')?.attrs.value).toBe('v3:envelope');
    expect(stream.children.find((p) => p.attrs.name === 'from')?.attrs.value).toBe('+15551230001');
  });

  it('refuses a tampered body, another key, a mangled signature and a signature over another timestamp with 403', async () => {
    const body = form(texmlParams(routed.phoneNumber));
    const signed = telnyxSignatureHeaders(telnyxKey, body);
    expectForbidden(await postTelnyx(t.app, form(texmlParams(routed.phoneNumber)), { headers: signed }));
    expectForbidden(await postTelnyx(t.app, body, { key: generateKeyPairSync('ed25519').privateKey }));
    // One base64 character changed (a signature that already starts with 'A' gets 'B': 1 run in 64 once passed the same signature back).
    const signature = signed['telnyx-signature-ed25519']!;
    expectForbidden(await postTelnyx(t.app, body, { headers: { 'telnyx-signature-ed25519': `${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}` } }));
    expectForbidden(await postTelnyx(t.app, body, { headers: { 'telnyx-timestamp': String(Number(signed['telnyx-timestamp']) + 1) } }));
  });

  it('refuses a timestamp more than 300 s old or ahead with 403, even when correctly signed', async () => {
    const now = Math.floor(Date.now() / 1000);
    expectForbidden(await postTelnyx(t.app, form(texmlParams(routed.phoneNumber)), { nowSec: now - 330 }));
    expectForbidden(await postTelnyx(t.app, form(texmlParams(routed.phoneNumber)), { nowSec: now + 330 }));
    expect((await postTelnyx(t.app, form(texmlParams(routed.phoneNumber)), { nowSec: now - 200 })).statusCode).toBe(200);
  });

  it('refuses a request without the signature or the timestamp header with 403', async () => {
    const body = form(texmlParams(routed.phoneNumber));
    expectForbidden(await postTelnyx(t.app, body, { headers: { 'telnyx-signature-ed25519': undefined } }));
    expectForbidden(await postTelnyx(t.app, body, { headers: { 'telnyx-timestamp': undefined } }));
    expectForbidden(await postTelnyx(t.app, '', { headers: { 'telnyx-signature-ed25519': undefined, 'telnyx-timestamp': undefined } }));
  });

  it('apologises and hangs up for an unknown number, a number of another carrier, and a call without To', async () => {
    expectApology(await postTelnyx(t.app, form(texmlParams(randomE164()))));
    const twilioNumber = await agentWithNumber(t.app, t.database, tenant, { provider: 'twilio' });
    expectApology(await postTelnyx(t.app, form(texmlParams(twilioNumber.phoneNumber))));
    const { To: _to, ...noTo } = texmlParams(routed.phoneNumber);
    expectApology(await postTelnyx(t.app, form(noTo)));
    expectApology(await postTelnyx(t.app, '{"not json', { contentType: 'application/json' }));
  });

  it('apologises for a number without an agent or with an inactive agent', async () => {
    const unassigned = await agentWithNumber(t.app, t.database, tenant, { assign: false, provider: 'telnyx' });
    expectApology(await postTelnyx(t.app, form(texmlParams(unassigned.phoneNumber))));
    const inactive = await agentWithNumber(t.app, t.database, tenant, { status: 'inactive', provider: 'telnyx' });
    expectApology(await postTelnyx(t.app, form(texmlParams(inactive.phoneNumber))));
  });
});

describe('the reference test vector', () => {
  it('is accepted at its own time with the portal key, and refused 301 s later', async () => {
    let nowMs = Number(VECTOR.timestamp) * 1000 + 5_000;
    const app = await createTestApp({ database: t.database, env: { ...TELEPHONY_ENV, TELNYX_PUBLIC_KEY: VECTOR.publicKey }, now: () => nowMs });
    try {
      const headers = { 'telnyx-signature-ed25519': VECTOR.signature, 'telnyx-timestamp': VECTOR.timestamp };
      // Signed, so routed: +15551230002 has no Telnyx number in the tests, hence the apology (not a 403).
      expectApology(await postTelnyx(app.app, VECTOR.body, { contentType: 'application/json', headers }));
      nowMs = (Number(VECTOR.timestamp) + 301) * 1000;
      expectForbidden(await postTelnyx(app.app, VECTOR.body, { contentType: 'application/json', headers }));
    } finally {
      await app.close();
    }
  });
});

describe('the Telnyx public key', () => {
  it('is refused by the configuration unless it is base64 of 32 bytes', async () => {
    await expect(createTestApp({ database: t.database, env: { TELNYX_PUBLIC_KEY: 'c2hvcnQ=' } })).rejects.toThrow(/TELNYX_PUBLIC_KEY/);
  });

  it('refuses every Telnyx webhook when none is configured (fail closed)', async () => {
    const bare = await createTestApp({ database: t.database });
    try {
      expectForbidden(await postTelnyx(bare.app, form(texmlParams(routed.phoneNumber))));
    } finally {
      await bare.close();
    }
  });

  it('is a key pair generated once into DATA_DIR in development sandbox mode, and absent in production', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'telnyx-key-'));
    try {
      const first = loadTelnyxWebhookKey(undefined, dir, 'development');
      expect(first).toMatchObject({ sandbox: true, file: path.join(dir, TELNYX_SANDBOX_KEY_FILE) });
      expect(statSync(first.file!).mode & 0o777).toBe(0o600);
      expect(readFileSync(first.file!, 'utf8').trim()).toMatch(/^[0-9a-f]{64}$/);
      expect(loadTelnyxWebhookKey(undefined, dir, 'development').publicKey).toBe(first.publicKey);
      expect(loadTelnyxWebhookKey(VECTOR.publicKey, dir, 'development')).toEqual({ publicKey: VECTOR.publicKey, sandbox: false });
      expect(loadTelnyxWebhookKey(undefined, dir, 'production')).toEqual({ publicKey: undefined, sandbox: false });
      // What the sandbox call command signs with verifies against the key the control plane uses.
      const { key } = telnyxSandboxSigningKey(dir);
      const headers = telnyxSignatureHeaders(key, 'To=%2B1555');
      expect(checkTelnyxSignature({ publicKey: first.publicKey, signature: headers['telnyx-signature-ed25519'], timestamp: headers['telnyx-timestamp'], rawBody: 'To=%2B1555' })).toBeNull();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lets a development control plane without a key take calls signed with the sandbox key in DATA_DIR', async () => {
    // A whole control plane (it loads the key at start) on a database of its own.
    const databaseUrl = await databases.create();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'telnyx-sandbox-'));
    const bus = new InProcessBus();
    const cp = await startControlPlane(
      loadConfig({ DATABASE_URL: databaseUrl, HOST: '127.0.0.1', PORT: '0', ADMIN_PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: dataDir, WEBHOOK_DISPATCHER: 'false', MEDIA_GATEWAY_PUBLIC_URL: 'wss://gw.example.com' }),
      { bus, logger: pino({ level: 'silent' }) },
    );
    try {
      expect(cp.telnyx).toMatchObject({ sandbox: true, file: path.join(dataDir, TELNYX_SANDBOX_KEY_FILE) });
      const post = (key: KeyObject) => {
        const body = form(texmlParams(randomE164()));
        return fetch(`${cp.url}/webhooks/telnyx/voice`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...telnyxSignatureHeaders(key, body) }, body });
      };
      const ok = await post(telnyxSandboxSigningKey(dataDir).key);
      // Accepted (no Telnyx number exists there, hence the apology), where another key gets 403.
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain(`<Say>${APOLOGY_TEXT}</Say>`);
      expect((await post(telnyxKey)).status).toBe(403);
    } finally {
      await cp.close();
      await bus.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
