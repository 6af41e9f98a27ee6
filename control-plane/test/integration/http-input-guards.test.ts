import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentBody, call, createAgentFor, createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { unstorableTextReason } from '../../src/db/storable-text.js';

const NUL_MESSAGE = unstorableTextReason('\u0000')!;
const SURROGATE_MESSAGE = unstorableTextReason('\ud800')!;

let t: TestApp;
let tenant: TestTenant;

beforeAll(async () => {
  t = await createTestApp();
  tenant = await createTenant(t.database);
});
afterAll(async () => t.close());

const agentCount = async (): Promise<number> => (await t.database.pool.query('select count(*)::int as n from agents where tenant_id = $1', [tenant.tenantId])).rows[0].n;

describe('input Postgres cannot store, and URLs the router cannot read', () => {
  it('refuses a NUL character in body strings and keys with a 422 naming each field, and stores nothing', async () => {
    const before = await agentCount();
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', agentBody({ name: 'Front\u0000desk', persona: { name: 'Ava\u0000' }, tags: ['ok', 'b\u0000d'], ['x\u0000y']: 1 }));
    expect(res.statusCode).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    const body = res.json();
    expect(body.type).toMatch(/\/errors\/validation$/);
    expect(body.detail).toBe('The body breaks 4 rules; see errors.');
    expect(body.errors).toEqual([
      { field: 'name', message: NUL_MESSAGE },
      { field: 'persona.name', message: NUL_MESSAGE },
      { field: 'tags.1', message: NUL_MESSAGE },
      { field: 'x\\u0000y', message: `its key ${NUL_MESSAGE}` },
    ]);
    expect(body.traceId).toBe(res.headers['x-request-id']);
    expect(await agentCount()).toBe(before);
  });

  it('leaves an agent as it was when an update carries a NUL or an unpaired surrogate', async () => {
    const agent = await createAgentFor(t.app, tenant.key);
    // JSON.stringify writes a lone surrogate as the escape \ud800, which jsonb refuses.
    const res = await call(t.app, tenant.key, 'PATCH', `/api/v1/agents/${agent.id}`, { systemPromptTemplate: 'Be kind.\u0000', firstMessage: 'Hi \ud800', description: 'ok \ud83d\ude00' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([
      { field: 'systemPromptTemplate', message: NUL_MESSAGE },
      { field: 'firstMessage', message: SURROGATE_MESSAGE },
    ]);
    const after = (await call(t.app, tenant.key, 'GET', `/api/v1/agents/${agent.id}`)).json();
    expect(after.version).toBe(agent.version);
    expect(after.systemPromptTemplate).toBe(agent.systemPromptTemplate);
  });

  it('refuses a NUL in a path or query parameter instead of failing in the database', async () => {
    for (const [url, detail, field] of [
      ['/api/v1/agents/%00', 'The params breaks a rule; see errors.', 'agentId'],
      ['/api/v1/conversations/conv_%00/latency', 'The params breaks a rule; see errors.', 'conversationId'],
      ['/api/v1/conversations?agentId=%00', 'The query breaks a rule; see errors.', 'agentId'],
      ['/api/v1/agents?search=a%00b', 'The query breaks a rule; see errors.', 'search'],
    ] as const) {
      const res = await call(t.app, tenant.key, 'GET', url);
      expect(res.statusCode, url).toBe(422);
      expect(res.json(), url).toMatchObject({ detail, errors: [{ field, message: NUL_MESSAGE }] });
    }
  });

  it('refuses a NUL on public routes too (login)', async () => {
    const res = await call(t.app, null, 'POST', '/api/v1/auth/login', { email: 'a\u0000@example.com', password: 'x' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toEqual([{ field: 'email', message: NUL_MESSAGE }]);
  });

  it('walks bodies nested as deep as JSON allows without failing', async () => {
    const depth = 100_000;
    const res = await call(t.app, tenant.key, 'POST', '/api/v1/agents', `${'['.repeat(depth)}"\\u0000"${']'.repeat(depth)}`);
    expect(res.statusCode).toBe(422);
    expect(res.json().errors).toHaveLength(1);
    expect(res.json().errors[0].message).toBe(NUL_MESSAGE);
  });

  it('answers a path that is not valid percent-encoding with a 400 problem, not the framework\'s JSON', async () => {
    const res = await call(t.app, tenant.key, 'GET', '/api/v1/agents/%E0%A4%A');
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.headers['x-api-version']).toBe('1');
    const body = res.json();
    expect(body.type).toMatch(/\/errors\/malformed-request$/);
    expect(body.detail).toMatch(/not valid/);
    expect(body.traceId).toBe(res.headers['x-request-id']);
    expect(body.traceId).toMatch(/^trace_/);
  });

  it('answers a path parameter longer than any id with a 400 problem', async () => {
    const res = await call(t.app, tenant.key, 'GET', `/api/v1/agents/${'a'.repeat(300)}`);
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 400, detail: 'A path parameter is longer than 100 characters; no id is that long.' });
    expect(res.json().traceId).toBe(res.headers['x-request-id']);
  });

  it('answers requests the HTTP parser refuses (headers over 16 KiB, bytes that are not HTTP) with a problem, not the framework\'s JSON', async () => {
    const url = await t.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = new URL(url);
    const raw = (request: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(request));
        let got = '';
        socket.setEncoding('utf8');
        socket.on('data', (d: string) => (got += d));
        socket.on('close', () => resolve(got));
        socket.on('error', reject);
      });
    const parse = (response: string) => {
      const [head, body] = response.split('\r\n\r\n');
      return { statusLine: head!.split('\r\n')[0], head: head!, body: JSON.parse(body!) as Record<string, unknown> };
    };

    const long = parse(await raw(`GET /api/v1/agents?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
    expect(long.statusLine).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(long.head.split('\r\n')).toContain('Content-Type: application/problem+json');
    expect(long.body).toMatchObject({ type: expect.stringMatching(/\/errors\/headers-too-large$/), title: 'Request headers too large', status: 431 });
    expect(long.body['traceId']).toMatch(/^trace_/);
    expect(long.head.split('\r\n')).toContain(`X-Request-Id: ${String(long.body['traceId'])}`);

    const junk = parse(await raw('NOT HTTP AT ALL\r\n\r\n'));
    expect(junk.statusLine).toBe('HTTP/1.1 400 Bad Request');
    expect(junk.body).toMatchObject({ type: expect.stringMatching(/\/errors\/malformed-request$/), status: 400, detail: 'The request is not valid HTTP.' });

    // The error pages exist for the new types.
    expect((await t.app.inject({ method: 'GET', url: '/docs/errors/headers-too-large' })).statusCode).toBe(200);
    // The server still serves requests after both.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });
});
