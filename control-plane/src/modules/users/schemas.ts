import { z } from 'zod';
import { ROLES } from '../../db/schema/users.js';
import { pageQueryShape } from '../../http/pagination.js';

/** `active`, or `deactivated` after POST /users/{id}/deactivate (the spec leaves the name open). */
export const USER_STATUSES = ['active', 'deactivated'] as const;
export type UserStatus = (typeof USER_STATUSES)[number];

/** Shortest password an invitee may set; the bootstrap admin's rule too. */
export const MIN_PASSWORD_LENGTH = 12;
/** argon2 hashes anything, but a megabyte password is a denial-of-service vector, not a password. */
export const MAX_PASSWORD_LENGTH = 256;

/**
 * The canonical IANA name of `zone`, or null when it is not one. ICU resolves links and
 * case (`utc` → `UTC`, `Asia/Calcutta` stays); offsets such as `+01:00` are refused, since
 * they are not zones (no daylight-saving rules).
 */
export function canonicalTimeZone(zone: string): string | null {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(zone)) return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: zone }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
}

const name = (what: string) => z.string().trim().min(1, `must not be empty`).max(100, `${what} must be at most 100 characters`);

export const permissionsSchema = z
  .object({
    canManageApiKeys: z.boolean(),
    canViewBilling: z.boolean(),
    canDeleteConversations: z.boolean(),
  })
  .meta({ id: 'UserPermissions' });

export const notificationPreferencesSchema = z
  .object({
    weeklyDigest: z.boolean(),
    billingAlerts: z.boolean(),
    agentErrors: z.boolean(),
  })
  .meta({ id: 'NotificationPreferences' });

export const userSchema = z
  .object({
    id: z.string(),
    email: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    role: z.enum(ROLES),
    status: z.enum(USER_STATUSES),
    mfaEnabled: z.boolean().describe('A confirmed TOTP factor or at least one FIDO2 credential'),
    lastLoginAt: z.string().nullable(),
    createdAt: z.string(),
    invitedBy: z.string().nullable().describe('Id of the user who sent the invitation; null for the first admin'),
    permissions: permissionsSchema,
  })
  .meta({ id: 'User' });

export const profileSchema = userSchema
  .extend({
    timezone: z.string().describe('IANA time zone name'),
    notificationPreferences: notificationPreferencesSchema,
  })
  .meta({ id: 'UserProfile' });

export const invitationSchema = z
  .object({
    invitationId: z.string(),
    email: z.string(),
    firstName: z.string(),
    lastName: z.string(),
    role: z.enum(ROLES),
    status: z.literal('pending'),
    expiresAt: z.string(),
    sentAt: z.string().nullable(),
    invitedBy: z.string().nullable(),
  })
  .meta({ id: 'Invitation' });

export const listUsersQuery = z.strictObject({
  ...pageQueryShape,
  role: z.enum(ROLES).optional(),
  status: z.enum(USER_STATUSES).optional(),
  search: z.string().trim().max(100, 'must be at most 100 characters').optional().describe('Part of the email, first or last name (case-insensitive)'),
  sortBy: z.enum(['createdAt', 'email', 'lastName', 'lastLoginAt']).default('createdAt'),
});
export type ListUsersQuery = z.infer<typeof listUsersQuery>;

export const listInvitationsQuery = z.strictObject({ ...pageQueryShape });
export type ListInvitationsQuery = z.infer<typeof listInvitationsQuery>;

export const inviteBody = z.strictObject({
  email: z.email({ error: 'must be an email address' }).max(254, 'must be at most 254 characters'),
  firstName: name('firstName'),
  lastName: name('lastName'),
  role: z.enum(ROLES),
  message: z.string().trim().max(2000, 'must be at most 2000 characters').nullable().optional().describe('A note from the inviter, quoted in the email'),
});
export type InviteInput = z.infer<typeof inviteBody>;

export const updateUserBody = z
  .strictObject({
    role: z.enum(ROLES).optional(),
    firstName: name('firstName').optional(),
    lastName: name('lastName').optional(),
    permissions: permissionsSchema.partial().strict().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, 'must change at least one of role, firstName, lastName, permissions');
export type UpdateUserInput = z.infer<typeof updateUserBody>;

export const updateProfileBody = z
  .strictObject({
    firstName: name('firstName').optional(),
    lastName: name('lastName').optional(),
    timezone: z
      .string()
      .max(64, 'must be an IANA time zone name such as Europe/Paris')
      .transform((v, ctx) => {
        const zone = canonicalTimeZone(v);
        if (zone === null) {
          ctx.addIssue({ code: 'custom', message: 'must be an IANA time zone name such as Europe/Paris' });
          return z.NEVER;
        }
        return zone;
      })
      .optional(),
    notificationPreferences: notificationPreferencesSchema.partial().strict().optional(),
  })
  .refine((b) => Object.keys(b).length > 0, 'must change at least one of firstName, lastName, timezone, notificationPreferences');
export type UpdateProfileInput = z.infer<typeof updateProfileBody>;

export const acceptInvitationBody = z.strictObject({
  token: z.string().min(1, 'must not be empty').max(200, 'is not an invitation token'),
  password: z.string().min(MIN_PASSWORD_LENGTH, `must be at least ${MIN_PASSWORD_LENGTH} characters`).max(MAX_PASSWORD_LENGTH, `must be at most ${MAX_PASSWORD_LENGTH} characters`),
});
export type AcceptInvitationInput = z.infer<typeof acceptInvitationBody>;

export const userIdParams = z.object({ userId: z.string().min(1) });
export const invitationIdParams = z.object({ invitationId: z.string().min(1) });

export const acceptedInvitationSchema = z
  .object({
    user: profileSchema,
    accessToken: z.string(),
    refreshToken: z.string(),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int().describe('Seconds until the access token expires'),
    mfaRequired: z.literal(false),
  })
  .meta({ id: 'AcceptedInvitation' });
