import { hash } from '@node-rs/argon2';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SCOPES, newId } from '@vap/shared';
import type { Scope } from '@vap/shared';
import { ROLES, users } from '../../src/db/schema/users.js';
import type { Role } from '../../src/db/schema/users.js';
import { USER_RIGHTS, rightsOf } from '../../src/modules/auth/permissions.js';
import type { Right, UserGrants, UserRight } from '../../src/modules/auth/permissions.js';
import { call, createTenant, createTestApp, isolatedDatabase } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';

/**
 * The every-route walk (issue 3): every operation of the OpenAPI document under /api/v1
 * that is not public answers 401 without credentials and 403 to a caller lacking what it
 * needs, and passes the auth hook for a caller holding exactly that. Routes come from the
 * app itself, so a route added later is walked without anyone editing this file, and a
 * new public or undocumented route fails until it is listed here on purpose.
 */

/** Operations that take no credential, on purpose. Add a route here only if it must be public. */
const PUBLIC_OPERATIONS = new Set<string>([
  'GET /api/v1/openapi.json',
  'POST /api/v1/webhooks/twilio/voice',
  'POST /api/v1/webhooks/twilio/status',
  'POST /api/v1/webhooks/twilio/sms',
  'POST /api/v1/webhooks/twilio/whatsapp',
  'POST /api/v1/webhooks/telegram/message',
  'POST /api/v1/webhooks/telnyx/voice',
  'GET /api/v1/webhooks/vonage/voice/answer',
  'POST /api/v1/webhooks/vonage/voice/answer',
  'GET /api/v1/webhooks/vonage/voice/event',
  'POST /api/v1/webhooks/vonage/voice/event',
  'POST /api/v1/auth/login',
  'POST /api/v1/auth/refresh',
  'POST /api/v1/auth/logout',
  'GET /api/v1/auth/jwks.json',
  'POST /api/v1/auth/mfa/verify',
  'POST /api/v1/auth/mfa/fido2/challenge',
  'POST /api/v1/auth/mfa/fido2/verify',
  'POST /api/v1/auth/invitations/accept',
]);

/** /api routes the OpenAPI document leaves out (all public: carrier callbacks and the document itself). */
const HIDDEN_OPERATIONS = new Set<string>(['GET /api/v1/openapi.json', 'POST /api/v1/webhooks/twilio/voice', 'POST /api/v1/webhooks/twilio/status', 'POST /api/v1/webhooks/twilio/sms', 'POST /api/v1/webhooks/twilio/whatsapp', 'POST /api/v1/webhooks/telegram/message', 'POST /api/v1/webhooks/telnyx/voice', 'GET /api/v1/webhooks/vonage/voice/answer', 'POST /api/v1/webhooks/vonage/voice/answer', 'GET /api/v1/webhooks/vonage/voice/event', 'POST /api/v1/webhooks/vonage/voice/event']);

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
interface Op {
  method: Method;
  path: string;
  scope: Scope | null;
  permission: 'canManageApiKeys' | 'canDeleteConversations' | undefined;
  right: UserRight | undefined;
}

let t: TestApp;
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let tenant: TestTenant;
let ops: Op[];
let publicOps: string[];

/** Every METHOD /path the app serves, read from Fastify's route tree (HEAD left out: it follows GET). */
function servedRoutes(tree: string): string[] {
  const out: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const m = /^((?:│ {3}| {4})*)[├└]── (.+?) \(([A-Z, ]+)\)$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    const path = (stack[depth - 1] ?? '') + m[2]!;
    stack[depth] = path;
    for (const method of m[3]!.split(', ')) if (method !== 'HEAD') out.push(`${method} ${path.replace(/:(\w+)/g, '{$1}')}`);
  }
  return out;
}

/** A concrete URL: ids that do not exist, numbers that parse (auth runs before both matter). */
function concrete(path: string): string {
  return path.replace(/\{versionNumber\}/g, '1').replace(/\{[^}]+\}/g, 'agt_00000000000000000000000000');
}

function send(key: string | null, op: Op) {
  const body = op.method === 'POST' || op.method === 'PATCH' || op.method === 'PUT' ? {} : undefined;
  return call(t.app, key, op.method, concrete(op.path), body);
}

beforeAll(async () => {
  // A database of its own: the walk sends hundreds of requests without credentials, which
  // count in 127.0.0.1's anonymous rate-limit window, and that window lives in the database,
  // so on the shared one they would push other test files (limit 60) into 429.
  iso = await isolatedDatabase();
  t = await createTestApp({ database: iso.database, env: { RATE_LIMIT_ANONYMOUS: '100000' } });
  tenant = await createTenant(t.database);
  const doc = (await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' })).json<{ paths: Record<string, Record<string, Record<string, unknown>>> }>();
  ops = [];
  publicOps = [];
  for (const [path, byMethod] of Object.entries(doc.paths)) {
    if (!path.startsWith('/api/v1/')) continue;
    for (const [m, op] of Object.entries(byMethod)) {
      const method = m.toUpperCase() as Method;
      const security = op.security as unknown[] | undefined;
      if (security && security.length === 0) {
        publicOps.push(`${method} ${path}`);
        continue;
      }
      ops.push({
        method,
        path,
        scope: (op['x-required-scope'] as Scope | null | undefined) ?? null,
        permission: op['x-required-permission'] as Op['permission'],
        right: op['x-required-right'] as UserRight | undefined,
      });
    }
  }
});
afterAll(async () => {
  await t.close();
  await iso.drop();
});

describe('every /api/v1 route', () => {
  it('is in the OpenAPI document (or a listed hidden public route), so the walk sees it', () => {
    const documented = new Set([...ops.map((o) => `${o.method} ${o.path}`), ...publicOps]);
    const served = servedRoutes(t.app.printRoutes({ commonPrefix: false })).filter((r) => r.split(' ')[1]!.startsWith('/api/'));
    expect(served.length).toBeGreaterThan(30);
    for (const route of served) expect(documented.has(route) || HIDDEN_OPERATIONS.has(route), `${route} is served but not documented`).toBe(true);
  });

  it('is public only when listed as public here, and the list names only served routes', () => {
    for (const op of publicOps) expect(PUBLIC_OPERATIONS.has(op), `${op} takes no credential`).toBe(true);
    const served = new Set(servedRoutes(t.app.printRoutes({ commonPrefix: false })));
    for (const op of PUBLIC_OPERATIONS) expect(served.has(op), `${op} is listed as public but not served`).toBe(true);
    for (const op of HIDDEN_OPERATIONS) expect(PUBLIC_OPERATIONS.has(op), op).toBe(true);
  });

  it('declares what it needs: a scope, a permission or a user-only right', () => {
    expect(ops.length).toBeGreaterThan(30);
    for (const op of ops) {
      const where = `${op.method} ${op.path}`;
      if (op.scope !== null) expect(SCOPES, where).toContain(op.scope);
      else expect(op.permission !== undefined || op.right !== undefined, `${where} needs nothing`).toBe(true);
      if (op.right !== undefined) expect(USER_RIGHTS, where).toContain(op.right);
    }
  });

  it('answers 401 without credentials and with a malformed or unknown credential, before validating anything', async () => {
    for (const op of ops) {
      const where = `${op.method} ${op.path}`;
      const anon = await send(null, op);
      expect(anon.statusCode, `${where} without credentials`).toBe(401);
      expect(anon.json(), where).toMatchObject({ type: expect.stringMatching(/\/errors\/unauthorized$/), status: 401 });
      const unknown = await send('svc_sb_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', op);
      expect(unknown.statusCode, `${where} with an unknown key`).toBe(401);
    }
  });

  it('answers 403 to an API key holding everything but what the route needs, and lets one with exactly that through', async () => {
    const everything = await tenant.mintKey({ scopes: [...SCOPES], canManageApiKeys: true });
    const withoutScope = new Map<Scope, string>();
    for (const s of SCOPES) withoutScope.set(s, (await tenant.mintKey({ scopes: SCOPES.filter((x) => x !== s), canManageApiKeys: true })).key);
    const noManage = await tenant.mintKey({ scopes: [...SCOPES], canManageApiKeys: false });
    const onlyManage = await tenant.mintKey({ scopes: [], canManageApiKeys: true });
    const onlyScope = new Map<Scope, string>();
    for (const s of SCOPES) onlyScope.set(s, (await tenant.mintKey({ scopes: [s], canManageApiKeys: false })).key);

    for (const op of ops) {
      const where = `${op.method} ${op.path}`;
      if (op.right) {
        // User-only rights: no API key passes, however powerful.
        const res = await send(everything.key, op);
        expect(res.statusCode, `${where} with an all-powerful key`).toBe(403);
        expect(res.json().detail, where).toMatch(/signed-in users/);
        continue;
      }
      const lacking = op.scope ? withoutScope.get(op.scope)! : noManage.key;
      const denied = await send(lacking, op);
      expect(denied.statusCode, `${where} lacking ${op.scope ?? op.permission}`).toBe(403);
      expect(denied.json(), where).toMatchObject({ type: expect.stringMatching(/\/errors\/forbidden$/), status: 403 });

      const holding = op.scope ? onlyScope.get(op.scope)! : onlyManage.key;
      const passed = await send(holding, op);
      expect([401, 403], `${where} holding exactly ${op.scope ?? op.permission} (${passed.body})`).not.toContain(passed.statusCode);
    }
  });
});

/** What an operation needs, as rights of the matrix. */
function needs(op: Op): Right[] {
  const out: Right[] = [];
  if (op.scope) out.push(op.scope);
  if (op.permission === 'canManageApiKeys') out.push('api-keys:manage');
  if (op.permission === 'canDeleteConversations') out.push('conversations:delete');
  if (op.right) out.push(op.right);
  return out;
}

const NO_FLAGS = { canManageApiKeys: false, canViewBilling: false, canDeleteConversations: false };
const ALL_FLAGS = { canManageApiKeys: true, canViewBilling: true, canDeleteConversations: true };

interface SignedIn {
  label: string;
  grants: UserGrants;
  token: string;
}

/** A user of the tenant with this role and flags, signed in through POST /auth/login. */
async function signIn(grants: UserGrants, passwordHash: string, password: string): Promise<SignedIn> {
  const email = `${grants.role.toLowerCase()}-${newId('usr').slice(4, 16)}@walk.example`;
  await t.database.db.insert(users).values({ id: newId('usr'), tenantId: tenant.tenantId, email, firstName: 'Walk', lastName: grants.role, passwordHash, ...grants });
  const res = await call(t.app, null, 'POST', '/api/v1/auth/login', { email, password });
  expect(res.statusCode, res.body).toBe(200);
  const flags = grants.canManageApiKeys ? 'all permissions' : 'no permissions';
  return { label: `${grants.role} with ${flags}`, grants, token: res.json<{ accessToken: string }>().accessToken };
}

describe('every /api/v1 route, for signed-in users', () => {
  let signedIn: SignedIn[];

  beforeAll(async () => {
    const password = 'walk-the-routes-0451';
    const passwordHash = await hash(password, { algorithm: 2 });
    signedIn = [];
    for (const role of ROLES) {
      for (const flags of [NO_FLAGS, ALL_FLAGS]) signedIn.push(await signIn({ role, ...flags }, passwordHash, password));
    }
  });

  it('answers 403 to a user whose role and permissions lack what the route needs, and lets the others through', async () => {
    let denials = 0;
    for (const op of ops) {
      const where = `${op.method} ${op.path}`;
      const need = needs(op);
      for (const user of signedIn) {
        const rights = rightsOf(user.grants);
        const res = await send(user.token, op);
        if (need.every((r) => rights.has(r))) {
          expect([401, 403], `${where} as ${user.label} (${res.body})`).not.toContain(res.statusCode);
        } else {
          denials++;
          expect(res.statusCode, `${where} as ${user.label} lacking ${need.join(' + ')}`).toBe(403);
          expect(res.json(), where).toMatchObject({ type: expect.stringMatching(/\/errors\/forbidden$/) });
        }
      }
    }
    // Most routes are closed to some role: a walk that denies nothing is not walking.
    expect(denials).toBeGreaterThan(ops.length);
  });

  it('enforces the spec role descriptions on sample routes', async () => {
    const as = (role: Role, withFlags: boolean) => signedIn.find((u) => u.grants.role === role && u.grants.canManageApiKeys === withFlags)!.token;
    const op = (method: Method, path: string): Op => ops.find((o) => o.method === method && o.path === path)!;
    // ReadOnly reads and nothing else.
    expect((await send(as('ReadOnly', true), op('GET', '/api/v1/agents'))).statusCode).toBe(200);
    expect((await send(as('ReadOnly', true), op('POST', '/api/v1/agents'))).statusCode).toBe(403);
    expect((await send(as('ReadOnly', true), op('GET', '/api/v1/api-keys'))).statusCode).toBe(403);
    // TenantUser: agents yes; keys only with canManageApiKeys.
    expect([400, 422]).toContain((await send(as('TenantUser', false), op('POST', '/api/v1/agents'))).statusCode);
    expect((await send(as('TenantUser', false), op('GET', '/api/v1/api-keys'))).statusCode).toBe(403);
    expect((await send(as('TenantUser', true), op('GET', '/api/v1/api-keys'))).statusCode).toBe(200);
    // Deleting a conversation takes canDeleteConversations, even for an Admin.
    expect((await send(as('Admin', false), op('DELETE', '/api/v1/conversations/{conversationId}'))).statusCode).toBe(403);
    expect((await send(as('Admin', true), op('DELETE', '/api/v1/conversations/{conversationId}'))).statusCode).toBe(404);
  });
});
