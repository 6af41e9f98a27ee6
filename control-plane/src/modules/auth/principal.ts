import type { Scope } from '@vap/shared';
import type { Plan } from '../../db/schema/tenants.js';
import type { Role } from '../../db/schema/users.js';
import type { Right } from './permissions.js';

/** Who is calling: resolved once per request by the auth hook. */
export interface Principal {
  kind: 'api_key' | 'user';
  /** The key id or user id; recorded as `createdBy` on version records. */
  actorId: string;
  tenantId: string;
  plan: Plan;
  /** Enterprise per-tenant override of the plan's rate limit. */
  rateLimitPerMinute: number | null;
  /** Users: their role; API keys: null. */
  role: Role | null;
  /** Users: the login session the access token belongs to; API keys: null. */
  sessionId: string | null;
  /** Everything this caller may do (see permissions.ts); user-only rights only for users. */
  rights: ReadonlySet<Right>;
  /** The API-key scopes held (users: those their role allows), checked against `config.scope`. */
  scopes: ReadonlySet<Scope>;
  /** Holds `api-keys:manage`: keys by their flag, users by role or permission. */
  canManageApiKeys: boolean;
  /** Holds `billing:read`. */
  canViewBilling: boolean;
  /** Holds `conversations:delete`: keys with `conversations:write`, users by role and permission. */
  canDeleteConversations: boolean;
}

/** Result of reading a credential: a principal, or why it was refused (for the 401 detail). */
export type AuthResult =
  | { ok: true; principal: Principal }
  | { ok: false; reason: string };
