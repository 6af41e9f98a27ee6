import { createHash, randomBytes } from 'node:crypto';
import { hash } from '@node-rs/argon2';
import { AppError, newId, validationError } from '@vap/shared';
import type { Logger } from 'pino';
import { toPage } from '../../http/pagination.js';
import type { Mailer } from '../../mail/mailer.js';
import { mayGrant, rightsOf } from '../auth/permissions.js';
import type { Right, UserGrants } from '../auth/permissions.js';
import type { Principal } from '../auth/principal.js';
import { invitationMail } from './invitation-mail.js';
import type { InvitationRow, UserChange, UserRecord, UserRepository, UserRow } from './repository.js';
import type { AcceptInvitationInput, InviteInput, ListInvitationsQuery, ListUsersQuery, UpdateProfileInput, UpdateUserInput, UserStatus } from './schemas.js';

/** How long an invitation link works: a week covers a holiday without leaving links alive for months. */
export const INVITATION_TTL_MS = 7 * 24 * 3600 * 1000;

/** The token response of a new session (auth/session-service.ts `TokenResponse`). */
export interface SessionTokens {
  accessToken: string;
  refreshToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  mfaRequired: false;
}

/** Starts a login session for a user (auth/session-service.ts `SessionService.startSession`). */
export interface SessionStarter {
  startSession(userId: string, meta: { ip: string | null; userAgent: string | null }): Promise<SessionTokens>;
}

export function userView(u: UserRecord) {
  return {
    id: u.id,
    email: u.email,
    firstName: u.firstName,
    lastName: u.lastName,
    role: u.role,
    status: u.status as UserStatus,
    mfaEnabled: u.mfaEnabled,
    lastLoginAt: u.lastLoginAt?.toISOString() ?? null,
    createdAt: u.createdAt.toISOString(),
    invitedBy: u.invitedBy,
    permissions: { canManageApiKeys: u.canManageApiKeys, canViewBilling: u.canViewBilling, canDeleteConversations: u.canDeleteConversations },
  };
}

export function profileView(u: UserRecord) {
  return { ...userView(u), timezone: u.timezone, notificationPreferences: u.notificationPreferences };
}

function invitationView(i: InvitationRow) {
  return {
    invitationId: i.id,
    email: i.email,
    firstName: i.firstName,
    lastName: i.lastName,
    role: i.role,
    status: 'pending' as const,
    expiresAt: i.expiresAt.toISOString(),
    sentAt: i.sentAt?.toISOString() ?? null,
    invitedBy: i.invitedBy,
  };
}

/** SHA-256 (hex) of an invitation token: only this is stored. */
export function hashInvitationToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

const grantsOf = (u: UserRow): UserGrants => ({ role: u.role, canManageApiKeys: u.canManageApiKeys, canViewBilling: u.canViewBilling, canDeleteConversations: u.canDeleteConversations });

function missingRights(actor: Principal, target: UserGrants): Right[] {
  return [...rightsOf(target)].filter((r) => !actor.rights.has(r));
}

function lastAdminGuard(current: UserRow, activeAdminIds: readonly string[], what: string): void {
  const isActiveAdmin = current.role === 'Admin' && current.status === 'active';
  if (isActiveAdmin && activeAdminIds.every((id) => id === current.id)) {
    throw new AppError('invalid-state', `${current.email} is the last active Admin of this account, so they cannot be ${what}; make another user Admin first.`);
  }
}

/**
 * Users of a tenant and invitations. Rules: nobody gives a role or permission they do not
 * hold, nor changes a user more powerful than themselves; an account always keeps one
 * active Admin; deactivation ends every session at once and keeps the user's data.
 */
export class UserService {
  private readonly now: () => number;

  constructor(private readonly deps: { repo: UserRepository; mailer: Mailer; sessions: SessionStarter; publicUrl: string; log: Logger; now?: () => number }) {
    this.now = deps.now ?? Date.now;
  }

  async list(p: Principal, q: ListUsersQuery) {
    const { rows, total } = await this.deps.repo.list(p.tenantId, q);
    return toPage(rows.map(userView), total, q);
  }

  async get(p: Principal, id: string) {
    return userView(await this.require(p, id));
  }

  async me(p: Principal) {
    return profileView(await this.require(p, p.actorId));
  }

  async updateMe(p: Principal, input: UpdateProfileInput) {
    const row = await this.deps.repo.updateProfile(p.tenantId, p.actorId, input);
    if (!row) throw new AppError('not-found', 'Your user no longer exists.');
    return profileView(row);
  }

  async update(p: Principal, id: string, input: UpdateUserInput) {
    const row = await this.deps.repo.change(p.tenantId, id, (current, admins) => {
      const change: UserChange = {};
      if (input.role !== undefined) change.role = input.role;
      if (input.firstName !== undefined) change.firstName = input.firstName;
      if (input.lastName !== undefined) change.lastName = input.lastName;
      if (input.permissions) Object.assign(change, input.permissions);
      const next = { ...grantsOf(current), ...change } as UserGrants;
      if (!mayGrant(p, grantsOf(current))) throw new AppError('forbidden', `You cannot change ${current.email}: their role and permissions go beyond yours.`);
      const missing = missingRights(p, next);
      if (missing.length > 0) throw new AppError('forbidden', `You cannot give rights you do not hold: ${missing.join(', ')}.`);
      if (next.role !== 'Admin') lastAdminGuard(current, admins, 'given another role');
      return change;
    });
    if (!row) throw notFound(id);
    return userView(row);
  }

  /** Deactivates a user: no more logins, every session ended in the same transaction, data kept. Repeating it is harmless. */
  async deactivate(p: Principal, id: string) {
    if (id === p.actorId) throw new AppError('invalid-state', 'You cannot deactivate yourself; ask another Admin.');
    const row = await this.deps.repo.change(
      p.tenantId,
      id,
      (current, admins) => {
        if (!mayGrant(p, grantsOf(current))) throw new AppError('forbidden', `You cannot deactivate ${current.email}: their role and permissions go beyond yours.`);
        lastAdminGuard(current, admins, 'deactivated');
        return current.status === 'deactivated' ? {} : { status: 'deactivated', deactivatedAt: new Date(this.now()) };
      },
      { revokeSessionsReason: 'deactivated' },
    );
    if (!row) throw notFound(id);
    return userView(row);
  }

  async reactivate(p: Principal, id: string) {
    const row = await this.deps.repo.change(p.tenantId, id, (current) => {
      if (!mayGrant(p, grantsOf(current))) throw new AppError('forbidden', `You cannot reactivate ${current.email}: their role and permissions go beyond yours.`);
      return { status: 'active', deactivatedAt: null };
    });
    if (!row) throw notFound(id);
    return userView(row);
  }

  /**
   * Invites someone: stores the invitation (token hashed), then emails the link. When the
   * email cannot be sent the invitation is removed again and the answer is 503, so an
   * invitation nobody received never blocks a retry.
   */
  async invite(p: Principal, input: InviteInput) {
    const missing = missingRights(p, { role: input.role, canManageApiKeys: false, canViewBilling: false, canDeleteConversations: false });
    if (missing.length > 0) throw new AppError('forbidden', `You cannot invite a ${input.role}: that role holds rights you do not (${missing.join(', ')}).`);
    const nowMs = this.now();
    const token = randomBytes(32).toString('base64url');
    const inv = await this.deps.repo.insertInvitation(
      {
        id: newId('inv', nowMs),
        tenantId: p.tenantId,
        email: input.email,
        firstName: input.firstName,
        lastName: input.lastName,
        role: input.role,
        message: input.message ?? null,
        tokenHash: hashInvitationToken(token),
        invitedBy: p.kind === 'user' ? p.actorId : null,
        expiresAt: new Date(nowMs + INVITATION_TTL_MS),
        createdAt: new Date(nowMs),
      },
      new Date(nowMs),
    );
    const [inviter, tenantName] = await Promise.all([p.kind === 'user' ? this.deps.repo.find(p.tenantId, p.actorId) : undefined, this.deps.repo.tenantName(p.tenantId)]);
    const link = `${this.deps.publicUrl}/accept-invitation?token=${token}`;
    try {
      await this.deps.mailer.send(
        invitationMail({
          to: inv.email,
          firstName: inv.firstName,
          inviterName: inviter ? `${inviter.firstName} ${inviter.lastName}`.trim() || inviter.email : null,
          tenantName: tenantName ?? 'your account',
          role: inv.role,
          message: inv.message,
          link,
          token,
          expiresAt: inv.expiresAt,
        }),
      );
    } catch (err) {
      await this.deps.repo.deleteInvitation(inv.id);
      this.deps.log.error({ err, invitationId: inv.id }, 'invitation email not sent');
      throw new AppError('unavailable', 'The invitation email could not be sent, so no invitation was created. Try again later.');
    }
    const sent = await this.deps.repo.markInvitationSent(inv.id, new Date(this.now()));
    return invitationView(sent ?? inv);
  }

  async listInvitations(p: Principal, q: ListInvitationsQuery) {
    const { rows, total } = await this.deps.repo.listPendingInvitations(p.tenantId, q, new Date(this.now()));
    return toPage(rows.map(invitationView), total, q);
  }

  async revokeInvitation(p: Principal, id: string): Promise<void> {
    if (!(await this.deps.repo.revokeInvitation(p.tenantId, id))) throw new AppError('not-found', `No pending invitation ${id} exists.`);
  }

  /**
   * Accepts an invitation with its token: creates the user with the invitation's role and
   * names and an argon2id hash of the password, marks the invitation accepted (the token
   * works once), and signs the new user in.
   */
  async accept(input: AcceptInvitationInput, meta: { ip: string | null; userAgent: string | null }) {
    const tokenHash = hashInvitationToken(input.token);
    const check = (inv: InvitationRow | undefined): InvitationRow => checkInvitation(inv, this.now());
    const inv = check(await this.deps.repo.findInvitationByToken(tokenHash));
    if (input.password.toLowerCase().includes(inv.email.toLowerCase())) throw validationError('password', 'must not contain your email address');
    // Hashed before the transaction: argon2 takes a while and should not hold the invitation's lock.
    const passwordHash = await hash(input.password, { algorithm: 2 /* argon2id */ });
    const user = await this.deps.repo.acceptInvitation(tokenHash, check, { id: newId('usr', this.now()), passwordHash }, new Date(this.now()));
    const tokens = await this.deps.sessions.startSession(user.id, meta);
    return { user: profileView(user), ...tokens };
  }

  private async require(p: Principal, id: string): Promise<UserRecord> {
    const row = await this.deps.repo.find(p.tenantId, id);
    if (!row) throw notFound(id);
    return row;
  }
}

function notFound(id: string): AppError {
  return new AppError('not-found', `User ${id} was not found.`);
}

/** Refuses an unknown, used, revoked or expired invitation with a detail saying which. */
function checkInvitation(inv: InvitationRow | undefined, nowMs: number): InvitationRow {
  if (!inv) throw new AppError('invitation-invalid', 'This invitation token is not valid. Check that the whole link was copied, or ask for a new invitation.');
  if (inv.status === 'accepted') throw new AppError('invitation-invalid', 'This invitation was already accepted; sign in with your email and password.');
  if (inv.status === 'revoked') throw new AppError('invitation-invalid', 'This invitation was revoked; ask for a new invitation.');
  if (inv.expiresAt.getTime() <= nowMs) throw new AppError('invitation-expired', `This invitation expired at ${inv.expiresAt.toISOString()}; ask for a new invitation.`);
  return inv;
}
