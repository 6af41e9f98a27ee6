import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '@vap/shared';
import type { Database } from '../../src/db/database.js';
import { purgeAuthState } from '../../src/modules/auth/auth-purge.js';
import { createTenant, isolatedDatabase } from '../helpers.js';
import { insertUser } from '../users-fixtures.js';

// Its own database: the purge is global and runs at a chosen time.
let iso: Awaited<ReturnType<typeof isolatedDatabase>>;
let database: Database;

beforeAll(async () => {
  iso = await isolatedDatabase();
  database = iso.database;
});
afterAll(async () => iso.drop());

const DAY = 86_400_000;

describe('purgeAuthState', () => {
  it('deletes sessions ended over 30 days ago with their tokens, old MFA challenges and idle throttles, and keeps the rest', async () => {
    const tenant = await createTenant(database);
    const user = await insertUser(database, tenant.tenantId);
    const now = Date.UTC(2030, 0, 31);
    const at = (daysAgo: number) => new Date(now - daysAgo * DAY);
    const session = async (revokedDaysAgo: number | null, expiresInDays: number) => {
      const id = newId('ses');
      await database.pool.query('insert into auth_sessions (id, user_id, tenant_id, created_at, expires_at, revoked_at) values ($1, $2, $3, $4, $5, $6)', [
        id, user.id, tenant.tenantId, at(60), at(-expiresInDays), revokedDaysAgo === null ? null : at(revokedDaysAgo),
      ]);
      await database.pool.query('insert into refresh_tokens (id, session_id, token_hash, expires_at, used_at) values ($1, $2, $3, $4, $5)', [newId('rt'), id, newId('rt'), at(-1), at(40)]);
      return id;
    };
    const oldRevoked = await session(31, 5);
    const recentlyRevoked = await session(2, 5);
    const live = await session(null, 5);
    const longExpired = await session(null, -31);
    const recentlyExpired = await session(null, -1);

    const challenge = async (expiredDaysAgo: number) => {
      const id = newId('mfa');
      await database.pool.query('insert into mfa_challenges (id, user_id, token_hash, created_at, expires_at) values ($1, $2, $3, $4, $4)', [id, user.id, newId('mfa'), at(expiredDaysAgo)]);
      return id;
    };
    const oldChallenge = await challenge(31);
    const recentChallenge = await challenge(1);

    const throttle = (key: string, windowMinutesAgo: number, lockedMinutesAhead: number | null) =>
      database.pool.query('insert into login_throttles (key, failures, window_started_at, locked_until) values ($1, 3, $2, $3)', [
        key, new Date(now - windowMinutesAgo * 60_000), lockedMinutesAhead === null ? null : new Date(now + lockedMinutesAhead * 60_000),
      ]);
    await throttle('email:idle@x.example', 20, null);
    await throttle('email:counting@x.example', 5, null);
    await throttle('email:locked@x.example', 20, 5);

    const result = await purgeAuthState(database.pool, now, 15 * 60_000);
    expect(result).toEqual({ sessions: 2, mfaChallenges: 1, loginThrottles: 1 });

    const sessions = (await database.pool.query('select id from auth_sessions')).rows.map((r) => r.id);
    expect(sessions.sort()).toEqual([recentlyRevoked, live, recentlyExpired].sort());
    expect(sessions).not.toContain(oldRevoked);
    expect(sessions).not.toContain(longExpired);
    const tokens = (await database.pool.query('select session_id from refresh_tokens')).rows.map((r) => r.session_id);
    expect(tokens.sort()).toEqual([recentlyRevoked, live, recentlyExpired].sort());
    const challenges = (await database.pool.query('select id from mfa_challenges')).rows.map((r) => r.id);
    expect(challenges).toEqual([recentChallenge]);
    expect(challenges).not.toContain(oldChallenge);
    const throttles = (await database.pool.query('select key from login_throttles order by key')).rows.map((r) => r.key);
    expect(throttles).toEqual(['email:counting@x.example', 'email:locked@x.example']);
  });
});
