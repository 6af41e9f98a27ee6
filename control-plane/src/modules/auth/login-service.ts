import { randomBytes } from 'node:crypto';
import { hash, verify } from '@node-rs/argon2';
import { eq, sql } from 'drizzle-orm';
import { AppError } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { users } from '../../db/schema/users.js';
import type { LoginThrottle } from './login-throttle.js';
import { mfaMethodsOf } from './mfa-tokens.js';
import type { MfaTokens } from './mfa-tokens.js';
import type { SessionMeta, SessionService, TokenResponse } from './session-service.js';

/** The second-step answer of a login when the user has confirmed MFA factors. */
export interface MfaChallengeResponse {
  mfaRequired: true;
  mfaToken: string;
  mfaMethods: Array<'totp' | 'fido2'>;
  accessToken: null;
  refreshToken: null;
}

export type LoginResponse = TokenResponse | MfaChallengeResponse;

const INVALID = 'Invalid email or password.';

/**
 * Password login (argon2id). Every refusal for a wrong email, a wrong password, a user
 * without a password or a deactivated user is the same 401 after the same work: an
 * unknown email is verified against a dummy hash made with the same parameters.
 */
export class LoginService {
  private dummyHash: Promise<string> | null = null;

  constructor(private readonly deps: { db: Db; sessions: SessionService; mfaTokens: MfaTokens; throttle: LoginThrottle }) {
    // Made now, so the first unknown email is not answered slower than a known one.
    void this.dummy().catch(() => undefined);
  }

  /** Verifies the password and starts a session, or issues an `mfaToken` when the user has confirmed factors. */
  async login(email: string, password: string, meta: SessionMeta & { ip: string }): Promise<LoginResponse> {
    const verdict = await this.deps.throttle.begin(email, meta.ip);
    if (!verdict.allowed) {
      throw new AppError('account-locked', `Too many failed logins. Try again in ${verdict.retryAfterSec} s.`, { headers: { 'Retry-After': String(verdict.retryAfterSec) } });
    }
    const [user] = await this.deps.db
      .select({ id: users.id, passwordHash: users.passwordHash, status: users.status })
      .from(users)
      .where(eq(sql`lower(${users.email})`, email.trim().toLowerCase()));
    const stored = user?.passwordHash ?? (await this.dummy());
    const ok = (await verify(stored, password).catch(() => false)) && user !== undefined && user.passwordHash !== null && user.status === 'active';
    if (!ok || !user) throw new AppError('invalid-credentials', INVALID);
    await this.deps.throttle.succeeded(verdict.ticket);

    const methods = await mfaMethodsOf(this.deps.db, user.id);
    if (methods.length > 0) {
      const mfaToken = await this.deps.mfaTokens.issue(user.id, meta);
      return { mfaRequired: true, mfaToken, mfaMethods: methods, accessToken: null, refreshToken: null };
    }
    return this.deps.sessions.startSession(user.id, meta);
  }

  /** An argon2id hash of a random password with the default parameters, made once. */
  private dummy(): Promise<string> {
    this.dummyHash ??= hash(randomBytes(24).toString('base64url'), { algorithm: 2 /* argon2id */ });
    return this.dummyHash;
  }
}
