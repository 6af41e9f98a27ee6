import type { Scope } from '@vap/shared';
import type { Plan } from '../../db/schema/tenants.js';

/** Who is calling: resolved once per request by the auth hook. */
export interface Principal {
  kind: 'api_key' | 'user';
  /** The key id or user id; recorded as `createdBy` on version records. */
  actorId: string;
  tenantId: string;
  plan: Plan;
  /** Enterprise per-tenant override of the plan's rate limit. */
  rateLimitPerMinute: number | null;
  scopes: ReadonlySet<Scope>;
  canManageApiKeys: boolean;
  /** Users: their `permissions.canDeleteConversations`; API keys: always (their scope decides). */
  canDeleteConversations: boolean;
}

/** Result of reading a credential: a principal, or why it was refused (for the 401 detail). */
export type AuthResult =
  | { ok: true; principal: Principal; /** This request's number in the tenant's current rate-limit window. */ windowCount: number }
  | { ok: false; reason: string };
