import { and, asc, count, eq, isNull, or, sql } from 'drizzle-orm';
import { newId } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { authSessions, recoveryCodes, totpFactors, users, webauthnCredentials, webauthnRegistrations } from '../../db/schema/users.js';

/** A stored TOTP factor (secret sealed). */
export type TotpRow = typeof totpFactors.$inferSelect;
/** A stored WebAuthn credential (COSE public key base64url, signature counter). */
export type CredentialRow = typeof webauthnCredentials.$inferSelect;
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** The user fields enrolment shows to authenticators (labels, WebAuthn user entity). */
export interface MfaUser {
  id: string;
  email: string;
  firstName: string;
  lastName: string;
}

/**
 * The MFA tables of one user: TOTP factor, WebAuthn credentials and pending registration,
 * recovery codes. Changes that may switch MFA on or off run in {@link changeFactors}, which
 * locks the user's row so two requests cannot both see "first factor" or "last factor".
 */
export class MfaRepository {
  constructor(private readonly db: Db) {}

  async findUser(userId: string): Promise<MfaUser | undefined> {
    const [row] = await this.db
      .select({ id: users.id, email: users.email, firstName: users.firstName, lastName: users.lastName })
      .from(users)
      .where(eq(users.id, userId));
    return row;
  }

  /** When the user's login session started (the password and, with MFA, the second factor), if it is theirs. */
  async sessionStartedAt(userId: string, sessionId: string): Promise<Date | undefined> {
    const [row] = await this.db
      .select({ createdAt: authSessions.createdAt })
      .from(authSessions)
      .where(and(eq(authSessions.id, sessionId), eq(authSessions.userId, userId)));
    return row?.createdAt;
  }

  async findTotp(userId: string): Promise<TotpRow | undefined> {
    const [row] = await this.db.select().from(totpFactors).where(eq(totpFactors.userId, userId));
    return row;
  }

  async listCredentials(userId: string): Promise<CredentialRow[]> {
    return this.db.select().from(webauthnCredentials).where(eq(webauthnCredentials.userId, userId)).orderBy(asc(webauthnCredentials.createdAt), asc(webauthnCredentials.id));
  }

  async findCredential(userId: string, credentialId: string): Promise<CredentialRow | undefined> {
    const [row] = await this.db
      .select()
      .from(webauthnCredentials)
      .where(and(eq(webauthnCredentials.userId, userId), eq(webauthnCredentials.id, credentialId)));
    return row;
  }

  async unusedRecoveryCodes(userId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: count() })
      .from(recoveryCodes)
      .where(and(eq(recoveryCodes.userId, userId), isNull(recoveryCodes.usedAt)));
    return row?.n ?? 0;
  }

  /**
   * Stores a new, unconfirmed TOTP secret, replacing an earlier unconfirmed one. False when
   * the user already has a confirmed factor (it must be removed first).
   */
  async putPendingTotp(userId: string, secretSealed: string): Promise<boolean> {
    const rows = await this.db
      .insert(totpFactors)
      .values({ userId, secretSealed })
      .onConflictDoUpdate({
        target: totpFactors.userId,
        set: { secretSealed, lastUsedStep: null, createdAt: sql`now()` },
        setWhere: isNull(totpFactors.confirmedAt),
      })
      .returning({ userId: totpFactors.userId });
    return rows.length > 0;
  }

  /**
   * Runs `change` in a transaction holding the user's row lock, so two requests cannot both
   * see "first factor" or "last factor". MFA is on while the user has a confirmed TOTP
   * factor or any WebAuthn credential. When `change` turns it on, the recovery codes become
   * `codeHashes`; when it turns it off, they are deleted; both in the same transaction.
   */
  async changeFactors<T>(userId: string, codeHashes: string[], change: (tx: Tx) => Promise<T>): Promise<{ result: T; turnedOn: boolean }> {
    return this.db.transaction(async (tx) => {
      await lockUser(tx, userId);
      const wasOn = await mfaOn(tx, userId);
      const result = await change(tx);
      const isOn = await mfaOn(tx, userId);
      if (wasOn && !isOn) await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
      if (!wasOn && isOn) await replaceRecoveryCodes(tx, userId, codeHashes);
      return { result, turnedOn: !wasOn && isOn };
    });
  }

  /** Replaces all recovery codes of the user with these hashes, if MFA is on; false if it is off. */
  async regenerateRecoveryCodes(userId: string, codeHashes: string[]): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await lockUser(tx, userId);
      if (!(await mfaOn(tx, userId))) return false;
      await replaceRecoveryCodes(tx, userId, codeHashes);
      return true;
    });
  }

  /** Confirms the pending factor at `step` (which also becomes its last used step). */
  static async confirmTotp(tx: Tx, userId: string, step: number): Promise<boolean> {
    const rows = await tx
      .update(totpFactors)
      .set({ confirmedAt: sql`now()`, lastUsedStep: step })
      .where(and(eq(totpFactors.userId, userId), isNull(totpFactors.confirmedAt), or(isNull(totpFactors.lastUsedStep), sql`${totpFactors.lastUsedStep} < ${step}`)))
      .returning({ userId: totpFactors.userId });
    return rows.length > 0;
  }

  static async deleteTotp(tx: Tx, userId: string): Promise<boolean> {
    const rows = await tx.delete(totpFactors).where(eq(totpFactors.userId, userId)).returning({ userId: totpFactors.userId });
    return rows.length > 0;
  }

  /** Inserts a credential; false when a credential with this id is already registered (to anyone). */
  static async insertCredential(tx: Tx, values: typeof webauthnCredentials.$inferInsert): Promise<CredentialRow | undefined> {
    const [row] = await tx.insert(webauthnCredentials).values(values).onConflictDoNothing({ target: webauthnCredentials.id }).returning();
    return row;
  }

  static async deleteCredential(tx: Tx, userId: string, credentialId: string): Promise<boolean> {
    const rows = await tx
      .delete(webauthnCredentials)
      .where(and(eq(webauthnCredentials.userId, userId), eq(webauthnCredentials.id, credentialId)))
      .returning({ id: webauthnCredentials.id });
    return rows.length > 0;
  }

  /** Remembers the challenge of a registration in progress (one per user; a new one replaces it). */
  async putRegistrationChallenge(userId: string, challenge: string, expiresAt: Date): Promise<void> {
    await this.db
      .insert(webauthnRegistrations)
      .values({ userId, challenge, expiresAt })
      .onConflictDoUpdate({ target: webauthnRegistrations.userId, set: { challenge, expiresAt } });
  }

  /** Takes (deletes) the pending registration challenge if it has not expired at `now`: single use. */
  async takeRegistrationChallenge(userId: string, now: Date): Promise<string | undefined> {
    const [row] = await this.db
      .delete(webauthnRegistrations)
      .where(eq(webauthnRegistrations.userId, userId))
      .returning({ challenge: webauthnRegistrations.challenge, expiresAt: webauthnRegistrations.expiresAt });
    return row && row.expiresAt > now ? row.challenge : undefined;
  }

  /** Spends one unused recovery code of the user; false when none matches (or it was spent). */
  async spendRecoveryCode(userId: string, codeHash: string): Promise<boolean> {
    const rows = await this.db
      .update(recoveryCodes)
      .set({ usedAt: sql`now()` })
      .where(and(eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, codeHash), isNull(recoveryCodes.usedAt)))
      .returning({ id: recoveryCodes.id });
    return rows.length > 0;
  }

  /**
   * Records a login with TOTP at `step`, if the step is later than the last one used
   * (compare-and-set: of two requests with the same code only one succeeds).
   */
  async useTotpStep(userId: string, step: number): Promise<boolean> {
    const rows = await this.db
      .update(totpFactors)
      .set({ lastUsedStep: step })
      .where(and(eq(totpFactors.userId, userId), sql`${totpFactors.confirmedAt} is not null`, or(isNull(totpFactors.lastUsedStep), sql`${totpFactors.lastUsedStep} < ${step}`)))
      .returning({ userId: totpFactors.userId });
    return rows.length > 0;
  }

  /**
   * Stores the counter of a verified assertion if the stored one is still `previous`, so
   * of two concurrent assertions checked against one stored counter only one passes (the
   * library has already refused a counter that does not increase).
   */
  async useCredential(credentialId: string, previous: number, next: number): Promise<boolean> {
    const rows = await this.db
      .update(webauthnCredentials)
      .set({ counter: next, lastUsedAt: sql`now()` })
      .where(and(eq(webauthnCredentials.id, credentialId), eq(webauthnCredentials.counter, previous)))
      .returning({ id: webauthnCredentials.id });
    return rows.length > 0;
  }
}

async function lockUser(tx: Tx, userId: string): Promise<void> {
  await tx.execute(sql`select 1 from ${users} where ${users.id} = ${userId} for update`);
}

async function replaceRecoveryCodes(tx: Tx, userId: string, codeHashes: string[]): Promise<void> {
  await tx.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId));
  await tx.insert(recoveryCodes).values(codeHashes.map((codeHash) => ({ id: newId('rc'), userId, codeHash })));
}

async function mfaOn(db: Db | Tx, userId: string): Promise<boolean> {
  const res = await db.execute<{ on: boolean }>(
    sql`select exists (select 1 from ${totpFactors} where ${totpFactors.userId} = ${userId} and ${totpFactors.confirmedAt} is not null)
        or exists (select 1 from ${webauthnCredentials} where ${webauthnCredentials.userId} = ${userId}) as on`,
  );
  return res.rows[0]?.on === true;
}
