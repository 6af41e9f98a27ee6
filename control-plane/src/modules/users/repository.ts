import { and, asc, count, desc, eq, getTableColumns, gt, ilike, isNull, or, sql } from 'drizzle-orm';
import type { SQL } from 'drizzle-orm';
import { AppError } from '@vap/shared';
import type { Db } from '../../db/database.js';
import { pageWithTotal } from '../../db/page-query.js';
import { isUniqueViolation } from '../../db/errors.js';
import { tenants } from '../../db/schema/tenants.js';
import { authSessions, invitations, users } from '../../db/schema/users.js';
import type { NotificationPreferences } from '../../db/schema/users.js';
import { offsetOf } from '../../http/pagination.js';
import type { ListInvitationsQuery, ListUsersQuery } from './schemas.js';

export type UserRow = typeof users.$inferSelect;
/** A user row with `mfaEnabled` worked out from their factors. */
export type UserRecord = UserRow & { mfaEnabled: boolean };
export type InvitationRow = typeof invitations.$inferSelect;
type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];

/** What a user change may set (a subset of the row). */
export type UserChange = Partial<Pick<UserRow, 'role' | 'firstName' | 'lastName' | 'canManageApiKeys' | 'canViewBilling' | 'canDeleteConversations' | 'status' | 'deactivatedAt'>>;

// A confirmed TOTP factor or any FIDO2 credential (the mfa module's tables). The outer
// column is written out qualified: drizzle renders `users.id` as a bare "id" in a
// one-table select, which inside the subquery would mean webauthn_credentials.id.
const MFA_ENABLED = sql<boolean>`(exists (select 1 from totp_factors f where f.user_id = "users"."id" and f.confirmed_at is not null)
  or exists (select 1 from webauthn_credentials w where w.user_id = "users"."id"))`.as('mfa_enabled');

const USER_SORT = { createdAt: users.createdAt, email: sql`lower(${users.email})`, lastName: sql`lower(${users.lastName})`, lastLoginAt: users.lastLoginAt } as const;

// Serialises invitations to one address within a tenant, so two concurrent invites cannot both pass the pending check.
const INVITE_LOCK_NAMESPACE = 7_361_003;

function likePattern(s: string): string {
  return `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Users and invitations of a tenant. Every query is scoped by tenant; another tenant's rows are never found. */
export class UserRepository {
  constructor(private readonly db: Db) {}

  async list(tenantId: string, q: ListUsersQuery): Promise<{ rows: UserRecord[]; total: number }> {
    const where: SQL[] = [eq(users.tenantId, tenantId)];
    if (q.role) where.push(eq(users.role, q.role));
    if (q.status) where.push(eq(users.status, q.status));
    if (q.search) {
      const p = likePattern(q.search);
      where.push(or(ilike(users.email, p), ilike(users.firstName, p), ilike(users.lastName, p), ilike(sql`${users.firstName} || ' ' || ${users.lastName}`, p))!);
    }
    const cond = and(...where);
    const column = USER_SORT[q.sortBy];
    const [rows, totals] = await Promise.all([
      this.db
        .select({ ...getTableColumns(users), mfaEnabled: MFA_ENABLED })
        .from(users)
        .where(cond)
        .orderBy(q.sortOrder === 'asc' ? sql`${column} asc nulls first` : sql`${column} desc nulls last`, q.sortOrder === 'asc' ? asc(users.id) : desc(users.id))
        .limit(q.pageSize)
        .offset(offsetOf(q)),
      this.db.select({ n: count() }).from(users).where(cond),
    ]);
    return { rows, total: totals[0]?.n ?? 0 };
  }

  async find(tenantId: string, id: string): Promise<UserRecord | undefined> {
    const [row] = await this.db
      .select({ ...getTableColumns(users), mfaEnabled: MFA_ENABLED })
      .from(users)
      .where(and(eq(users.tenantId, tenantId), eq(users.id, id)));
    return row;
  }

  /**
   * Changes one user in a transaction that first locks the tenant's active Admins and then
   * the user, so rules about "the last Admin" hold under concurrent changes. `decide` sees
   * the current row and the ids of the active Admins and returns the change, or throws.
   * With `revokeSessionsReason` every live session of the user ends in the same transaction.
   * Undefined when the user is not in the tenant.
   */
  async change(
    tenantId: string,
    id: string,
    decide: (current: UserRow, activeAdminIds: readonly string[]) => UserChange,
    opts: { revokeSessionsReason?: string } = {},
  ): Promise<UserRecord | undefined> {
    const changed = await this.db.transaction(async (tx) => {
      const admins = await tx
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.tenantId, tenantId), eq(users.role, 'Admin'), eq(users.status, 'active')))
        .orderBy(users.id)
        .for('update');
      const [current] = await tx
        .select()
        .from(users)
        .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
        .for('update');
      if (!current) return false;
      const change = decide(current, admins.map((a) => a.id));
      await tx.update(users).set({ ...change, updatedAt: sql`now()` }).where(eq(users.id, id));
      if (opts.revokeSessionsReason) await revokeSessions(tx, id, opts.revokeSessionsReason);
      return true;
    });
    return changed ? this.find(tenantId, id) : undefined;
  }

  /** The caller's own profile fields; notification preferences are merged key by key. */
  async updateProfile(tenantId: string, id: string, patch: { firstName?: string; lastName?: string; timezone?: string; notificationPreferences?: Partial<NotificationPreferences> }): Promise<UserRecord | undefined> {
    const set: Record<string, unknown> = { updatedAt: sql`now()` };
    if (patch.firstName !== undefined) set.firstName = patch.firstName;
    if (patch.lastName !== undefined) set.lastName = patch.lastName;
    if (patch.timezone !== undefined) set.timezone = patch.timezone;
    if (patch.notificationPreferences !== undefined) set.notificationPreferences = sql`${users.notificationPreferences} || ${JSON.stringify(patch.notificationPreferences)}::jsonb`;
    const res = await this.db
      .update(users)
      .set(set)
      .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
      .returning({ id: users.id });
    return res.length > 0 ? this.find(tenantId, id) : undefined;
  }

  /**
   * Stores an invitation unless its address already belongs to a user (of any tenant:
   * login is by email alone, so addresses are unique across the platform) or to a pending,
   * unexpired invitation of this tenant; both are 409 naming the address.
   */
  async insertInvitation(row: typeof invitations.$inferInsert, now: Date): Promise<InvitationRow> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(${INVITE_LOCK_NAMESPACE}, hashtext(${row.tenantId} || ':' || lower(${row.email})))`);
      const [user] = await tx
        .select({ id: users.id })
        .from(users)
        .where(sql`lower(${users.email}) = lower(${row.email})`);
      if (user) throw new AppError('conflict', `A user with the email ${row.email} already exists.`);
      const [pending] = await tx
        .select({ id: invitations.id })
        .from(invitations)
        .where(and(eq(invitations.tenantId, row.tenantId), eq(invitations.status, 'pending'), gt(invitations.expiresAt, now), sql`lower(${invitations.email}) = lower(${row.email})`));
      if (pending) throw new AppError('conflict', `A pending invitation for ${row.email} already exists (${pending.id}); revoke it to send a new one.`);
      const [out] = await tx.insert(invitations).values(row).returning();
      return out!;
    });
  }

  async markInvitationSent(id: string, at: Date): Promise<InvitationRow | undefined> {
    const [row] = await this.db.update(invitations).set({ sentAt: at }).where(eq(invitations.id, id)).returning();
    return row;
  }

  async deleteInvitation(id: string): Promise<void> {
    await this.db.delete(invitations).where(eq(invitations.id, id));
  }

  /** Pending invitations that have not expired, newest first (or oldest with `sortOrder=asc`). */
  async listPendingInvitations(tenantId: string, q: ListInvitationsQuery, now: Date): Promise<{ rows: InvitationRow[]; total: number }> {
    const cond = and(eq(invitations.tenantId, tenantId), eq(invitations.status, 'pending'), gt(invitations.expiresAt, now));
    const order = q.sortOrder === 'asc' ? asc : desc;
    return pageWithTotal(this.db, invitations, { where: cond, orderBy: [order(invitations.createdAt), order(invitations.id)] }, q);
  }

  /** Revokes a pending invitation (its link stops working at once). False when it is not pending in this tenant. */
  async revokeInvitation(tenantId: string, id: string): Promise<boolean> {
    const res = await this.db
      .update(invitations)
      .set({ status: 'revoked' })
      .where(and(eq(invitations.tenantId, tenantId), eq(invitations.id, id), eq(invitations.status, 'pending')))
      .returning({ id: invitations.id });
    return res.length > 0;
  }

  async tenantName(tenantId: string): Promise<string | undefined> {
    const [row] = await this.db.select({ name: tenants.name }).from(tenants).where(eq(tenants.id, tenantId));
    return row?.name;
  }

  async findInvitationByToken(tokenHash: string): Promise<InvitationRow | undefined> {
    const [row] = await this.db.select().from(invitations).where(eq(invitations.tokenHash, tokenHash));
    return row;
  }

  /**
   * Accepts an invitation: in one transaction, re-reads it locked, lets `check` refuse it
   * (used, revoked, expired), creates the user and marks the invitation accepted, so the
   * token works once even when presented twice at the same moment.
   */
  async acceptInvitation(tokenHash: string, check: (inv: InvitationRow | undefined) => InvitationRow, user: Pick<typeof users.$inferInsert, 'id' | 'passwordHash'>, now: Date): Promise<UserRecord> {
    let tenantId = '';
    try {
      await this.db.transaction(async (tx) => {
        const [locked] = await tx.select().from(invitations).where(eq(invitations.tokenHash, tokenHash)).for('update');
        const inv = check(locked);
        tenantId = inv.tenantId;
        await tx.insert(users).values({
          id: user.id,
          tenantId: inv.tenantId,
          email: inv.email,
          firstName: inv.firstName,
          lastName: inv.lastName,
          role: inv.role,
          passwordHash: user.passwordHash,
          invitedBy: inv.invitedBy,
          createdAt: now,
          updatedAt: now,
        });
        await tx.update(invitations).set({ status: 'accepted', acceptedAt: now }).where(eq(invitations.id, inv.id));
      });
    } catch (err) {
      if (isUniqueViolation(err, 'users_email_key')) throw new AppError('conflict', 'A user with this email already exists; sign in instead.');
      throw err;
    }
    return (await this.find(tenantId, user.id))!;
  }
}

/** Ends every live session of a user (their access tokens are refused at the next request, refresh tokens fail). */
async function revokeSessions(tx: Tx, userId: string, reason: string): Promise<void> {
  await tx
    .update(authSessions)
    .set({ revokedAt: sql`now()`, revokedReason: reason })
    .where(and(eq(authSessions.userId, userId), isNull(authSessions.revokedAt)));
}
