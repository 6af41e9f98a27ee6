import { randomInt } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Role } from '../src/db/schema/users.js';
import { totpCode, totpStep } from '../src/modules/mfa/totp.js';
import { createTenant, createTestApp, isolatedDatabase } from './helpers.js';
import type { TestApp, TestTenant } from './helpers.js';
import { insertUser } from './users-fixtures.js';

/** Where the test app's WebAuthn relying party lives (PUBLIC_URL). */
export const ORIGIN = 'https://app.example.test';
export const RP_ID = 'app.example.test';

export interface MfaWorld extends TestApp {
  tenant: TestTenant;
  /** The app's clock (ms); tests move it by whole TOTP steps. */
  clock: { ms: number };
  /** POST/GET… as a bearer (user access token or API key) or without one. */
  req(bearer: string | null, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown): Promise<LightMyRequestResponse>;
}

/** The real app on the run's database with a movable clock, and a tenant of its own. */
export async function mfaWorld(): Promise<MfaWorld> {
  // Start mid-step, so ±1 step around "now" never straddles a boundary by accident.
  const clock = { ms: (totpStep(Date.now()) * 30 + 15) * 1000 };
  // A database of its own: JWT signing keys are sealed with the file's TEST_SECRET_KEY, which
  // another test file (another random key) could not open from a shared database.
  const iso = await isolatedDatabase();
  const t = await createTestApp({ database: iso.database, now: () => clock.ms, env: { PUBLIC_URL: ORIGIN, RATE_LIMIT_ANONYMOUS: '100000' } });
  const tenant = await createTenant(t.database);
  // An address of its own: the per-address login throttle and anonymous rate-limit window
  // live in the shared database, so other test files' traffic must not count here (or ours there).
  const remoteAddress = `10.${randomInt(256)}.${randomInt(256)}.${1 + randomInt(254)}`;
  const req: MfaWorld['req'] = (bearer, method, url, body) =>
    t.app.inject({
      method,
      url,
      remoteAddress,
      headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
  const close = async () => {
    await t.close();
    await iso.drop();
  };
  return { ...t, close, tenant, clock, req };
}

export interface MfaUser {
  id: string;
  email: string;
  password: string;
  /** From a login before any factor was enrolled. */
  accessToken: string;
  refreshToken: string;
}

/** A user with a password (argon2id, as accept and bootstrap store it), logged in once. */
export async function newUser(w: MfaWorld, role: Role = 'TenantUser'): Promise<MfaUser> {
  const { id, email, password } = await insertUser(w.database, w.tenant.tenantId, { role, firstName: 'Mia', lastName: 'Fa' });
  const res = await w.req(null, 'POST', '/api/v1/auth/login', { email, password });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().mfaRequired).toBe(false);
  return { id, email, password, accessToken: res.json().accessToken, refreshToken: res.json().refreshToken };
}

/** The password step of a login that must ask for a second factor: its mfaToken and methods. */
export async function passwordStep(w: MfaWorld, u: MfaUser): Promise<{ mfaToken: string; mfaMethods: string[] }> {
  const res = await w.req(null, 'POST', '/api/v1/auth/login', { email: u.email, password: u.password });
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  expect(body).toMatchObject({ mfaRequired: true, accessToken: null, refreshToken: null });
  return { mfaToken: body.mfaToken, mfaMethods: body.mfaMethods };
}

/** Enrols and confirms TOTP for the user; returns the secret and the recovery codes. */
export async function enrolTotp(w: MfaWorld, u: MfaUser): Promise<{ secret: string; recoveryCodes: string[] | null }> {
  const start = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp');
  expect(start.statusCode, start.body).toBe(201);
  const { secret } = start.json();
  const confirm = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp/confirm', { code: codeAt(secret, w.clock.ms) });
  expect(confirm.statusCode, confirm.body).toBe(200);
  return { secret, recoveryCodes: confirm.json().recoveryCodes };
}

/** The TOTP code of the step `stepOffset` steps from `ms`. */
export function codeAt(secret: string, ms: number, stepOffset = 0): string {
  return totpCode(secret, totpStep(ms) + stepOffset);
}

/** The access token of a token response works on a user route. */
export async function expectWorkingTokens(w: MfaWorld, res: LightMyRequestResponse): Promise<void> {
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  expect(body).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, mfaRequired: false });
  expect(typeof body.refreshToken).toBe('string');
  const me = await w.req(body.accessToken, 'GET', '/api/v1/users/me/mfa');
  expect(me.statusCode, me.body).toBe(200);
}
