import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

let t: TestApp;
let tenant: TestTenant;
let other: TestTenant;
let agentId: string;
let otherAgentId: string;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
  other = await createTenant(t.database);
  agentId = (await createAgentFor(t.app, tenant.key)).id;
  otherAgentId = (await createAgentFor(t.app, other.key)).id;
});
afterAll(async () => t.close());

const body = (over: Record<string, unknown> = {}) => ({ agentId, url: 'https://hooks.example.com/voice', events: ['SessionStarted', 'SessionEnded'], ...over });
const create = async (over: Record<string, unknown> = {}, key = tenant.key) => call(t.app, key, 'POST', '/api/v1/webhooks', body(over));
const fieldsOf = (res: { json(): { errors?: { field: string; message: string }[] } }) => (res.json().errors ?? []).map((e) => e.field);

describe('POST /api/v1/webhooks', () => {
  it('generates a secret when none is given, shows it once, and stores it sealed', async () => {
    const res = await create();
    expect(res.statusCode).toBe(201);
    const w = res.json();
    expect(w).toMatchObject({ id: expect.stringMatching(/^whk_/), agentId, url: 'https://hooks.example.com/voice', events: ['SessionStarted', 'SessionEnded'], enabled: true });
    expect(w.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(w.secretHint).toBe(`…${w.secret.slice(-4)}`);

    const { rows } = await t.database.pool.query('select * from webhooks where id = $1', [w.id]);
    expect(JSON.stringify(rows[0])).not.toContain(w.secret);
    expect(new SecretBox(TEST_SECRET_KEY).open(rows[0].secret_sealed)).toBe(w.secret);

    const got = await call(t.app, tenant.key, 'GET', `/api/v1/webhooks/${w.id}`);
    expect(got.statusCode).toBe(200);
    expect(got.body).not.toContain(w.secret);
    expect(got.json()).not.toHaveProperty('secret');
  });

  it('keeps a given secret and a disabled state', async () => {
    const res = await create({ secret: 'my-own-secret-1234567890', enabled: false });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ secret: 'my-own-secret-1234567890', secretHint: '…7890', enabled: false });
  });

  it('accepts http only for loopback in development', async () => {
    expect((await create({ url: 'http://127.0.0.1:9999/hook' })).statusCode).toBe(201);
    expect((await create({ url: 'http://localhost:9999/hook' })).statusCode).toBe(201);
    const plain = await create({ url: 'http://hooks.example.com/voice' });
    expect(plain.statusCode).toBe(422);
    expect(fieldsOf(plain)).toEqual(['url']);
    expect(plain.json().errors[0].message).toContain('https');
  });

  it.each([
    ['ftp://hooks.example.com/x', 'https'],
    ['not a url', 'absolute URL'],
    ['https://user:pw@hooks.example.com/x', 'credentials'],
    ['https://10.0.0.5/hook', 'private'],
    ['https://169.254.169.254/latest/meta-data', 'metadata'],
    ['https://192.168.1.10/hook', 'private'],
    ['https://[fd00::1]/hook', 'private'],
  ])('refuses %s naming url', async (url, why) => {
    const res = await create({ url });
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toContain('application/problem+json');
    expect(fieldsOf(res)).toEqual(['url']);
    expect(res.json().errors[0].message).toContain(why);
  });

  it('refuses unknown event kinds, an empty or repeated list, and a short secret', async () => {
    const unknown = await create({ events: ['SessionStarted', 'CallExploded'] });
    expect(unknown.statusCode).toBe(422);
    expect(fieldsOf(unknown)).toEqual(['events.1']);
    expect(unknown.json().errors[0].message).toContain('SessionStarted, SessionEnded, ToolCallCompleted, TransferInitiated, AnalysisCompleted, Error');
    expect(fieldsOf(await create({ events: [] }))).toEqual(['events']);
    expect(fieldsOf(await create({ events: ['Error', 'Error'] }))).toEqual(['events']);
    expect(fieldsOf(await create({ secret: 'short' }))).toEqual(['secret']);
  });

  it("refuses another tenant's agent and an unknown one, naming agentId", async () => {
    for (const id of [otherAgentId, 'agt_nope']) {
      const res = await create({ agentId: id });
      expect(res.statusCode).toBe(422);
      expect(fieldsOf(res)).toEqual(['agentId']);
    }
  });

  it('needs webhooks:write, and credentials', async () => {
    const reader = await tenant.mintKey({ scopes: ['webhooks:read'] });
    const res = await create({}, reader.key);
    expect(res.statusCode).toBe(403);
    expect(res.json().detail).toContain('webhooks:write');
    expect((await call(t.app, null, 'POST', '/api/v1/webhooks', body())).statusCode).toBe(401);
  });

  it('answers 400 for a missing url', async () => {
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/webhooks', { agentId, events: ['Error'] });
    expect(res.statusCode).toBe(400);
    expect(fieldsOf(res)).toEqual(['url']);
  });
});

describe('GET /api/v1/webhooks', () => {
  it("lists only the tenant's webhooks, filtered by agent, with webhooks:read", async () => {
    const agent2 = (await createAgentFor(t.app, tenant.key)).id;
    const mine = (await create({ agentId: agent2 })).json();
    await create({ agentId: otherAgentId }, other.key);
    const reader = await tenant.mintKey({ scopes: ['webhooks:read'] });
    const res = await call(t.app, reader.key, 'GET', `/api/v1/webhooks?agentId=${agent2}`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ total: 1, page: 1, data: [{ id: mine.id, agentId: agent2 }] });
    const all = (await call(t.app, tenant.key, 'GET', '/api/v1/webhooks?pageSize=100')).json();
    expect(all.data.every((w: { agentId: string }) => w.agentId !== otherAgentId)).toBe(true);
    expect(all.data.some((w: { secret?: string }) => 'secret' in w)).toBe(false);
    const noScope = await tenant.mintKey({ scopes: ['agents:read'] });
    expect((await call(t.app, noScope.key, 'GET', '/api/v1/webhooks')).statusCode).toBe(403);
  });

  it("answers 404 for another tenant's webhook", async () => {
    const theirs = (await create({ agentId: otherAgentId }, other.key)).json();
    for (const [method, url] of [
      ['GET', `/api/v1/webhooks/${theirs.id}`],
      ['DELETE', `/api/v1/webhooks/${theirs.id}`],
      ['GET', `/api/v1/webhooks/${theirs.id}/deliveries`],
    ] as const) {
      expect((await call(t.app, tenant.key, method, url)).statusCode).toBe(404);
    }
    expect((await call(t.app, tenant.key, 'PATCH', `/api/v1/webhooks/${theirs.id}`, { enabled: false })).statusCode).toBe(404);
    expect((await call(t.app, other.key, 'GET', `/api/v1/webhooks/${theirs.id}`)).json().enabled).toBe(true);
  });
});

describe('PATCH /api/v1/webhooks/{id}', () => {
  it('changes events, enabled and url, and replaces the secret without echoing it', async () => {
    const w = (await create()).json();
    const res = await call(t.app, tenant.key, 'PATCH', `/api/v1/webhooks/${w.id}`, { events: ['Error'], enabled: false, url: 'https://other.example.com/h', secret: 'rotated-secret-abcdefgh' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ events: ['Error'], enabled: false, url: 'https://other.example.com/h', secretHint: '…efgh' });
    expect(res.body).not.toContain('rotated-secret');
    const { rows } = await t.database.pool.query('select secret_sealed from webhooks where id = $1', [w.id]);
    expect(new SecretBox(TEST_SECRET_KEY).open(rows[0].secret_sealed)).toBe('rotated-secret-abcdefgh');
  });

  it('refuses agentId, an empty patch and a private url, leaving the webhook as it was', async () => {
    const w = (await create()).json();
    const agent = await call(t.app, tenant.key, 'PATCH', `/api/v1/webhooks/${w.id}`, { agentId: otherAgentId });
    expect(agent.statusCode).toBe(422);
    expect(fieldsOf(agent)).toEqual(['agentId']);
    expect((await call(t.app, tenant.key, 'PATCH', `/api/v1/webhooks/${w.id}`, {})).statusCode).toBe(422);
    const priv = await call(t.app, tenant.key, 'PATCH', `/api/v1/webhooks/${w.id}`, { url: 'https://10.1.2.3/x', enabled: false });
    expect(priv.statusCode).toBe(422);
    expect(fieldsOf(priv)).toEqual(['url']);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/webhooks/${w.id}`)).json()).toMatchObject({ url: w.url, enabled: true });
  });
});

describe('DELETE /api/v1/webhooks/{id}', () => {
  it('deletes, then answers 404', async () => {
    const w = (await create()).json();
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/webhooks/${w.id}`)).statusCode).toBe(204);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/webhooks/${w.id}`)).statusCode).toBe(404);
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/webhooks/${w.id}`)).statusCode).toBe(404);
  });

  it('goes with its agent', async () => {
    const agent = (await createAgentFor(t.app, tenant.key)).id;
    const w = (await create({ agentId: agent })).json();
    expect((await call(t.app, tenant.key, 'DELETE', `/api/v1/agents/${agent}`)).statusCode).toBe(204);
    expect((await call(t.app, tenant.key, 'GET', `/api/v1/webhooks/${w.id}`)).statusCode).toBe(404);
  });
});
