import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { webauthnCredentials } from '../../src/db/schema/users.js';
import { ORIGIN, RP_ID, enrolTotp, expectWorkingTokens, mfaWorld, newUser, passwordStep } from '../mfa-fixtures.js';
import type { MfaUser, MfaWorld } from '../mfa-fixtures.js';
import { SoftwareAuthenticator } from '../software-authenticator.js';

let w: MfaWorld;

beforeAll(async () => {
  w = await mfaWorld();
});
afterAll(async () => {
  await w.close();
});

/** Registers a fresh software authenticator for the user through the API. */
async function enrolKey(u: MfaUser, name = 'YubiKey'): Promise<{ key: SoftwareAuthenticator; body: Record<string, unknown> }> {
  const key = new SoftwareAuthenticator();
  const options = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration-options');
  expect(options.statusCode, options.body).toBe(200);
  const res = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { name, response: key.register(options.json().challenge, { origin: ORIGIN, rpId: RP_ID }) });
  expect(res.statusCode, res.body).toBe(201);
  return { key, body: res.json() };
}

async function challenge(mfaToken: string): Promise<string> {
  const res = await w.req(null, 'POST', '/api/v1/auth/mfa/fido2/challenge', { mfaToken });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().challenge;
}

function verify(mfaToken: string, assertion: object) {
  return w.req(null, 'POST', '/api/v1/auth/mfa/fido2/verify', { mfaToken, ...assertion });
}

describe('FIDO2 registration', () => {
  it('verifies a real attestation, stores the credential and turns MFA on with recovery codes', async () => {
    const u = await newUser(w);
    const options = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration-options');
    expect(options.json()).toMatchObject({ rp: { id: RP_ID, name: 'Voice Agent Platform' }, user: { name: u.email }, attestation: 'none' });
    const key = new SoftwareAuthenticator();
    const res = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { name: 'Desk key', response: key.register(options.json().challenge, { origin: ORIGIN, rpId: RP_ID }) });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ credential: { id: key.id, name: 'Desk key', transports: ['usb'], lastUsedAt: null }, mfaEnabled: true });
    expect(res.json().recoveryCodes).toHaveLength(10);

    const list = (await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json();
    expect(list).toMatchObject({ mfaEnabled: true, totp: null, recoveryCodesRemaining: 10, webauthn: [{ id: key.id, name: 'Desk key' }] });
    expect((await passwordStep(w, u)).mfaMethods).toEqual(['fido2']);

    // A second factor does not replace the codes the user already holds.
    const { secret: _ignored, recoveryCodes } = await enrolTotp(w, u);
    expect(recoveryCodes).toBeNull();
    expect((await passwordStep(w, u)).mfaMethods).toEqual(['totp', 'fido2']);
  });

  it('refuses an attestation made for another origin or RP ID, and a challenge used twice', async () => {
    const u = await newUser(w);
    const key = new SoftwareAuthenticator();
    for (const made of [{ origin: 'https://evil.example', rpId: RP_ID }, { origin: ORIGIN, rpId: 'evil.example' }]) {
      const options = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration-options');
      const res = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { response: key.register(options.json().challenge, made) });
      expect(res.statusCode, JSON.stringify(made)).toBe(422);
      expect(res.json().errors[0].field).toBe('response');
    }
    const options = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration-options');
    const response = key.register(options.json().challenge, { origin: ORIGIN, rpId: RP_ID });
    expect((await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { response })).statusCode).toBe(201);
    const again = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { response });
    expect(again.statusCode).toBe(409);
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json().webauthn).toHaveLength(1);
  });

  it('refuses a registration whose options are older than 5 minutes', async () => {
    const u = await newUser(w);
    const key = new SoftwareAuthenticator();
    const options = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration-options');
    w.clock.ms += 5 * 60_000 + 1000;
    const res = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { response: key.register(options.json().challenge, { origin: ORIGIN, rpId: RP_ID }) });
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toContain('expired');
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json().webauthn).toEqual([]);
  });

  it('names the bad field of a malformed registration', async () => {
    const u = await newUser(w);
    const res = await w.req(u.accessToken, 'POST', '/api/v1/users/me/mfa/webauthn/registration', { response: { id: 'a', rawId: 'a', type: 'public-key', response: { clientDataJSON: 'not base64url!', attestationObject: 'AA' } } });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field)).toEqual(['response.response.clientDataJSON']);
  });

  it('removing the last credential turns MFA off', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    expect((await w.req(u.accessToken, 'DELETE', `/api/v1/users/me/mfa/webauthn/${key.id}`)).statusCode).toBe(204);
    expect((await w.req(u.accessToken, 'GET', '/api/v1/users/me/mfa')).json()).toEqual({ mfaEnabled: false, totp: null, webauthn: [], recoveryCodesRemaining: 0 });
    expect((await w.req(u.accessToken, 'DELETE', `/api/v1/users/me/mfa/webauthn/${key.id}`)).statusCode).toBe(404);
    expect((await w.req(null, 'POST', '/api/v1/auth/login', { email: u.email, password: u.password })).json().mfaRequired).toBe(false);
  });

  it("cannot remove another user's credential", async () => {
    const owner = await newUser(w);
    const other = await newUser(w);
    const { key } = await enrolKey(owner);
    expect((await w.req(other.accessToken, 'DELETE', `/api/v1/users/me/mfa/webauthn/${key.id}`)).statusCode).toBe(404);
    expect((await w.req(owner.accessToken, 'GET', '/api/v1/users/me/mfa')).json().webauthn).toHaveLength(1);
  });
});

describe('login with FIDO2', () => {
  it('finishes a login with a signed assertion over the bound challenge and stores the counter', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    const t = await passwordStep(w, u);
    const opts = (await w.req(null, 'POST', '/api/v1/auth/mfa/fido2/challenge', { mfaToken: t.mfaToken })).json();
    expect(opts).toMatchObject({ rpId: RP_ID, userVerification: 'preferred', allowCredentials: [{ id: key.id, type: 'public-key' }] });
    await expectWorkingTokens(w, await verify(t.mfaToken, key.assert(opts.challenge, { origin: ORIGIN, rpId: RP_ID })));
    const [row] = await w.database.db.select().from(webauthnCredentials).where(eq(webauthnCredentials.id, key.id));
    expect(row!.counter).toBe(1);
    expect(row!.lastUsedAt).not.toBeNull();

    // The browser's JSON form works as well.
    const t2 = await passwordStep(w, u);
    const a = key.assert(await challenge(t2.mfaToken), { origin: ORIGIN, rpId: RP_ID });
    const response = { id: a.credentialId, rawId: a.credentialId, type: 'public-key', response: { clientDataJSON: a.clientDataJSON, authenticatorData: a.authenticatorData, signature: a.signature }, clientExtensionResults: {} };
    await expectWorkingTokens(w, await w.req(null, 'POST', '/api/v1/auth/mfa/fido2/verify', { mfaToken: t2.mfaToken, response }));
  });

  it('refuses an assertion made for another origin or another RP ID', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    const t = await passwordStep(w, u);
    const wrongOrigin = await verify(t.mfaToken, key.assert(await challenge(t.mfaToken), { origin: 'https://app.example.test.evil.example', rpId: RP_ID }));
    expect(wrongOrigin.statusCode).toBe(401);
    expect(wrongOrigin.json().type).toMatch(/\/errors\/mfa-failed$/);
    const wrongRp = await verify(t.mfaToken, key.assert(await challenge(t.mfaToken), { origin: ORIGIN, rpId: 'example.test' }));
    expect(wrongRp.statusCode).toBe(401);
    // Neither left a trace: the right assertion still logs in.
    await expectWorkingTokens(w, await verify(t.mfaToken, key.assert(await challenge(t.mfaToken), { origin: ORIGIN, rpId: RP_ID })));
  });

  it('a challenge works once: a replayed assertion and a reused challenge are refused', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    const t = await passwordStep(w, u);
    const c = await challenge(t.mfaToken);
    const wrongKey = new SoftwareAuthenticator();
    wrongKey.credentialId.set(key.credentialId);
    // A bad signature spends the challenge...
    expect((await verify(t.mfaToken, wrongKey.assert(c, { origin: ORIGIN, rpId: RP_ID }))).statusCode).toBe(401);
    // ...so a good assertion over the same challenge no longer passes.
    const reused = await verify(t.mfaToken, key.assert(c, { origin: ORIGIN, rpId: RP_ID }));
    expect(reused.statusCode).toBe(401);
    expect(reused.json().detail).toContain('No FIDO2 challenge is pending');

    const t2 = await passwordStep(w, u);
    const good = key.assert(await challenge(t2.mfaToken), { origin: ORIGIN, rpId: RP_ID });
    await expectWorkingTokens(w, await verify(t2.mfaToken, good));
    // The same assertion again: on a new login (its own challenge) the old challenge does not match.
    const t3 = await passwordStep(w, u);
    await challenge(t3.mfaToken);
    expect((await verify(t3.mfaToken, good)).statusCode).toBe(401);
  });

  it('refuses a challenge from another mfaToken', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    const [a, b] = [await passwordStep(w, u), await passwordStep(w, u)];
    const ca = await challenge(a.mfaToken);
    await challenge(b.mfaToken);
    expect((await verify(b.mfaToken, key.assert(ca, { origin: ORIGIN, rpId: RP_ID }))).statusCode).toBe(401);
  });

  it('refuses a signature counter that does not increase', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    const t = await passwordStep(w, u);
    key.counter = 10;
    await expectWorkingTokens(w, await verify(t.mfaToken, key.assert(await challenge(t.mfaToken), { origin: ORIGIN, rpId: RP_ID })));
    const t2 = await passwordStep(w, u);
    for (const counter of [5, 11]) {
      const res = await verify(t2.mfaToken, key.assert(await challenge(t2.mfaToken), { origin: ORIGIN, rpId: RP_ID, counter }));
      expect(res.statusCode, `counter ${counter} after 11`).toBe(401);
    }
    const [row] = await w.database.db.select().from(webauthnCredentials).where(eq(webauthnCredentials.id, key.id));
    expect(row!.counter).toBe(11);
    await expectWorkingTokens(w, await verify(t2.mfaToken, key.assert(await challenge(t2.mfaToken), { origin: ORIGIN, rpId: RP_ID, counter: 12 })));
  });

  it('counts FIDO2 tries against the 5 attempts of the mfaToken', async () => {
    const u = await newUser(w);
    const { key } = await enrolKey(u);
    const t = await passwordStep(w, u);
    for (let i = 0; i < 5; i++) {
      expect((await verify(t.mfaToken, key.assert(await challenge(t.mfaToken), { origin: 'https://evil.example', rpId: RP_ID }))).statusCode).toBe(401);
    }
    expect((await w.req(null, 'POST', '/api/v1/auth/mfa/fido2/challenge', { mfaToken: t.mfaToken })).statusCode).toBe(401);
  });

  it('asks for the flat fields or a response, naming each missing one', async () => {
    const res = await w.req(null, 'POST', '/api/v1/auth/mfa/fido2/verify', { mfaToken: 'x'.repeat(43), credentialId: 'AAAA' });
    expect(res.statusCode).toBe(422);
    expect(res.json().errors.map((e: { field: string }) => e.field).sort()).toEqual(['authenticatorData', 'clientDataJSON', 'signature']);
  });

  it('has no challenge for a user without FIDO2 credentials', async () => {
    const u = await newUser(w);
    await enrolTotp(w, u);
    const t = await passwordStep(w, u);
    const res = await w.req(null, 'POST', '/api/v1/auth/mfa/fido2/challenge', { mfaToken: t.mfaToken });
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toContain('no FIDO2 credential');
  });
});
