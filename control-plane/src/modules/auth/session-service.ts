import { createHash, randomBytes } from 'node:crypto';
import { and, eq, isNull } from 'drizzle-orm';
import { AppError, newId } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { tenants } from '../../db/schema/tenants.js';
import { authSessions, refreshTokens, users } from '../../db/schema/users.js';
import { ACCESS_TOKEN_TTL_SECONDS } from './access-tokens.js';
import type { AccessClaims, AccessTokens } from './access-tokens.js';

/** Where a login came from; stored on the session. */
export interface SessionMeta {
  ip: string | null;
  userAgent: string | null;
}

/** The token response of login, refresh and MFA completion (spec "Auth and API keys"). */
export interface TokenResponse {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  /** Seconds until the access token expires. */
  expiresIn: number;
  mfaRequired: false;
}

/** Why a session ended (`auth_sessions.revoked_reason`). */
export type SessionEndReason = 'logout' | 'reuse_detected' | 'deactivated' | 'password_changed' | 'mfa_changed' | 'admin';

/** The drizzle handle or a transaction of it, so callers can revoke inside their own transaction. */
export type DbExecutor = Db | Parameters<Parameters<Db['transaction']>[0]>[0];

/** SHA-256 (hex) of an opaque token: only this is stored. */
export function hashOpaqueToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new opaque token: 256 random bits, base64url. */
export function newOpaqueToken(): string {
  return randomBytes(32).toString('base64url');
}

const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{20,200}$/;

export interface SessionServiceDeps {
  db: Db;
  tokens: AccessTokens;
  now?: () => number;
  /** Life of one refresh token (ms); each refresh issues a new one. */
  refreshTokenTtlMs: number;
  /** Absolute life of a session (ms), however often it is refreshed. */
  sessionMaxAgeMs: number;
}

type RefreshOutcome =
  | { kind: 'ok'; claims: AccessClaims }
  | { kind: 'refused'; detail: string };

/**
 * Login sessions. A session is one login; its refresh tokens form one family: each is
 * single use, and presenting a spent one ends the whole session (reuse detection: one of
 * the two holders is not the user). Access tokens carry the session id, and the
 * authenticator checks the session on every request, so ending a session cuts off its
 * access tokens at the next request.
 */
export class SessionService {
  private readonly db: Db;
  private readonly tokens: AccessTokens;
  private readonly now: () => number;
  private readonly refreshTokenTtlMs: number;
  private readonly sessionMaxAgeMs: number;

  constructor(deps: SessionServiceDeps) {
    this.db = deps.db;
    this.tokens = deps.tokens;
    this.now = deps.now ?? Date.now;
    this.refreshTokenTtlMs = deps.refreshTokenTtlMs;
    this.sessionMaxAgeMs = deps.sessionMaxAgeMs;
  }

  /**
   * Starts a session for a user whose credentials (and MFA, if any) were checked: creates
   * the session and its first refresh token, sets `users.last_login_at`, and returns the
   * token pair. Refuses (401 `invalid-credentials`) a user who is not active or whose
   * tenant is not.
   */
  async startSession(userId: string, meta: SessionMeta): Promise<TokenResponse> {
    const nowMs = this.now();
    const now = new Date(nowMs);
    const sessionId = newId('ses', nowMs);
    const refreshToken = newOpaqueToken();
    const user = await this.db.transaction(async (tx) => {
      const [u] = await tx
        .select({ id: users.id, tenantId: users.tenantId, role: users.role, status: users.status, tenantStatus: tenants.status })
        .from(users)
        .innerJoin(tenants, eq(tenants.id, users.tenantId))
        .where(eq(users.id, userId));
      if (!u || u.status !== 'active' || u.tenantStatus !== 'active') return null;
      const sessionExpiresAt = new Date(nowMs + this.sessionMaxAgeMs);
      await tx.insert(authSessions).values({ id: sessionId, userId: u.id, tenantId: u.tenantId, createdAt: now, expiresAt: sessionExpiresAt, ip: meta.ip, userAgent: meta.userAgent?.slice(0, 500) ?? null });
      await tx.insert(refreshTokens).values({ id: newId('rt', nowMs), sessionId, tokenHash: hashOpaqueToken(refreshToken), createdAt: now, expiresAt: this.refreshExpiry(nowMs, sessionExpiresAt) });
      await tx.update(users).set({ lastLoginAt: now }).where(eq(users.id, u.id));
      return u;
    });
    if (!user) throw new AppError('invalid-credentials', 'Invalid email or password.');
    return this.respond(await this.tokens.issue({ userId: user.id, tenantId: user.tenantId, role: user.role, sessionId }), refreshToken);
  }

  /**
   * Exchanges a refresh token for a new pair, in one transaction that marks it used: of two
   * concurrent uses only one wins; the other, like any later use, counts as reuse and ends
   * the session (every token of its family dies). 401 `invalid-token` when refused.
   */
  async refresh(refreshToken: string): Promise<TokenResponse> {
    if (!OPAQUE_TOKEN.test(refreshToken)) throw new AppError('invalid-token', 'The refresh token is unknown or has expired. Log in again.');
    const nowMs = this.now();
    const now = new Date(nowMs);
    const next = newOpaqueToken();
    const outcome = await this.db.transaction(async (tx): Promise<RefreshOutcome> => {
      // The row lock serialises concurrent uses of one token: the second sees usedAt set.
      const [row] = await tx
        .select({
          id: refreshTokens.id,
          sessionId: refreshTokens.sessionId,
          usedAt: refreshTokens.usedAt,
          expiresAt: refreshTokens.expiresAt,
          sessionRevokedAt: authSessions.revokedAt,
          sessionExpiresAt: authSessions.expiresAt,
          userId: users.id,
          tenantId: users.tenantId,
          role: users.role,
          status: users.status,
          tenantStatus: tenants.status,
        })
        .from(refreshTokens)
        .innerJoin(authSessions, eq(authSessions.id, refreshTokens.sessionId))
        .innerJoin(users, eq(users.id, authSessions.userId))
        .innerJoin(tenants, eq(tenants.id, users.tenantId))
        .where(eq(refreshTokens.tokenHash, hashOpaqueToken(refreshToken)))
        .for('update', { of: refreshTokens });
      if (!row) return { kind: 'refused', detail: 'The refresh token is unknown or has expired. Log in again.' };
      if (row.sessionRevokedAt) return { kind: 'refused', detail: 'The session has ended (logged out or revoked). Log in again.' };
      if (row.usedAt) {
        await this.revokeSessionIn(tx, row.sessionId, 'reuse_detected', now);
        return { kind: 'refused', detail: 'This refresh token was already used, so its session has been ended for safety. Log in again.' };
      }
      if (row.expiresAt.getTime() <= nowMs || row.sessionExpiresAt.getTime() <= nowMs) {
        return { kind: 'refused', detail: 'The refresh token is unknown or has expired. Log in again.' };
      }
      if (row.status !== 'active' || row.tenantStatus !== 'active') {
        await this.revokeSessionIn(tx, row.sessionId, 'deactivated', now);
        return { kind: 'refused', detail: 'The session has ended (logged out or revoked). Log in again.' };
      }
      await tx.update(refreshTokens).set({ usedAt: now }).where(eq(refreshTokens.id, row.id));
      await tx.insert(refreshTokens).values({ id: newId('rt', nowMs), sessionId: row.sessionId, tokenHash: hashOpaqueToken(next), createdAt: now, expiresAt: this.refreshExpiry(nowMs, row.sessionExpiresAt) });
      await tx.update(authSessions).set({ lastRefreshedAt: now }).where(eq(authSessions.id, row.sessionId));
      return { kind: 'ok', claims: { userId: row.userId, tenantId: row.tenantId, role: row.role, sessionId: row.sessionId } };
    });
    if (outcome.kind === 'refused') throw new AppError('invalid-token', outcome.detail);
    // Signed after commit: loading the signing key may need a connection of its own.
    return this.respond(await this.tokens.issue(outcome.claims), next);
  }

  /**
   * Ends the session a refresh token belongs to (used or not: logging out with a stale
   * token still ends the session). False when the token is unknown.
   */
  async logout(refreshToken: string): Promise<boolean> {
    if (!OPAQUE_TOKEN.test(refreshToken)) return false;
    const [row] = await this.db.select({ sessionId: refreshTokens.sessionId }).from(refreshTokens).where(eq(refreshTokens.tokenHash, hashOpaqueToken(refreshToken)));
    if (!row) return false;
    await this.endSession(row.sessionId, 'logout');
    return true;
  }

  /** Ends the session of a valid (unexpired, correctly signed) access token. False when the token is not valid. */
  async logoutAccessToken(accessToken: string): Promise<boolean> {
    const verified = await this.tokens.verify(accessToken);
    if (!verified.ok) return false;
    await this.endSession(verified.claims.sessionId, 'logout');
    return true;
  }

  /** Ends one session (its refresh tokens fail, its access tokens stop at the next request). False when already ended or unknown. */
  async endSession(sessionId: string, reason: SessionEndReason): Promise<boolean> {
    return this.revokeSessionIn(this.db, sessionId, reason, new Date(this.now()));
  }

  /**
   * Ends every live session of a user (deactivation, password change): their refresh
   * tokens fail and their access tokens are refused at the next request. Pass a
   * transaction to do it inside the caller's. Returns how many sessions ended.
   */
  async revokeUserSessions(userId: string, reason: SessionEndReason, executor: DbExecutor = this.db): Promise<number> {
    const res = await executor
      .update(authSessions)
      .set({ revokedAt: new Date(this.now()), revokedReason: reason })
      .where(and(eq(authSessions.userId, userId), isNull(authSessions.revokedAt)))
      .returning({ id: authSessions.id });
    return res.length;
  }

  private async revokeSessionIn(executor: DbExecutor, sessionId: string, reason: SessionEndReason, at: Date): Promise<boolean> {
    const res = await executor
      .update(authSessions)
      .set({ revokedAt: at, revokedReason: reason })
      .where(and(eq(authSessions.id, sessionId), isNull(authSessions.revokedAt)))
      .returning({ id: authSessions.id });
    return res.length > 0;
  }

  private refreshExpiry(nowMs: number, sessionExpiresAt: Date): Date {
    return new Date(Math.min(nowMs + this.refreshTokenTtlMs, sessionExpiresAt.getTime()));
  }

  private respond(accessToken: string, refreshToken: string): TokenResponse {
    return { accessToken, refreshToken, tokenType: 'Bearer', expiresIn: ACCESS_TOKEN_TTL_SECONDS, mfaRequired: false };
  }
}
