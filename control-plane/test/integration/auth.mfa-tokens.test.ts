import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MFA_MAX_ATTEMPTS, MfaTokens } from '../../src/modules/auth/mfa-tokens.js';
import { createTenant, createTestApp } from '../helpers.js';
import type { TestApp, TestTenant } from '../helpers.js';
import { movableClock } from '../session-fixtures.js';
import { insertUser } from '../users-fixtures.js';

const clock = movableClock();
let t: TestApp;
let tenant: TestTenant;
let tokens: MfaTokens;

beforeAll(async () => {
  t = await createTestApp({ now: clock.now });
  tenant = await createTenant(t.database);
  tokens = new MfaTokens(t.database.db, { now: clock.now });
});
afterAll(async () => t.close());

const meta = { ip: '10.0.0.1', userAgent: 'tests' };

describe('MfaTokens', () => {
  it('stores only the hash and finds the challenge by the token', async () => {
    const user = await insertUser(t.database, tenant.tenantId);
    const token = await tokens.issue(user.id, meta);
    const found = await tokens.find(token);
    expect(found).toMatchObject({ userId: user.id, attempts: 0, webauthnChallenge: null, ip: '10.0.0.1' });
    const row = await t.database.pool.query('select token_hash from mfa_challenges where id = $1', [found!.id]);
    expect(row.rows[0].token_hash).not.toBe(token);
    expect(await tokens.find('x'.repeat(43))).toBeNull();
  });

  it('allows 5 attempts, then the token is spent', async () => {
    const user = await insertUser(t.database, tenant.tenantId);
    const token = await tokens.issue(user.id, meta);
    const id = (await tokens.find(token))!.id;
    const allowed = await Promise.all(Array.from({ length: MFA_MAX_ATTEMPTS + 3 }, () => tokens.recordAttempt(id)));
    expect(allowed.filter(Boolean)).toHaveLength(MFA_MAX_ATTEMPTS);
    expect(await tokens.find(token)).toBeNull();
  });

  it('completes one login only, and not after 5 minutes', async () => {
    const user = await insertUser(t.database, tenant.tenantId);
    const token = await tokens.issue(user.id, meta);
    const id = (await tokens.find(token))!.id;
    const winners = await Promise.all([tokens.consume(id), tokens.consume(id), tokens.consume(id)]);
    expect(winners.filter(Boolean)).toHaveLength(1);
    expect(await tokens.find(token)).toBeNull();

    const late = await tokens.issue(user.id, meta);
    const lateId = (await tokens.find(late))!.id;
    clock.advance(5 * 60_000);
    expect(await tokens.find(late)).toBeNull();
    expect(await tokens.recordAttempt(lateId)).toBe(false);
    expect(await tokens.consume(lateId)).toBe(false);
  });

  it('hands out a bound WebAuthn challenge once', async () => {
    const user = await insertUser(t.database, tenant.tenantId);
    const token = await tokens.issue(user.id, meta);
    const id = (await tokens.find(token))!.id;
    expect(await tokens.takeWebauthnChallenge(id)).toBeNull();
    expect(await tokens.bindWebauthnChallenge(id, 'challenge-1')).toBe(true);
    expect((await tokens.find(token))!.webauthnChallenge).toBe('challenge-1');
    const taken = await Promise.all([tokens.takeWebauthnChallenge(id), tokens.takeWebauthnChallenge(id), tokens.takeWebauthnChallenge(id)]);
    expect(taken.filter((c) => c !== null)).toEqual(['challenge-1']);
  });
});
