import { describe, expect, it } from 'vitest';
import { ACCESS_TOKEN_TTL_SECONDS } from '../../src/modules/auth/access-tokens.js';
import { JwtKeys } from '../../src/modules/auth/jwt-keys.js';
import { SessionService } from '../../src/modules/auth/session-service.js';
import { SecretBox } from '../../src/secret-box.js';
import { TEST_SECRET_KEY, agentBody, call } from '../helpers.js';
import { decodeJwt, freshIp, loginOk, postFrom, sessionWorld } from '../session-fixtures.js';
import type { Tokens } from '../session-fixtures.js';
import { insertUser } from '../users-fixtures.js';

const w = sessionWorld({ plan: 'starter' });

const refresh = (token: string) => postFrom(w.t.app, freshIp(), '/api/v1/auth/refresh', { refreshToken: token });
const agentsWith = (accessToken: string) => call(w.t.app, accessToken, 'GET', '/api/v1/agents');

async function signedIn(role: 'TenantOwner' | 'TenantUser' = 'TenantOwner') {
  const user = await insertUser(w.t.database, w.tenant.tenantId, { role });
  return { user, tokens: await loginOk(w.t.app, freshIp(), user) };
}

describe('access tokens', () => {
  it('are refused once expired, with a reason saying so', async () => {
    const { tokens } = await signedIn();
    w.clock.advance((ACCESS_TOKEN_TTL_SECONDS - 10) * 1000);
    expect((await agentsWith(tokens.accessToken)).statusCode).toBe(200);
    w.clock.advance(20_000);
    const res = await agentsWith(tokens.accessToken);
    expect(res.statusCode).toBe(401);
    expect(res.json().detail).toMatch(/^Expired access token/);
  });

  it('are refused when altered or signed by a key the platform does not hold', async () => {
    const { tokens } = await signedIn();
    const [h, p, s] = tokens.accessToken.split('.');
    const payload = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8'));
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...payload, role: 'Admin' })).toString('base64url')}.${s}`;
    expect((await agentsWith(forged)).json().detail).toBe('Invalid access token.');
    const noneAlg = `${Buffer.from(JSON.stringify({ alg: 'none', kid: decodeJwt(tokens.accessToken).header.kid })).toString('base64url')}.${p}.x`;
    expect((await agentsWith(noneAlg)).statusCode).toBe(401);
    const otherKid = `${Buffer.from(JSON.stringify({ alg: 'ES256', kid: 'nope', typ: 'JWT' })).toString('base64url')}.${p}.${s}`;
    expect((await agentsWith(otherKid)).json().detail).toBe('Invalid access token.');
  });

  it('keep verifying after a key rotation, while new tokens carry the new kid', async () => {
    const { user, tokens: before } = await signedIn();
    const oldKid = decodeJwt(before.accessToken).header.kid;
    // Another control plane on the same database rotates.
    const other = new JwtKeys({ pool: w.t.database.pool, secrets: new SecretBox(TEST_SECRET_KEY), now: w.clock.now, retiredKeyGraceMs: 1_020_000 });
    const newKid = await other.rotate();
    expect(newKid).not.toBe(oldKid);
    expect((await agentsWith(before.accessToken)).statusCode).toBe(200);
    // This app sees the rotation once its key cache (30 s) runs out.
    w.clock.advance(31_000);
    const after = await loginOk(w.t.app, freshIp(), user);
    expect(decodeJwt(after.accessToken).header.kid).toBe(newKid);
    expect((await agentsWith(after.accessToken)).statusCode).toBe(200);
    expect((await agentsWith(before.accessToken)).statusCode).toBe(200);
    const jwks = await w.t.app.inject({ method: 'GET', url: '/api/v1/auth/jwks.json', remoteAddress: freshIp() });
    expect(jwks.statusCode).toBe(200);
    const kids = jwks.json().keys.map((k: { kid: string }) => k.kid);
    expect(kids).toEqual(expect.arrayContaining([oldKid, newKid]));
    for (const k of jwks.json().keys) {
      expect(k).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
      expect(k).not.toHaveProperty('d');
    }
    const stored = await w.t.database.pool.query('select private_jwk_sealed, retired_at from signing_keys where kid = $1', [oldKid]);
    expect(stored.rows[0].retired_at).not.toBeNull();
    expect(stored.rows[0].private_jwk_sealed).toMatch(/^v1\./);
  });

  it('follow role changes and deactivation at the next request', async () => {
    const { user, tokens } = await signedIn('TenantUser');
    expect((await call(w.t.app, tokens.accessToken, 'POST', '/api/v1/agents', agentBody())).statusCode).toBe(201);
    await w.t.database.pool.query(`update users set role = 'ReadOnly' where id = $1`, [user.id]);
    expect((await call(w.t.app, tokens.accessToken, 'POST', '/api/v1/agents', agentBody())).statusCode).toBe(403);
    expect((await agentsWith(tokens.accessToken)).statusCode).toBe(200);

    await w.t.database.pool.query(`update users set status = 'deactivated', deactivated_at = now() where id = $1`, [user.id]);
    const cut = await agentsWith(tokens.accessToken);
    expect(cut.statusCode).toBe(401);
    expect(cut.json().detail).toBe('This user is deactivated.');
    expect((await refresh(tokens.refreshToken)).statusCode).toBe(401);
  });

  it('end with the session when the user’s sessions are revoked (what deactivation does)', async () => {
    const { user, tokens } = await signedIn();
    const second = await loginOk(w.t.app, freshIp(), user);
    const sessions = new SessionService({ db: w.t.database.db, tokens: null as never, now: w.clock.now, refreshTokenTtlMs: 1, sessionMaxAgeMs: 1 });
    expect(await sessions.revokeUserSessions(user.id, 'deactivated')).toBe(2);
    for (const pair of [tokens, second]) {
      const res = await agentsWith(pair.accessToken);
      expect(res.statusCode).toBe(401);
      expect(res.json().detail).toMatch(/^The session has ended/);
      expect((await refresh(pair.refreshToken)).statusCode).toBe(401);
    }
  });

  it('count in the tenant’s rate-limit window like API keys', async () => {
    const { tokens } = await signedIn();
    const byKey = await call(w.t.app, w.tenant.key, 'GET', '/api/v1/agents');
    const byUser = await agentsWith(tokens.accessToken);
    expect(byUser.headers['x-ratelimit-limit']).toBe('60');
    expect(Number(byUser.headers['x-ratelimit-remaining'])).toBe(Number(byKey.headers['x-ratelimit-remaining']) - 1);
  });
});

describe('POST /api/v1/auth/refresh', () => {
  it('returns a new pair and spends the old refresh token', async () => {
    const { tokens } = await signedIn();
    w.clock.advance(1000);
    const res = await refresh(tokens.refreshToken);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const next = res.json<Tokens & Record<string, unknown>>();
    expect(next).toMatchObject({ tokenType: 'Bearer', expiresIn: 900, mfaRequired: false });
    expect(next.refreshToken).not.toBe(tokens.refreshToken);
    expect(decodeJwt(next.accessToken).payload.sid).toBe(decodeJwt(tokens.accessToken).payload.sid);
    expect((await agentsWith(next.accessToken)).statusCode).toBe(200);
    expect((await refresh(next.refreshToken)).statusCode).toBe(200);
  });

  it('ends the whole session when a spent token is replayed: the newest tokens die too', async () => {
    const { tokens: first } = await signedIn();
    const second = (await refresh(first.refreshToken)).json<Tokens>();
    const third = (await refresh(second.refreshToken)).json<Tokens>();
    expect((await agentsWith(third.accessToken)).statusCode).toBe(200);

    const replay = await refresh(first.refreshToken);
    expect(replay.statusCode).toBe(401);
    expect(replay.json()).toMatchObject({ type: expect.stringMatching(/\/errors\/invalid-token$/), detail: expect.stringMatching(/already used/) });
    expect((await refresh(third.refreshToken)).statusCode).toBe(401);
    expect((await agentsWith(third.accessToken)).statusCode).toBe(401);
    const sid = decodeJwt(first.accessToken).payload.sid;
    const row = await w.t.database.pool.query('select revoked_reason from auth_sessions where id = $1', [sid]);
    expect(row.rows[0].revoked_reason).toBe('reuse_detected');
  });

  it('lets exactly one of concurrent uses of one token succeed', async () => {
    const { tokens } = await signedIn();
    const answers = await Promise.all(Array.from({ length: 6 }, () => refresh(tokens.refreshToken)));
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 401, 401, 401, 401, 401]);
  });

  it('refuses an expired refresh token, and a session past its 30-day limit however often refreshed', async () => {
    const { tokens } = await signedIn();
    w.clock.advance(14 * 86_400_000 + 1000);
    expect((await refresh(tokens.refreshToken)).statusCode).toBe(401);

    let current = (await signedIn()).tokens;
    for (let i = 0; i < 2; i++) {
      w.clock.advance(13 * 86_400_000);
      const res = await refresh(current.refreshToken);
      expect(res.statusCode, `refresh ${i}`).toBe(200);
      current = res.json<Tokens>();
    }
    w.clock.advance(4 * 86_400_000);
    expect((await agentsWith(current.accessToken)).statusCode).toBe(401);
    expect((await refresh(current.refreshToken)).statusCode).toBe(401);
  });

  it('refuses unknown tokens and names a missing field', async () => {
    expect((await refresh('A'.repeat(43))).statusCode).toBe(401);
    expect((await refresh('short')).statusCode).toBe(401);
    const missing = await postFrom(w.t.app, freshIp(), '/api/v1/auth/refresh', {});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors).toEqual([expect.objectContaining({ field: 'refreshToken' })]);
  });
});

describe('POST /api/v1/auth/logout', () => {
  it('with the refresh token ends the session: refresh fails and access tokens stop at the next request', async () => {
    const { tokens } = await signedIn();
    const res = await postFrom(w.t.app, freshIp(), '/api/v1/auth/logout', { refreshToken: tokens.refreshToken });
    expect(res.statusCode, res.body).toBe(204);
    expect((await refresh(tokens.refreshToken)).statusCode).toBe(401);
    const cut = await agentsWith(tokens.accessToken);
    expect(cut.statusCode).toBe(401);
    expect(cut.json().detail).toMatch(/^The session has ended/);
    expect((await postFrom(w.t.app, freshIp(), '/api/v1/auth/logout', { refreshToken: tokens.refreshToken })).statusCode).toBe(204);
  });

  it('with only the access token ends that session and leaves the user’s other sessions alone', async () => {
    const { user, tokens } = await signedIn();
    const other = await loginOk(w.t.app, freshIp(), user);
    const res = await w.t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', remoteAddress: freshIp(), headers: { authorization: `Bearer ${tokens.accessToken}` } });
    expect(res.statusCode, res.body).toBe(204);
    expect((await agentsWith(tokens.accessToken)).statusCode).toBe(401);
    expect((await refresh(tokens.refreshToken)).statusCode).toBe(401);
    expect((await agentsWith(other.accessToken)).statusCode).toBe(200);
  });

  it('refuses an unknown refresh token and a call with neither token', async () => {
    expect((await postFrom(w.t.app, freshIp(), '/api/v1/auth/logout', { refreshToken: 'B'.repeat(43) })).statusCode).toBe(401);
    const none = await w.t.app.inject({ method: 'POST', url: '/api/v1/auth/logout', remoteAddress: freshIp() });
    expect(none.statusCode).toBe(401);
  });
});
