import { randomInt } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessBus } from '@vap/shared';
import { buildApp } from '../../src/app.js';
import { REDACT_PATHS } from '../../src/logger.js';
import { CaptureMailer } from '../../src/mail/capture-mailer.js';
import { hashOpaqueToken } from '../../src/modules/auth/session-service.js';
import { totpCode, totpStep } from '../../src/modules/mfa/totp.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, createTenant, isolatedDatabase, testConfig } from '../helpers.js';
import type { TestTenant } from '../helpers.js';
import { insertUser, tokenFromMail } from '../users-fixtures.js';

/**
 * No secret in logs or where a response should not show it (issue 3): the login, refresh,
 * logout, MFA (TOTP and recovery code), invitation and API-key flows run against the real
 * app with its logger at `trace` (request logging on) writing into memory with the
 * production redaction; every secret those flows create or send is then searched for in
 * every log line and in every response that did not hand it out.
 */

let app: FastifyInstance;
let tenant: TestTenant;
let mail: CaptureMailer;
let close: () => Promise<void>;
const logLines: string[] = [];
const clock = { ms: (totpStep(Date.now()) * 30 + 15) * 1000 };
const remoteAddress = `10.${randomInt(256)}.${randomInt(256)}.${1 + randomInt(254)}`;

/** Every secret seen, by a label that says what it is. */
const secrets = new Map<string, string>();
/** Every exchange, with the labels of the secrets its response may show (it issued them). */
const exchanges: { what: string; res: LightMyRequestResponse; shows: string[] }[] = [];

function secret(label: string, value: string): string {
  expect(value.length, label).toBeGreaterThanOrEqual(6);
  secrets.set(label, value);
  return value;
}

async function req(what: string, bearer: string | null, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, body?: unknown, shows: string[] = []) {
  const res = await app.inject({
    method,
    url,
    remoteAddress,
    headers: { 'user-agent': 'leak-test', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
  });
  exchanges.push({ what, res, shows });
  return res;
}

beforeAll(async () => {
  const iso = await isolatedDatabase();
  const mailDir = await mkdtemp(join(tmpdir(), 'vap-leak-mail-'));
  const config = testConfig({ DATABASE_URL: iso.url, LOG_LEVEL: 'trace', PUBLIC_URL: 'https://app.example.test', RATE_LIMIT_ANONYMOUS: '100000' });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      done();
    },
  });
  // The production logger's settings (logger.ts), writing into memory.
  const logger = pino({ name: 'control-plane', level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
  mail = new CaptureMailer({ directory: mailDir, from: config.mail.from, log: logger.child({ module: 'mail' }) });
  app = await buildApp(config, { database: iso.database, bus: new InProcessBus(), secrets: new SecretBox(TEST_SECRET_KEY), logger, mailer: mail, now: () => clock.ms });
  await app.ready();
  tenant = await createTenant(iso.database);
  secret('bootstrap API key', tenant.key);
  close = async () => {
    await app.close();
    await iso.drop();
    await rm(mailDir, { recursive: true, force: true });
  };

  // Login without MFA, a wrong password, refresh, reuse of a spent refresh token.
  const admin = await insertUser(iso.database, tenant.tenantId, { role: 'Admin', canManageApiKeys: true, canViewBilling: true, canDeleteConversations: true });
  secret('admin password', admin.password);
  const wrong = secret('wrong password', `${admin.password}-not-it`);
  expect((await req('wrong password', null, 'POST', '/api/v1/auth/login', { email: admin.email, password: wrong })).statusCode).toBe(401);
  const login = await req('login', null, 'POST', '/api/v1/auth/login', { email: admin.email, password: admin.password }, ['access token 1', 'refresh token 1']);
  expect(login.statusCode, login.body).toBe(200);
  const access1 = secret('access token 1', login.json().accessToken);
  const refresh1 = secret('refresh token 1', login.json().refreshToken);
  secret('refresh token 1 hash', hashOpaqueToken(refresh1));
  const refreshed = await req('refresh', null, 'POST', '/api/v1/auth/refresh', { refreshToken: refresh1 }, ['access token 2', 'refresh token 2']);
  expect(refreshed.statusCode, refreshed.body).toBe(200);
  const access2 = secret('access token 2', refreshed.json().accessToken);
  secret('refresh token 2', refreshed.json().refreshToken);
  expect((await req('refresh reuse', null, 'POST', '/api/v1/auth/refresh', { refreshToken: refresh1 })).statusCode).toBe(401);
  // Reuse ended that session: sign in again.
  const again = await req('login again', null, 'POST', '/api/v1/auth/login', { email: admin.email, password: admin.password }, ['access token 3', 'refresh token 3']);
  const access3 = secret('access token 3', again.json().accessToken);
  const refresh3 = secret('refresh token 3', again.json().refreshToken);
  expect((await req('user request with a dead session', access1, 'GET', '/api/v1/users/me')).statusCode).toBe(401);
  expect(access2).not.toBe(access3);

  // API keys: created by the user, used, read back.
  const created = await req('create API key', access3, 'POST', '/api/v1/api-keys', { name: 'ci', scopes: ['agents:read'] }, ['created API key']);
  expect(created.statusCode, created.body).toBe(201);
  const apiKey = secret('created API key', created.json().key);
  expect((await req('use API key', apiKey, 'GET', '/api/v1/agents')).statusCode).toBe(200);
  expect((await req('get API key', access3, 'GET', `/api/v1/api-keys/${created.json().id}`)).statusCode).toBe(200);
  expect((await req('list API keys', access3, 'GET', '/api/v1/api-keys')).statusCode).toBe(200);

  // Invitation: invite, read the token from the mail, accept with a new password.
  const invited = await req('invite', access3, 'POST', '/api/v1/users/invite', { email: 'new.person@example.test', firstName: 'New', lastName: 'Person', role: 'TenantUser', message: 'welcome' });
  expect(invited.statusCode, invited.body).toBe(201);
  const invitationToken = secret('invitation token', tokenFromMail(mail.messages.at(-1)!.text));
  secret('invitation token hash', hashOpaqueToken(invitationToken));
  expect((await req('pending invitations', access3, 'GET', '/api/v1/users/invitations')).statusCode).toBe(200);
  const newPassword = secret('invitee password', 'correct horse battery staple 42');
  const accepted = await req('accept invitation', null, 'POST', '/api/v1/auth/invitations/accept', { token: invitationToken, password: newPassword }, ['invitee access token', 'invitee refresh token']);
  expect(accepted.statusCode, accepted.body).toBeLessThan(300);
  secret('invitee access token', accepted.json().accessToken);
  secret('invitee refresh token', accepted.json().refreshToken);
  expect((await req('accept used invitation', null, 'POST', '/api/v1/auth/invitations/accept', { token: invitationToken, password: newPassword })).statusCode).toBe(400);

  // MFA: enrol TOTP, log in with a code, a wrong code, then a recovery code.
  const enrol = await req('enrol TOTP', access3, 'POST', '/api/v1/users/me/mfa/totp', undefined, ['TOTP secret']);
  expect(enrol.statusCode, enrol.body).toBe(201);
  const totpSecret = secret('TOTP secret', enrol.json().secret);
  const confirmCode = secret('TOTP confirm code', totpCode(totpSecret, totpStep(clock.ms)));
  const confirmed = await req('confirm TOTP', access3, 'POST', '/api/v1/users/me/mfa/totp/confirm', { code: confirmCode }, Array.from({ length: 10 }, (_, i) => `recovery code ${i}`));
  expect(confirmed.statusCode, confirmed.body).toBe(200);
  const recoveryCodes: string[] = confirmed.json().recoveryCodes;
  expect(recoveryCodes).toHaveLength(10);
  recoveryCodes.forEach((c, i) => secret(`recovery code ${i}`, c));
  expect((await req('MFA factors', access3, 'GET', '/api/v1/users/me/mfa')).statusCode).toBe(200);

  clock.ms += 30_000;
  const step1 = await req('login with MFA', null, 'POST', '/api/v1/auth/login', { email: admin.email, password: admin.password }, ['mfa token 1']);
  expect(step1.json()).toMatchObject({ mfaRequired: true });
  const mfaToken1 = secret('mfa token 1', step1.json().mfaToken);
  const wrongCode = secret('wrong TOTP code', totpCode(totpSecret, totpStep(clock.ms) + 5));
  expect((await req('wrong TOTP code', null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: mfaToken1, code: wrongCode })).statusCode).toBe(401);
  const code = secret('TOTP login code', totpCode(totpSecret, totpStep(clock.ms)));
  const verified = await req('verify TOTP', null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: mfaToken1, code }, ['mfa access token', 'mfa refresh token']);
  expect(verified.statusCode, verified.body).toBe(200);
  const mfaAccess = secret('mfa access token', verified.json().accessToken);
  secret('mfa refresh token', verified.json().refreshToken);
  expect((await req('replay TOTP code', null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: mfaToken1, code })).statusCode).toBe(401);

  const step2 = await req('login with MFA again', null, 'POST', '/api/v1/auth/login', { email: admin.email, password: admin.password }, ['mfa token 2']);
  const mfaToken2 = secret('mfa token 2', step2.json().mfaToken);
  const byRecovery = await req('verify recovery code', null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: mfaToken2, method: 'recovery_code', code: recoveryCodes[0] }, ['recovery access token', 'recovery refresh token']);
  expect(byRecovery.statusCode, byRecovery.body).toBe(200);
  secret('recovery access token', byRecovery.json().accessToken);
  secret('recovery refresh token', byRecovery.json().refreshToken);

  // Reading users back, then logging out.
  expect((await req('me', mfaAccess, 'GET', '/api/v1/users/me')).statusCode).toBe(200);
  expect((await req('get user', mfaAccess, 'GET', `/api/v1/users/${admin.id}`)).statusCode).toBe(200);
  expect((await req('list users', mfaAccess, 'GET', '/api/v1/users')).statusCode).toBe(200);
  expect((await req('logout', null, 'POST', '/api/v1/auth/logout', { refreshToken: refresh3 })).statusCode).toBe(204);
  expect((await req('logout with a spent token', null, 'POST', '/api/v1/auth/logout', { refreshToken: refresh1 })).statusCode).toBe(204);
});
afterAll(async () => close?.());

/** Where a secret can show: as itself, or JSON-escaped inside a larger string. */
function occurs(haystack: string, value: string): boolean {
  return haystack.includes(value) || haystack.includes(JSON.stringify(value).slice(1, -1));
}

/** TOTP codes are six digits, which timestamps contain by chance: look for them as whole values only. */
function leaks(haystack: string, value: string): boolean {
  if (/^\d{6}$/.test(value)) return new RegExp(`(?<![0-9])${value}(?![0-9])`).test(haystack);
  return occurs(haystack, value);
}

describe('secrets', () => {
  it('the flows ran and logged (request logging at trace)', () => {
    expect(exchanges.length).toBeGreaterThan(25);
    expect(secrets.size).toBeGreaterThan(30);
    expect(logLines.length).toBeGreaterThan(exchanges.length);
    expect(logLines.some((l) => l.includes('/api/v1/auth/login'))).toBe(true);
  });

  it('never appear in the logs', () => {
    const log = logLines.join('\n');
    for (const [label, value] of secrets) expect(leaks(log, value), `${label} is in the logs`).toBe(false);
    expect(log).not.toMatch(/\$argon2id\$/);
  });

  it('appear in a response only when that response hands them out', () => {
    for (const { what, res, shows } of exchanges) {
      for (const [label, value] of secrets) {
        if (shows.includes(label)) expect(occurs(res.body, value), `${what} should show ${label}`).toBe(true);
        else expect(leaks(res.body, value), `${what} (${res.statusCode}) shows ${label}`).toBe(false);
      }
      expect(res.body, what).not.toMatch(/\$argon2id\$|passwordHash|tokenHash|secretSealed|codeHash/i);
      for (const [name, header] of Object.entries(res.headers)) {
        for (const [label, value] of secrets) expect(leaks(String(header), value), `${what}: header ${name} shows ${label}`).toBe(false);
      }
    }
  });

  it('are not readable from the user views: no password hash, no factor secret', () => {
    for (const what of ['me', 'get user', 'list users', 'MFA factors', 'pending invitations', 'invite']) {
      const ex = exchanges.find((e) => e.what === what)!;
      expect(ex.res.statusCode, what).toBeLessThan(300);
      expect(ex.res.body, what).not.toMatch(/password|secret|token/i);
    }
  });
});
