import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recoveryCodes, totpFactors } from '../../src/db/schema/users.js';
import { hashRecoveryCode } from '../../src/modules/mfa/recovery-codes.js';
import { codeAt, enrolTotp, expectWorkingTokens, mfaWorld, newUser, passwordStep } from '../mfa-fixtures.js';
import type { MfaWorld } from '../mfa-fixtures.js';

let w: MfaWorld;
const STEP_MS = 30_000;

beforeAll(async () => {
  w = await mfaWorld();
});
afterAll(async () => {
  await w.close();
});

describe('TOTP enrolment', () => {
  it('enrols with a sealed secret, confirms with a first code and hands out 10 recovery codes once', async () => {
    const u = await newUser(w);
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json()).toEqual({ mfaEnabled: false, totp: null, webauthn: [], recoveryCodesRemaining: 0 });

    const start = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp');
    expect(start.statusCode).toBe(201);
    const { secret, otpauthUri } = start.json();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const uri = new URL(otpauthUri);
    expect(uri.searchParams.get('secret')).toBe(secret);
    expect(decodeURIComponent(uri.pathname)).toBe(`/Voice Agent Platform:${u.email}`);
    const [row] = await w.database.db.select().from(totpFactors).where(eq(totpFactors.userId, u.id));
    expect(row!.secretSealed).not.toContain(secret);
    expect(row!.confirmedAt).toBeNull();

    // Unconfirmed: login still needs no second factor.
    expect((await w.req(null, 'POST', '/api/v1/auth/login', { email: u.email, password: u.password })).json().mfaRequired).toBe(false);

    const wrong = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp/confirm', { code: codeAt(secret, w.clock.ms, 3) });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().errors).toEqual([{ field: 'code', message: expect.stringContaining('not the current code') }]);

    const confirm = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp/confirm', { code: codeAt(secret, w.clock.ms) });
    expect(confirm.statusCode, confirm.body).toBe(200);
    const { recoveryCodes: codes } = confirm.json();
    expect(codes).toHaveLength(10);
    const stored = await w.database.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, u.id));
    expect(stored.map((r) => r.codeHash).sort()).toEqual(codes.map(hashRecoveryCode).sort());
    expect(JSON.stringify(stored)).not.toContain(codes[0]);

    const list = (await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json();
    expect(list).toMatchObject({ mfaEnabled: true, totp: { confirmed: true }, webauthn: [], recoveryCodesRemaining: 10 });
    expect(JSON.stringify(list)).not.toContain(secret);

    // A confirmed factor is not replaced behind the user's back.
    expect((await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp')).statusCode).toBe(409);
    expect((await passwordStep(w, u)).mfaMethods).toEqual(['totp']);
  });

  it('names the field of a malformed code and refuses confirming without an enrolment', async () => {
    const u = await newUser(w);
    const bad = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp/confirm', { code: '12ab56' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().errors[0].field).toBe('code');
    const missing = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp/confirm', {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors[0].field).toBe('code');
    expect((await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/totp/confirm', { code: '123456' })).statusCode).toBe(409);
  });

  it('is for signed-in users: API keys get 403, no credential 401', async () => {
    expect((await w.req(w.tenant.key, 'GET', '/api/v1/users/me/mfa')).statusCode).toBe(403);
    expect((await w.req(w.tenant.key, 'POST', '/api/v1/users/me/mfa/totp')).statusCode).toBe(403);
    expect((await w.req(null, 'GET', '/api/v1/users/me/mfa')).statusCode).toBe(401);
  });

  it('removing the last factor turns MFA off and deletes the recovery codes', async () => {
    const u = await newUser(w);
    await enrolTotp(w, u);
    expect((await w.req(u.accessToken, 'DELETE', '/api/v1/users/me/mfa/totp')).statusCode).toBe(204);
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json()).toEqual({ mfaEnabled: false, totp: null, webauthn: [], recoveryCodesRemaining: 0 });
    expect(await w.database.db.select().from(recoveryCodes).where(eq(recoveryCodes.userId, u.id))).toEqual([]);
    const login = await w.req(null, 'POST', '/api/v1/auth/login', { email: u.email, password: u.password });
    expect(login.json().mfaRequired).toBe(false);
    expect((await w.req(u.accessToken, 'DELETE', '/api/v1/users/me/mfa/totp')).statusCode).toBe(404);
    expect((await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/recovery-codes')).statusCode).toBe(409);
  });
});

describe('changes that weaken MFA', () => {
  it('need a login of at most 15 minutes ago, not just a live session', async () => {
    const u = await newUser(w);
    const { secret } = await enrolTotp(w, u);
    w.clock.ms += 16 * 60_000;
    // The session lives on through refresh, but its login is 16 minutes old.
    const refreshed = await w.req(null, 'POST', '/api/v1/auth/refresh', { refreshToken: u.refreshToken });
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const old = refreshed.json().accessToken;
    expect((await w.req(old, 'GET', '/api/v1/users/me/mfa')).statusCode).toBe(200);
    for (const [method, url] of [['DELETE', '/api/v1/users/me/mfa/totp'], ['POST', '/api/v1/users/me/mfa/recovery-codes'], ['DELETE', '/api/v1/users/me/mfa/webauthn/AAAA']] as const) {
      const res = await w.req(old, method, url);
      expect(res.statusCode, `${method} ${url}`).toBe(403);
      expect(res.json().type).toMatch(/\/errors\/recent-login-required$/);
    }
    expect((await w.req(old, 'GET', '/api/v1/users/me/mfa')).json()).toMatchObject({ mfaEnabled: true, recoveryCodesRemaining: 10 });

    const t = await passwordStep(w, u);
    const fresh = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code: codeAt(secret, w.clock.ms) });
    expect(fresh.statusCode, fresh.body).toBe(200);
    expect((await w.req(fresh.json().accessToken, 'DELETE', '/api/v1/users/me/mfa/totp')).statusCode).toBe(204);
  });
});

describe('login with TOTP', () => {
  it('finishes a login with the next code, and refuses the same code again (replay)', async () => {
    const u = await newUser(w);
    const { secret } = await enrolTotp(w, u);

    // The code that confirmed enrolment is spent: it cannot log in.
    const first = await passwordStep(w, u);
    const replayOfConfirm = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: first.mfaToken, method: 'totp', code: codeAt(secret, w.clock.ms) });
    expect(replayOfConfirm.statusCode).toBe(401);
    expect(replayOfConfirm.json().type).toMatch(/\/errors\/mfa-failed$/);

    w.clock.ms += STEP_MS;
    const code = codeAt(secret, w.clock.ms);
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: first.mfaToken, method: 'totp', code }));

    // The completed mfaToken is dead, and the code is spent for any other login too.
    expect((await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: first.mfaToken, code })).statusCode).toBe(401);
    const second = await passwordStep(w, u);
    const replay = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: second.mfaToken, code });
    expect(replay.statusCode).toBe(401);
    expect(replay.json().detail).toContain('already used');
  });

  it('accepts one step of clock drift either way and refuses two', async () => {
    const u = await newUser(w);
    const { secret } = await enrolTotp(w, u);
    w.clock.ms += 4 * STEP_MS;
    const t = await passwordStep(w, u);
    for (const offset of [-2, 2]) {
      const res = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code: codeAt(secret, w.clock.ms, offset) });
      expect(res.statusCode, `offset ${offset}`).toBe(401);
    }
    // One step behind (a slow phone clock) works...
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code: codeAt(secret, w.clock.ms, -1) }));
    // ...and one step ahead (a fast one).
    const t2 = await passwordStep(w, u);
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t2.mfaToken, code: codeAt(secret, w.clock.ms, 1) }));
    // After the +1 step was used, the current step is "earlier" and refused.
    const t3 = await passwordStep(w, u);
    expect((await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t3.mfaToken, code: codeAt(secret, w.clock.ms) })).statusCode).toBe(401);
  });

  it('allows 5 attempts per mfaToken; then even the right code is refused', async () => {
    const u = await newUser(w);
    const { secret } = await enrolTotp(w, u);
    w.clock.ms += STEP_MS;
    const t = await passwordStep(w, u);
    const right = codeAt(secret, w.clock.ms);
    const wrong = right === '000000' ? '111111' : '000000';
    const details: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code: wrong });
      expect(res.statusCode).toBe(401);
      details.push(res.json().detail);
    }
    expect(details[0]).toContain('4 attempts left');
    expect(details[4]).toContain('no attempts left');
    const dead = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code: right });
    expect(dead.statusCode).toBe(401);
    expect(dead.json().detail).toContain('log in again');
    // A new login gets a new token, and the code (never accepted) still works.
    const t2 = await passwordStep(w, u);
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t2.mfaToken, code: right }));
  });

  it('one code, sent by two logins at once, logs in only once', async () => {
    const u = await newUser(w);
    const { secret } = await enrolTotp(w, u);
    w.clock.ms += STEP_MS;
    const code = codeAt(secret, w.clock.ms);
    const [a, b] = [await passwordStep(w, u), await passwordStep(w, u)];
    const results = await Promise.all([a, b].map((t) => w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 401]);
  });

  it('refuses unknown tokens and validates the body', async () => {
    const unknown = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: 'x'.repeat(43), code: '123456' });
    expect(unknown.statusCode).toBe(401);
    const missing = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { code: '123456' });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors[0].field).toBe('mfaToken');
    const method = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: 'x'.repeat(43), method: 'sms', code: '123456' });
    expect(method.statusCode).toBe(422);
    expect(method.json().errors[0].field).toBe('method');
  });
});

describe('recovery codes', () => {
  it('log in once each, in any case and spacing; regenerating replaces them all', async () => {
    const u = await newUser(w);
    const { recoveryCodes: codes } = await enrolTotp(w, u);
    const code = codes![3]!;

    const t = await passwordStep(w, u);
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, method: 'recovery_code', code: code.toUpperCase().replace(/-/g, ' ') }));
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json().recoveryCodesRemaining).toBe(9);

    // Spent: refused on the next login, even sent as method totp (a non-6-digit code is a recovery code).
    const t2 = await passwordStep(w, u);
    const again = await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t2.mfaToken, method: 'totp', code });
    expect(again.statusCode).toBe(401);
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t2.mfaToken, code: codes![4]! }));

    const regen = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/recovery-codes');
    expect(regen.statusCode).toBe(200);
    const fresh: string[] = regen.json().recoveryCodes;
    expect(fresh).toHaveLength(10);
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json().recoveryCodesRemaining).toBe(10);
    const t3 = await passwordStep(w, u);
    expect((await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t3.mfaToken, code: codes![5]! })).statusCode).toBe(401);
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t3.mfaToken, code: fresh[0]! }));
  });

  it('one code, used twice at once, logs in only once', async () => {
    const u = await newUser(w);
    const { recoveryCodes: codes } = await enrolTotp(w, u);
    const [a, b] = [await passwordStep(w, u), await passwordStep(w, u)];
    const results = await Promise.all([a, b].map((t) => w.req(null, 'POST', '/api/v1/auth/mfa/verify', { mfaToken: t.mfaToken, code: codes![0]! })));
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 401]);
  });
});
