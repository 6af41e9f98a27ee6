/**
 * Bad input to every operation of the OpenAPI document, and to the carriers' callbacks: wrong
 * path and query values, bodies of every wrong type at each documented field (and one level
 * below), other media types, an oversized body. Whatever comes in, the answer is never a 5xx,
 * and every refusal of the API is an RFC 7807 problem (DEVELOPERS.md: bad input gets a clear
 * problem, never a 500). Operations come from the app's own document, so a route added later
 * is walked too.
 */
import { hash } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import { users } from '../../src/db/schema/users.js';
import { call, createAgentFor, createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { TELEPHONY_ENV, agentWithNumber, postTwilio, voiceParams } from '../telephony-fixtures.js';

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
type Schema = { properties?: Record<string, Schema>; $ref?: string };
interface Op {
  method: Method;
  path: string;
  params: { name: string; in: string }[];
  body: Schema | null;
  userOnly: boolean;
}

let t: TestApp;
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let tenant: TestTenant;
let ownerToken: string;
let agentId: string;
let ops: Op[];
let components: Record<string, Schema>;

beforeAll(async () => {
  iso = await isolatedDatabase();
  t = await createTestApp({ database: iso.database, env: { RATE_LIMIT_ANONYMOUS: '1000000' } });
  tenant = await createTenant(t.database, { rateLimitPerMinute: 1_000_000 });
  const password = 'walk-bad-input-0451';
  const email = `owner-${newId('usr').slice(4, 16)}@walk.example`;
  await t.database.db.insert(users).values({ id: newId('usr'), tenantId: tenant.tenantId, email, firstName: 'Walk', lastName: 'Owner', passwordHash: await hash(password, { algorithm: 2 }), role: 'TenantOwner', canManageApiKeys: true, canViewBilling: true, canDeleteConversations: true });
  ownerToken = (await call(t.app, null, 'POST', '/api/v1/auth/login', { email, password })).json<{ accessToken: string }>().accessToken;
  agentId = (await createAgentFor(t.app, tenant.key)).id;
  const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{ paths: Record<string, Record<string, Record<string, unknown>>>; components?: { schemas?: Record<string, Schema> } }>();
  components = doc.components?.schemas ?? {};
  ops = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(byMethod)) {
      const content = (op.requestBody as { content?: Record<string, { schema?: Schema }> } | undefined)?.content;
      ops.push({
        method: m.toUpperCase() as Method,
        path,
        params: (op.parameters as Op['params'] | undefined) ?? [],
        body: content ? (content['application/json']?.schema ?? {}) : null,
        userOnly: typeof op['x-required-right'] === 'string',
      });
    }
  }
}, 60_000);
afterAll(async () => {
  await t?.close();
  await iso?.drop();
});

function resolve(s: Schema | undefined): Schema {
  if (!s) return {};
  if (s.$ref) return resolve(components[s.$ref.split('/').pop()!]);
  return s;
}

const WRONG: unknown[] = [null, 123, -1, 1e308, 'x', '', [], {}, true, 'a'.repeat(20_000), [1, 'x', null], { a: { b: { c: [] } } }];
const PATH_VALUES = ['0', '-1', '1.5', '99999999999999999999', 'agt_', 'x'.repeat(40), '%E2%82%AC', 'conv_00000000000000000000000000', "'", '..'];
const QUERY_VALUES = ['', '-1', 'abc', '1e309', '99999999999999999999', '0', '1.5', 'true', '[object Object]', "'; drop table agents; --", '2026-13-45', 'x'.repeat(3000)];

/** Bodies a JSON route does not take: other media types, a form, nothing at all. */
const CONTENT_TYPES: [string, string][] = [
  ['text/plain', 'x'],
  ['application/x-www-form-urlencoded', 'a=b&c=%ZZ'],
  ['multipart/form-data; boundary=x', '--x\r\n\r\n--x--'],
  ['application/json; charset=latin1', '{}'],
  ['application/json', ''],
];
/** Carrier callbacks (public, not in the OpenAPI document): sandbox mode, so no signature is required. */
const CARRIER_CALLBACKS: [Method, string][] = [
  ['POST', '/api/v1/webhooks/twilio/voice'],
  ['POST', '/api/v1/webhooks/twilio/status'],
  ['POST', '/api/v1/webhooks/twilio/sms'],
  ['POST', '/api/v1/webhooks/twilio/whatsapp'],
  ['POST', '/api/v1/webhooks/telegram/message'],
  ['POST', '/api/v1/webhooks/telnyx/voice'],
  ['GET', '/api/v1/webhooks/vonage/voice/answer'],
  ['POST', '/api/v1/webhooks/vonage/voice/answer'],
  ['GET', '/api/v1/webhooks/vonage/voice/event'],
  ['POST', '/api/v1/webhooks/vonage/voice/event'],
];
const CARRIER_BODIES: [string, string][] = [
  ['application/x-www-form-urlencoded', ''],
  ['application/x-www-form-urlencoded', 'CallSid=&From=&To='],
  ['application/x-www-form-urlencoded', 'CallSid=CA1&From=%00&To=%2B1'],
  ['application/x-www-form-urlencoded', `CallSid=${'C'.repeat(70_000)}`],
  ['application/json', '{"data":{"event_type":"call.initiated","payload":null}}'],
  ['application/json', '{"update_id":"x","message":{"chat":null}}'],
  ['application/json', '{"uuid":1,"status":[],"conversation_uuid":{}}'],
  ['application/json', '[]'],
  ['application/json', 'null'],
];

function url(op: Op, overrides: Record<string, string> = {}, query = ''): string {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => overrides[name] ?? (name === 'agentId' ? agentId : name === 'versionNumber' ? '1' : 'agt_00000000000000000000000000'));
  return path + query;
}

function bodies(op: Op): unknown[] {
  const out: unknown[] = ['not json', '[]', 'null', '42', '"s"', '{}', '{"a":'];
  const schema = resolve(op.body ?? undefined);
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    for (const w of WRONG) out.push({ [name]: w });
    const inner = resolve(prop);
    for (const [sub] of Object.entries(inner.properties ?? {})) for (const w of WRONG) out.push({ [name]: { [sub]: w } });
  }
  return out;
}

describe('bad input to every operation', () => {
  it('never answers 5xx, and answers every refusal as a problem', async () => {
    const failures: string[] = [];
    let sent = 0;
    const statuses = new Map<number, number>();
    async function send(op: Op, target: string, body?: unknown, headers: Record<string, string> = {}) {
      sent++;
      const res = await call(t.app, op.userOnly ? ownerToken : tenant.key, op.method, target, body, headers);
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
      const where = `${op.method} ${target.slice(0, 120)} ${JSON.stringify(headers)} ${body === undefined ? '' : JSON.stringify(body).slice(0, 120)}`;
      if (res.statusCode >= 500) failures.push(`${res.statusCode} ${where}: ${res.body.slice(0, 300)}`);
      else if (res.statusCode >= 400 && !String(res.headers['content-type']).startsWith('application/problem+json')) failures.push(`${res.statusCode} not a problem: ${where}: ${res.body.slice(0, 200)}`);
    }
    for (const op of ops) {
      for (const p of op.params.filter((x) => x.in === 'path')) for (const v of PATH_VALUES) await send(op, url(op, { [p.name]: v }), op.body ? {} : undefined);
      for (const p of op.params.filter((x) => x.in === 'query')) {
        for (const v of QUERY_VALUES) await send(op, url(op, {}, `?${p.name}=${encodeURIComponent(v)}`), op.body ? {} : undefined);
        await send(op, url(op, {}, `?${p.name}=1&${p.name}=2`), op.body ? {} : undefined);
      }
      if (!op.body) continue;
      for (const b of bodies(op)) await send(op, url(op), b);
      for (const [type, b] of CONTENT_TYPES) await send(op, url(op), b, { 'content-type': type });
      await send(op, url(op), JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }));
    }
    for (const [method, path] of CARRIER_CALLBACKS) {
      const op: Op = { method, path, params: [], body: null, userOnly: false };
      for (const [type, b] of [...CONTENT_TYPES, ...CARRIER_BODIES]) await send(op, path, method === 'GET' ? undefined : b, method === 'GET' ? {} : { 'content-type': type });
      for (const q of ['?', '?uuid=', '?uuid=%00', '?from=%ZZ', `?to=${'9'.repeat(3000)}`, '?conversation_uuid=x&uuid=1&uuid=2']) await send(op, path + q);
    }
    expect(failures).toEqual([]);
    // The walk reached each layer: the body parser (415, 413), the schemas (400) and the input guards and services (422, 404).
    expect(ops.length).toBeGreaterThan(60);
    expect(sent).toBeGreaterThan(3000);
    for (const status of [400, 404, 413, 415, 422]) expect(statuses.get(status) ?? 0, `answers ${status}`).toBeGreaterThan(0);
  }, 600_000);
});

describe('bad input in signed Twilio callbacks', () => {
  it('never answers 5xx, whatever the form holds', async () => {
    // A database of its own: these requests count in 127.0.0.1's anonymous rate-limit window, which lives in the database.
    const db = await isolatedDatabase();
    const tt = await createTestApp({ database: db.database, env: { ...TELEPHONY_ENV, RATE_LIMIT_ANONYMOUS: '1000000' } });
    try {
      const owner = await createTenant(tt.database);
      const { phoneNumber } = await agentWithNumber(tt.app, tt.database, owner);
      const base = voiceParams(phoneNumber);
      const forms: Record<string, string>[] = [{}];
      for (const name of [...Object.keys(base), 'CallDuration', 'RecordingUrl', 'SequenceNumber', 'Timestamp', 'Body', 'NumMedia', 'MessageSid', 'ParentCallSid', 'CallerName', 'StirVerstat']) {
        for (const v of ['', '\u0000', '\ud800', 'x'.repeat(10_000), '-1', '1e309', 'null', '+', '<Say>', '%ZZ', 'совершенно']) forms.push({ ...base, [name]: v });
        const { [name]: _dropped, ...without } = base;
        forms.push(without);
      }
      const failures: string[] = [];
      const statuses = new Map<number, number>();
      for (const path of ['/api/v1/webhooks/twilio/voice', '/api/v1/webhooks/twilio/status', '/api/v1/webhooks/twilio/sms', '/api/v1/webhooks/twilio/whatsapp']) {
        for (const form of forms) {
          const res = await postTwilio(tt.app, path, form);
          statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
          if (res.statusCode >= 500) failures.push(`${res.statusCode} ${path} ${JSON.stringify(form).slice(0, 200)}: ${res.body.slice(0, 300)}`);
        }
      }
      expect(failures).toEqual([]);
      // Calls answered (TwiML, or 204 to a status callback) and forms refused (422) were both walked.
      for (const status of [200, 204, 422]) expect(statuses.get(status) ?? 0, `answers ${status}`).toBeGreaterThan(0);
    } finally {
      await tt.close();
      await db.drop();
    }
  }, 300_000);
});
