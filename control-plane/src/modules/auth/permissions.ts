import { SCOPES } from '@vap/shared';
import type { Scope } from '@vap/shared';
import { ROLES } from '../../db/schema/users.js';
import type { Role } from '../../db/schema/users.js';
import type { Plan } from '../../db/schema/tenants.js';
import type { Principal } from './principal.js';

/**
 * Rights only a signed-in user can hold; routes name them in `config.right` and API keys
 * never pass them (a key is a machine credential, not a member of the tenant's staff).
 */
export const USER_RIGHTS = ['profile', 'users:read', 'users:write', 'users:admin'] as const;
export type UserRight = (typeof USER_RIGHTS)[number];

/**
 * Everything the matrix decides: the ten API-key scopes, the two rights behind the
 * `canManageApiKeys`/`canDeleteConversations` route permissions, and the user-only rights.
 */
export const RIGHTS = [...SCOPES, 'conversations:delete', 'api-keys:manage', ...USER_RIGHTS] as const;
export type Right = (typeof RIGHTS)[number];

/** The user's refinements of their role (spec "User.permissions"). */
export type UserPermission = 'canManageApiKeys' | 'canViewBilling' | 'canDeleteConversations';

/** A cell: the role holds the right, does not, or holds it only with that permission set. */
export type Grant = boolean | UserPermission;

/** What each right lets a user do, for the rendered table. */
export const RIGHT_DESCRIPTIONS: Record<Right, string> = {
  'agents:read': 'list and get agents, versions and stats; list, get and search knowledge-base documents',
  'agents:write': 'create, update, publish, activate, duplicate, delete agents; upload, reindex, delete knowledge-base documents',
  'conversations:read': 'list and get conversations, messages, transcripts, analysis, recordings',
  'conversations:write': 'tag conversations, update outcomes',
  'conversations:delete': 'delete conversations (also needs conversations:write)',
  'telephony:read': 'list numbers, SIP trunks, usage',
  'telephony:write': 'provision, release and assign numbers, SIP trunks',
  'webhooks:read': 'list and get webhook configurations and deliveries',
  'webhooks:write': 'create, update, delete webhook configurations',
  'analytics:read': 'analytics and reports',
  'billing:read': 'invoices, usage, subscription',
  'api-keys:manage': 'create, list and revoke API keys',
  profile: 'own profile (`/users/me`) and own MFA factors',
  'users:read': 'list and get the tenant\'s users and pending invitations',
  'users:write': 'invite users, change users (role, permissions), revoke invitations',
  'users:admin': 'deactivate and reactivate users',
};

const ALL: Record<Right, Grant> = Object.fromEntries(RIGHTS.map((r) => [r, true])) as Record<Right, Grant>;
const NONE: Record<Right, Grant> = Object.fromEntries(RIGHTS.map((r) => [r, false])) as Record<Right, Grant>;
const READS: Partial<Record<Right, Grant>> = {
  'agents:read': true,
  'conversations:read': true,
  'telephony:read': true,
  'webhooks:read': true,
  'analytics:read': true,
  profile: true,
};

/**
 * The role × right matrix, written once: enforcement ({@link userPrincipal}) and the table
 * in docs/api.md both come from it (a test keeps the docs equal to it).
 *
 * - Admin and TenantOwner hold everything in their tenant; only Admin deactivates users
 *   (spec "Lifecycle › User"). Both hold billing and key management by role.
 * - Deleting conversations needs `canDeleteConversations` for every role, Admin included
 *   (the bootstrap admin has it).
 * - The agency roles act within their own tenant until agencies exist (tenants issue):
 *   AgencyManager "all clients and agents" = everything but deactivation, billing and keys
 *   by permission; AgencyTechnicalManager "API keys, integrations, agent config" = agents,
 *   telephony, webhooks and keys, conversations read only; AgencyAccountManager "view
 *   analytics, manage client accounts" = reads, analytics and the users of the account.
 * - TenantUser manages agents and conversations, reads telephony, webhooks and analytics,
 *   and nothing of users; billing and keys only through the permissions.
 * - ReadOnly is "read-only everywhere" (spec): it reads agents, conversations, telephony,
 *   webhooks, analytics and the account's users, and billing with `canViewBilling`;
 *   `canManageApiKeys` gives it nothing (managing keys is a write).
 */
export const ROLE_MATRIX: Readonly<Record<Role, Readonly<Record<Right, Grant>>>> = {
  Admin: { ...ALL, 'conversations:delete': 'canDeleteConversations' },
  TenantOwner: { ...ALL, 'conversations:delete': 'canDeleteConversations', 'users:admin': false },
  AgencyManager: {
    ...ALL,
    'conversations:delete': 'canDeleteConversations',
    'billing:read': 'canViewBilling',
    'api-keys:manage': 'canManageApiKeys',
    'users:admin': false,
  },
  AgencyTechnicalManager: {
    ...NONE,
    ...READS,
    'agents:write': true,
    'telephony:write': true,
    'webhooks:write': true,
    'api-keys:manage': true,
    'billing:read': 'canViewBilling',
  },
  AgencyAccountManager: {
    ...NONE,
    ...READS,
    'users:read': true,
    'users:write': true,
    'billing:read': 'canViewBilling',
    'api-keys:manage': 'canManageApiKeys',
  },
  TenantUser: {
    ...NONE,
    ...READS,
    'agents:write': true,
    'conversations:write': true,
    'conversations:delete': 'canDeleteConversations',
    'billing:read': 'canViewBilling',
    'api-keys:manage': 'canManageApiKeys',
  },
  ReadOnly: { ...NONE, ...READS, 'users:read': true, 'billing:read': 'canViewBilling' },
};

/** The fields of a user row the matrix reads. */
export interface UserGrants {
  role: Role;
  canManageApiKeys: boolean;
  canViewBilling: boolean;
  canDeleteConversations: boolean;
}

/** The rights a user holds: their role's cells, permission cells resolved by their flags. */
export function rightsOf(u: UserGrants): ReadonlySet<Right> {
  const row = ROLE_MATRIX[u.role];
  return new Set(RIGHTS.filter((r) => {
    const g = row[r];
    return typeof g === 'boolean' ? g : u[g];
  }));
}

/**
 * Whether `actor` may give a user this role and these permissions (invite, PATCH): only
 * when every right the result would hold is one the actor holds, so nobody can make a
 * user more powerful than themselves (a TenantOwner cannot appoint an Admin).
 */
export function mayGrant(actor: { rights: ReadonlySet<Right> }, target: UserGrants): boolean {
  for (const r of rightsOf(target)) if (!actor.rights.has(r)) return false;
  return true;
}

const SCOPE_SET: ReadonlySet<string> = new Set(SCOPES);

/**
 * The principal of a signed-in user, built on every request from the current row (so a
 * role change or a permission change applies to the next request). `scopes` are the API-key
 * scopes the role allows, so every route's `config.scope` check works for users unchanged;
 * the permission flags on the principal are the resolved rights, not the raw row flags.
 */
export function userPrincipal(
  u: { id: string; tenantId: string } & UserGrants,
  t: { plan: Plan; rateLimitPerMinute: number | null },
  sessionId: string,
): Principal {
  const rights = rightsOf(u);
  return {
    kind: 'user',
    actorId: u.id,
    tenantId: u.tenantId,
    plan: t.plan,
    rateLimitPerMinute: t.rateLimitPerMinute,
    role: u.role,
    sessionId,
    rights,
    scopes: new Set([...rights].filter((r): r is Scope => SCOPE_SET.has(r))),
    canManageApiKeys: rights.has('api-keys:manage'),
    canViewBilling: rights.has('billing:read'),
    canDeleteConversations: rights.has('conversations:delete'),
  };
}

/**
 * The rights of an API key: its scopes, key management with `canManageApiKeys`, deleting
 * conversations with `conversations:write`; never a user-only right.
 */
export function apiKeyRights(scopes: readonly Scope[], canManageApiKeys: boolean): ReadonlySet<Right> {
  const rights = new Set<Right>(scopes);
  if (canManageApiKeys) rights.add('api-keys:manage');
  if (rights.has('conversations:write')) rights.add('conversations:delete');
  return rights;
}

/** The matrix as a Markdown table (rights down, roles across), as docs/api.md shows it. */
export function renderRoleMatrix(): string {
  const mark = (g: Grant): string => (g === true ? 'yes' : g === false ? '—' : `with \`${g}\``);
  const head = `| Right | Grants | ${ROLES.join(' | ')} |`;
  const rule = `|---|---|${ROLES.map(() => '---').join('|')}|`;
  const rows = RIGHTS.map((r) => `| \`${r}\` | ${RIGHT_DESCRIPTIONS[r]} | ${ROLES.map((role) => mark(ROLE_MATRIX[role][r])).join(' | ')} |`);
  return [head, rule, ...rows].join('\n');
}

const MATRIX_START = '<!-- role-matrix:start -->';
const MATRIX_END = '<!-- role-matrix:end -->';

/** `markdown` with the table between the role-matrix markers replaced by {@link renderRoleMatrix}. */
export function spliceRoleMatrix(markdown: string): string {
  const start = markdown.indexOf(MATRIX_START);
  const end = markdown.indexOf(MATRIX_END);
  if (start < 0 || end < start) throw new Error(`The document has no ${MATRIX_START} … ${MATRIX_END} block`);
  return `${markdown.slice(0, start + MATRIX_START.length)}\n${renderRoleMatrix()}\n${markdown.slice(end)}`;
}
