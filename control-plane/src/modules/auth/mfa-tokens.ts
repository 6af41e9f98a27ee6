import { and, eq, gt, isNull, lt, sql } from 'drizzle-orm';
import { newId } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { mfaChallenges } from '../../db/schema/users.js';
import { hashOpaqueToken, newOpaqueToken } from './session-service.js';
import type { SessionMeta } from './session-service.js';

/** Life of an `mfaToken` (ms): the second login step must finish within 5 minutes. */
export const MFA_TOKEN_TTL_MS = 5 * 60_000;
/** Code or assertion attempts one `mfaToken` allows. */
export const MFA_MAX_ATTEMPTS = 5;

/** A usable MFA challenge: the password was right, the second factor is pending. */
export interface MfaChallenge {
  id: string;
  userId: string;
  /** Attempts used so far (< {@link MFA_MAX_ATTEMPTS}). */
  attempts: number;
  expiresAt: Date;
  /** Base64url WebAuthn challenge bound to this token, if one was issued and not yet taken. */
  webauthnChallenge: string | null;
  ip: string | null;
  userAgent: string | null;
}

const OPAQUE_TOKEN = /^[A-Za-z0-9_-]{20,200}$/;

/**
 * The `mfaToken` of a login that needs a second factor: opaque (256 bits), stored as its
 * SHA-256, valid 5 minutes, at most 5 attempts, usable to complete one login only. The
 * MFA module (TOTP, FIDO2, recovery codes) uses it like this: {@link find} the challenge,
 * {@link recordAttempt} before checking a code, {@link consume} on success and then
 * `SessionService.startSession`.
 */
export class MfaTokens {
  private readonly now: () => number;

  constructor(
    private readonly db: Db,
    opts: { now?: () => number } = {},
  ) {
    this.now = opts.now ?? Date.now;
  }

  /** Issues a new `mfaToken` for a user whose password was right. Returns the token (shown once). */
  async issue(userId: string, meta: SessionMeta): Promise<string> {
    const nowMs = this.now();
    const token = newOpaqueToken();
    await this.db.insert(mfaChallenges).values({
      id: newId('mfa', nowMs),
      userId,
      tokenHash: hashOpaqueToken(token),
      createdAt: new Date(nowMs),
      expiresAt: new Date(nowMs + MFA_TOKEN_TTL_MS),
      ip: meta.ip,
      userAgent: meta.userAgent?.slice(0, 500) ?? null,
    });
    return token;
  }

  /** The challenge of a token that is still usable (known, unexpired, not completed, attempts left), else null. */
  async find(token: string): Promise<MfaChallenge | null> {
    if (!OPAQUE_TOKEN.test(token)) return null;
    const [row] = await this.db
      .select()
      .from(mfaChallenges)
      .where(and(eq(mfaChallenges.tokenHash, hashOpaqueToken(token)), this.usable()));
    if (!row) return null;
    return { id: row.id, userId: row.userId, attempts: row.attempts, expiresAt: row.expiresAt, webauthnChallenge: row.webauthnChallenge, ip: row.ip, userAgent: row.userAgent };
  }

  /**
   * Counts one attempt, atomically: true when the attempt may go ahead (the token was usable
   * and had attempts left), false when it is spent, expired or completed. Call before
   * checking the code, so concurrent guesses cannot exceed the limit.
   */
  async recordAttempt(id: string): Promise<boolean> {
    const res = await this.db
      .update(mfaChallenges)
      .set({ attempts: sql`${mfaChallenges.attempts} + 1` })
      .where(and(eq(mfaChallenges.id, id), this.usable()))
      .returning({ id: mfaChallenges.id });
    return res.length > 0;
  }

  /**
   * Marks the challenge completed: true for exactly one caller while it is unexpired and
   * not completed (the token then cannot finish another login). Attempts are not checked
   * here: the attempt that succeeded was counted by {@link recordAttempt}.
   */
  async consume(id: string): Promise<boolean> {
    const now = new Date(this.now());
    const res = await this.db
      .update(mfaChallenges)
      .set({ completedAt: now })
      .where(and(eq(mfaChallenges.id, id), isNull(mfaChallenges.completedAt), gt(mfaChallenges.expiresAt, now)))
      .returning({ id: mfaChallenges.id });
    return res.length > 0;
  }

  /** Binds a (new) WebAuthn challenge to a usable token, replacing any earlier one. False when the token is not usable. */
  async bindWebauthnChallenge(id: string, challenge: string): Promise<boolean> {
    const res = await this.db
      .update(mfaChallenges)
      .set({ webauthnChallenge: challenge })
      .where(and(eq(mfaChallenges.id, id), this.usable()))
      .returning({ id: mfaChallenges.id });
    return res.length > 0;
  }

  /** Takes the bound WebAuthn challenge (single use: it is cleared in the same statement), or null. */
  async takeWebauthnChallenge(id: string): Promise<string | null> {
    const res = await this.db.execute<{ challenge: string }>(sql`
      update mfa_challenges m set webauthn_challenge = null
        from (select id, webauthn_challenge from mfa_challenges where id = ${id} for update) old
       where m.id = old.id and old.webauthn_challenge is not null
         and m.completed_at is null and m.expires_at > ${new Date(this.now())}
      returning old.webauthn_challenge as challenge`);
    return res.rows[0]?.challenge ?? null;
  }

  private usable() {
    const now = new Date(this.now());
    return and(isNull(mfaChallenges.completedAt), gt(mfaChallenges.expiresAt, now), lt(mfaChallenges.attempts, MFA_MAX_ATTEMPTS));
  }
}

/** Whether a user has confirmed second factors, and which (`totp`, `fido2`), read straight from the MFA tables. */
export async function mfaMethodsOf(db: Db, userId: string): Promise<Array<'totp' | 'fido2'>> {
  const res = await db.execute<{ totp: boolean; fido2: boolean }>(sql`
    select exists (select 1 from totp_factors where user_id = ${userId} and confirmed_at is not null) as totp,
           exists (select 1 from webauthn_credentials where user_id = ${userId}) as fido2`);
  const row = res.rows[0];
  const methods: Array<'totp' | 'fido2'> = [];
  if (row?.totp) methods.push('totp');
  if (row?.fido2) methods.push('fido2');
  return methods;
}
