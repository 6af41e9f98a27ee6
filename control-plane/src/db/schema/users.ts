import { sql } from 'drizzle-orm';
import { bigint, boolean, index, integer, jsonb, pgTable, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { tenants } from './tenants.js';

export const ROLES = ['Admin', 'AgencyManager', 'AgencyTechnicalManager', 'AgencyAccountManager', 'TenantOwner', 'TenantUser', 'ReadOnly'] as const;
export type Role = (typeof ROLES)[number];

export interface NotificationPreferences {
  weeklyDigest: boolean;
  billingAlerts: boolean;
  agentErrors: boolean;
}

export const users = pgTable(
  'users',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    firstName: text('first_name').notNull().default(''),
    lastName: text('last_name').notNull().default(''),
    role: text('role').$type<Role>().notNull(),
    status: text('status').notNull().default('active'),
    /** argon2id; null until the user has set a password. */
    passwordHash: text('password_hash'),
    /** Refinements of the role (spec "User.permissions"). */
    canManageApiKeys: boolean('can_manage_api_keys').notNull().default(false),
    canViewBilling: boolean('can_view_billing').notNull().default(false),
    canDeleteConversations: boolean('can_delete_conversations').notNull().default(false),
    timezone: text('timezone').notNull().default('UTC'),
    notificationPreferences: jsonb('notification_preferences')
      .$type<NotificationPreferences>()
      .notNull()
      .default({ weeklyDigest: true, billingAlerts: true, agentErrors: true }),
    /** The user who invited this one (null for the bootstrap admin). */
    invitedBy: text('invited_by'),
    lastLoginAt: timestamp('last_login_at', { withTimezone: true, mode: 'date' }),
    deactivatedAt: timestamp('deactivated_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('users_email_key').on(sql`lower(${t.email})`), index('users_tenant_idx').on(t.tenantId)],
);

/**
 * Invitations (spec "Invitation"). The token the invitee uses to set a password is stored
 * as its SHA-256 only; it is single use (`acceptedAt`) and expires (`expiresAt`).
 */
export const invitations = pgTable(
  'invitations',
  {
    id: text('id').primaryKey(),
    tenantId: text('tenant_id').notNull().references(() => tenants.id, { onDelete: 'cascade' }),
    email: text('email').notNull(),
    firstName: text('first_name').notNull(),
    lastName: text('last_name').notNull(),
    role: text('role').$type<Role>().notNull(),
    message: text('message'),
    tokenHash: text('token_hash').notNull(),
    invitedBy: text('invited_by'),
    /** `pending` until accepted or revoked; expiry is read from `expiresAt`. */
    status: text('status').$type<'pending' | 'accepted' | 'revoked'>().notNull().default('pending'),
    sentAt: timestamp('sent_at', { withTimezone: true, mode: 'date' }),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    acceptedAt: timestamp('accepted_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex('invitations_token_key').on(t.tokenHash), index('invitations_tenant_status_idx').on(t.tenantId, t.status, t.createdAt)],
);

/**
 * A login session: one per successful login, ended by logout, deactivation or reuse of a
 * spent refresh token. Its refresh tokens form one family.
 */
export const authSessions = pgTable(
  'auth_sessions',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    tenantId: text('tenant_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastRefreshedAt: timestamp('last_refreshed_at', { withTimezone: true, mode: 'date' }),
    /** Hard end of the session, however often it is refreshed. */
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    revokedAt: timestamp('revoked_at', { withTimezone: true, mode: 'date' }),
    /** `logout`, `reuse_detected`, `deactivated`, `password_changed`, … */
    revokedReason: text('revoked_reason'),
    ip: text('ip'),
    userAgent: text('user_agent'),
  },
  (t) => [index('auth_sessions_user_idx').on(t.userId)],
);

/** Opaque refresh tokens (SHA-256 stored), single use: `usedAt` set when exchanged. */
export const refreshTokens = pgTable(
  'refresh_tokens',
  {
    id: text('id').primaryKey(),
    sessionId: text('session_id').notNull().references(() => authSessions.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [uniqueIndex('refresh_tokens_hash_key').on(t.tokenHash), index('refresh_tokens_session_idx').on(t.sessionId)],
);

/** JWT signing keys (ES256), private part sealed with the secret key; `kid` in each token's header. */
export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  algorithm: text('algorithm').notNull(),
  publicJwk: jsonb('public_jwk').$type<Record<string, unknown>>().notNull(),
  privateJwkSealed: text('private_jwk_sealed').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  /** No longer used to sign; still verifies tokens until they expire. */
  retiredAt: timestamp('retired_at', { withTimezone: true, mode: 'date' }),
});

/**
 * The second step of an MFA login: the `mfaToken` (SHA-256 stored) issued by a correct
 * password, with its attempts and, for FIDO2, the one challenge bound to it.
 */
export const mfaChallenges = pgTable(
  'mfa_challenges',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    tokenHash: text('token_hash').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
    attempts: integer('attempts').notNull().default(0),
    /** Base64url WebAuthn challenge issued for this token (single use). */
    webauthnChallenge: text('webauthn_challenge'),
    /** Set when the login completed (the token cannot be used again). */
    completedAt: timestamp('completed_at', { withTimezone: true, mode: 'date' }),
    ip: text('ip'),
    userAgent: text('user_agent'),
  },
  (t) => [uniqueIndex('mfa_challenges_token_key').on(t.tokenHash)],
);

/** A user's TOTP factor: secret sealed; `lastUsedStep` rejects a replayed code. */
export const totpFactors = pgTable('totp_factors', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  secretSealed: text('secret_sealed').notNull(),
  /** Null until enrolment is confirmed with a first valid code. */
  confirmedAt: timestamp('confirmed_at', { withTimezone: true, mode: 'date' }),
  lastUsedStep: bigint('last_used_step', { mode: 'number' }),
  createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});

/** FIDO2 / WebAuthn credentials of a user. */
export const webauthnCredentials = pgTable(
  'webauthn_credentials',
  {
    /** Base64url credential id. */
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** Base64url COSE public key. */
    publicKey: text('public_key').notNull(),
    counter: bigint('counter', { mode: 'number' }).notNull().default(0),
    transports: text('transports').array().notNull().default(sql`'{}'::text[]`),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true, mode: 'date' }),
  },
  (t) => [index('webauthn_credentials_user_idx').on(t.userId)],
);

/** Pending WebAuthn registrations (enrolment): the challenge, single use, short-lived. */
export const webauthnRegistrations = pgTable('webauthn_registrations', {
  userId: text('user_id')
    .primaryKey()
    .references(() => users.id, { onDelete: 'cascade' }),
  challenge: text('challenge').notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true, mode: 'date' }).notNull(),
});

/** One-time recovery codes (argon2id or SHA-256 of a high-entropy code), `usedAt` when spent. */
export const recoveryCodes = pgTable(
  'recovery_codes',
  {
    id: text('id').primaryKey(),
    userId: text('user_id').notNull().references(() => users.id, { onDelete: 'cascade' }),
    codeHash: text('code_hash').notNull(),
    usedAt: timestamp('used_at', { withTimezone: true, mode: 'date' }),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  (t) => [index('recovery_codes_user_idx').on(t.userId)],
);

/**
 * Failed login throttling, per account (`email:<lower email>`) and per client address
 * (`ip:<addr>`): failures in the current window and the lock, if any. Rows exist for
 * unknown emails too, so a lock reveals nothing about accounts.
 */
export const loginThrottles = pgTable('login_throttles', {
  key: text('key').primaryKey(),
  failures: integer('failures').notNull().default(0),
  windowStartedAt: timestamp('window_started_at', { withTimezone: true, mode: 'date' }).notNull(),
  lockedUntil: timestamp('locked_until', { withTimezone: true, mode: 'date' }),
});
