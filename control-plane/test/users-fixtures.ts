import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hash } from '@node-rs/argon2';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, expect } from 'vitest';
import { InProcessBus, newId } from '@vap/shared';
import { buildApp } from '../src/app.js';
import type { Database } from '../src/db/database.js';
import { users } from '../src/db/schema/users.js';
import type { Role } from '../src/db/schema/users.js';
import { CaptureMailer } from '../src/mail/capture-mailer.js';
import type { Mailer } from '../src/mail/mailer.js';
import { SecretBox } from '../src/secret-box.js';
import { TEST_SECRET_KEY, call, createTenant, isolatedDatabase, testConfig } from './helpers.js';
import type { TestTenant } from './helpers.js';

/**
 * The real app on a database of its own, with a mailer of the test's choice (default: a
 * CaptureMailer in a temp directory). Own database: these tests send many requests without
 * a credential (login, accept), which count in the per-address rate-limit window; on the
 * shared database they would use up that window for other test files running at the same time.
 */
export async function createUsersTestApp(opts: { env?: Record<string, string>; mailer?: Mailer; now?: () => number } = {}) {
  const mailDir = await mkdtemp(join(tmpdir(), 'vap-users-mail-'));
  const iso = await isolatedDatabase();
  const config = testConfig({ DATABASE_URL: iso.url, PUBLIC_URL: 'https://app.example.test', RATE_LIMIT_ANONYMOUS: '100000', ...opts.env });
  const database = iso.database;
  const capture = new CaptureMailer({ directory: mailDir, from: config.mail.from, log: pino({ level: 'silent' }) });
  const mailer = opts.mailer ?? capture;
  const app = await buildApp(config, { database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger: pino({ level: process.env.TEST_LOG ?? 'silent' }), mailer, ...(opts.now ? { now: opts.now } : {}) });
  await app.ready();
  return {
    app,
    database,
    config,
    /** The mail captured (empty when another mailer was given). */
    mail: capture,
    close: async () => {
      await app.close();
      await iso.drop();
      await rm(mailDir, { recursive: true, force: true });
    },
  };
}

export interface TestUser {
  id: string;
  email: string;
  password: string;
  role: Role;
}

export interface InsertUserOptions {
  /** Default TenantOwner. */
  role?: Role;
  /** Default `<id>@example.test`. */
  email?: string;
  firstName?: string;
  /** Default the role. */
  lastName?: string;
  status?: string;
  /** No password hash (the user cannot log in with a password). */
  noPassword?: boolean;
  canManageApiKeys?: boolean;
  canViewBilling?: boolean;
  canDeleteConversations?: boolean;
}

let sharedPassword: { password: string; hash: Promise<string> } | null = null;

/**
 * Inserts a user with an argon2id password hash (as bootstrap and accept store it). Every fixture
 * user gets the same random password and hash, computed once per process, to save time.
 */
export async function insertUser(database: Database, tenantId: string, opts: InsertUserOptions = {}): Promise<TestUser> {
  sharedPassword ??= (() => {
    const password = `pw-${randomBytes(9).toString('base64url')}-long`;
    return { password, hash: hash(password, { algorithm: 2 }) };
  })();
  const id = newId('usr');
  const role = opts.role ?? 'TenantOwner';
  const email = opts.email ?? `${id}@example.test`;
  await database.db.insert(users).values({
    id,
    tenantId,
    email,
    firstName: opts.firstName ?? 'Test',
    lastName: opts.lastName ?? role,
    role,
    status: opts.status ?? 'active',
    passwordHash: opts.noPassword ? null : await sharedPassword.hash,
    canManageApiKeys: opts.canManageApiKeys ?? false,
    canViewBilling: opts.canViewBilling ?? false,
    canDeleteConversations: opts.canDeleteConversations ?? false,
  });
  return { id, email, password: sharedPassword.password, role };
}

/** Logs in through POST /auth/login (asserting 200) and returns the token response. */
export async function login(app: FastifyInstance, email: string, password: string): Promise<{ accessToken: string; refreshToken: string }> {
  const res = await call(app, null, 'POST', '/api/v1/auth/login', { email, password });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
}

/** A user of `role` in the tenant, signed in: its access token is `token`. */
export async function signedIn(app: FastifyInstance, database: Database, tenantId: string, role: Role, opts: Omit<InsertUserOptions, 'role'> = {}): Promise<TestUser & { token: string; refreshToken: string }> {
  const u = await insertUser(database, tenantId, { ...opts, role });
  const tokens = await login(app, u.email, u.password);
  return { ...u, token: tokens.accessToken, refreshToken: tokens.refreshToken };
}

export type UsersTestApp = Awaited<ReturnType<typeof createUsersTestApp>>;

/** A users test file's world: the users test app (own database), a tenant, and a signed-in Admin of it. */
export interface UsersWorld {
  /** Set in beforeAll. */
  t: UsersTestApp;
  /** Set in beforeAll. */
  tenant: TestTenant;
  /** Set in beforeAll. */
  admin: TestUser & { token: string; refreshToken: string };
}

/** Registers beforeAll/afterAll building (and closing) the world; `adminOpts` shape the Admin's row. */
export function usersWorld(adminOpts: Omit<InsertUserOptions, 'role'> = {}): UsersWorld {
  const w = {} as UsersWorld;
  beforeAll(async () => {
    w.t = await createUsersTestApp();
    w.tenant = await createTenant(w.t.database);
    w.admin = await signedIn(w.t.app, w.t.database, w.tenant.tenantId, 'Admin', adminOpts);
  });
  afterAll(async () => w.t?.close());
  return w;
}

/** The invitation token in a captured or received invitation email (from its link). */
export function tokenFromMail(text: string): string {
  const m = /\/accept-invitation\?token=([A-Za-z0-9_-]+)/.exec(text);
  if (!m) throw new Error('no invitation link in the email');
  return m[1]!;
}
