import type pg from 'pg';
import type { Scope } from '@vap/shared';
import type { Plan } from '../../db/schema/tenants.js';
import { hashKey, parseKey } from '../api-keys/key-material.js';
import { looksLikeJwt } from './access-tokens.js';
import type { AccessTokens } from './access-tokens.js';
import { apiKeyRights, userPrincipal } from './permissions.js';
import type { Role } from '../../db/schema/users.js';
import type { AuthResult } from './principal.js';

interface KeyRow {
  window_count: number | null;
  id: string;
  tenant_id: string;
  scopes: Scope[];
  can_manage_api_keys: boolean;
  expired: boolean;
  revoked: boolean;
  touch: boolean;
  plan: Plan;
  rate_limit_per_minute: number | null;
  tenant_status: string;
}

// One round trip per request: the key lookup and, for a usable key, the count of this
// request in its tenant's rate-limit window ($2 = window start), in one statement.
// `touch` says whether lastUsedAt is stale enough to write.
const LOOKUP_AND_COUNT = {
  name: 'auth-api-key',
  text: `with k as (
           select k.id, k.tenant_id, k.scopes, k.can_manage_api_keys,
                  (k.expires_at is not null and k.expires_at <= now()) as expired,
                  (k.revoked_at is not null) as revoked,
                  (k.last_used_at is null or k.last_used_at < now() - interval '60 seconds') as touch,
                  t.plan, t.rate_limit_per_minute, t.status as tenant_status
             from api_keys k join tenants t on t.id = k.tenant_id
            where k.key_hash = $1),
         hit as (
           insert into rate_limit_windows (bucket, window_start, count)
           select 'tenant:' || tenant_id, $2, 1 from k where not expired and not revoked and tenant_status = 'active'
           on conflict (bucket, window_start) do update set count = rate_limit_windows.count + 1
           returning count)
         select k.*, (select count from hit) as window_count from k`,
};

interface UserRow {
  window_count: number | null;
  user_id: string;
  tenant_id: string;
  role: Role;
  status: string;
  can_manage_api_keys: boolean;
  can_view_billing: boolean;
  can_delete_conversations: boolean;
  plan: Plan;
  rate_limit_per_minute: number | null;
  tenant_status: string;
  session_ended: boolean;
}

// The same for a user's access token: session, user and tenant as they are now (so a
// logout, deactivation or role change applies to the next request), and the count of this
// request in the tenant's window ($3) when all three are live ($4 = now).
const USER_LOOKUP_AND_COUNT = {
  name: 'auth-user-session',
  text: `with u as (
           select u.id as user_id, u.tenant_id, u.role, u.status,
                  u.can_manage_api_keys, u.can_view_billing, u.can_delete_conversations,
                  t.plan, t.rate_limit_per_minute, t.status as tenant_status,
                  (s.revoked_at is not null or s.expires_at <= $4) as session_ended
             from auth_sessions s
             join users u on u.id = s.user_id
             join tenants t on t.id = u.tenant_id
            where s.id = $1 and s.user_id = $2),
         hit as (
           insert into rate_limit_windows (bucket, window_start, count)
           select 'tenant:' || tenant_id, $3, 1 from u where not session_ended and status = 'active' and tenant_status = 'active'
           on conflict (bucket, window_start) do update set count = rate_limit_windows.count + 1
           returning count)
         select u.*, (select count from hit) as window_count from u`,
};

/**
 * Turns an `Authorization` header into a principal: an API key (`svc_…`), or a user's
 * access token (a JWT; see {@link AccessTokens}) whose session, user and tenant are read
 * on every request.
 */
export class Authenticator {
  constructor(
    private readonly pool: pg.Pool,
    private readonly users?: { tokens: AccessTokens; now: () => number },
  ) {}

  /**
   * Resolves the credential and, when it is usable, counts the request in the tenant's
   * rate-limit window starting at `windowStartMs` (see {@link RateLimiter}).
   */
  async authenticate(header: string | undefined, windowStartMs: number): Promise<AuthResult> {
    if (!header) return { ok: false, reason: 'Missing Authorization header; send "Authorization: Bearer <api key>".' };
    const m = /^Bearer +(\S+)\s*$/i.exec(header);
    if (!m) return { ok: false, reason: 'Malformed Authorization header; expected "Bearer <token>".' };
    const token = m[1]!;
    if (!parseKey(token)) {
      if (this.users && looksLikeJwt(token)) return this.authenticateUser(token, windowStartMs, this.users);
      return { ok: false, reason: 'The bearer token is not a valid API key or access token.' };
    }
    const res = await this.pool.query<KeyRow>({ ...LOOKUP_AND_COUNT, values: [hashKey(token), windowStartMs] });
    const row = res.rows[0];
    if (!row) return { ok: false, reason: 'Unknown API key.' };
    if (row.revoked) return { ok: false, reason: 'This API key has been revoked.' };
    if (row.expired) return { ok: false, reason: 'This API key has expired.' };
    if (row.tenant_status !== 'active') return { ok: false, reason: 'The account of this API key is not active.' };
    if (row.touch) {
      // Cheap by design: at most one write per key per minute, off the request's path.
      this.pool
        .query(`update api_keys set last_used_at = now() where id = $1 and (last_used_at is null or last_used_at < now() - interval '60 seconds')`, [row.id])
        .catch(() => undefined);
    }
    const rights = apiKeyRights(row.scopes, row.can_manage_api_keys);
    return {
      ok: true,
      windowCount: row.window_count ?? 1,
      principal: {
        kind: 'api_key',
        actorId: row.id,
        tenantId: row.tenant_id,
        plan: row.plan,
        rateLimitPerMinute: row.rate_limit_per_minute,
        role: null,
        sessionId: null,
        rights,
        scopes: new Set(row.scopes),
        canManageApiKeys: rights.has('api-keys:manage'),
        canViewBilling: rights.has('billing:read'),
        canDeleteConversations: rights.has('conversations:delete'),
      },
    };
  }

  private async authenticateUser(token: string, windowStartMs: number, users: { tokens: AccessTokens; now: () => number }): Promise<AuthResult> {
    const verified = await users.tokens.verify(token);
    if (!verified.ok) {
      return verified.reason === 'expired'
        ? { ok: false, reason: 'Expired access token; get a new one with POST /api/v1/auth/refresh.' }
        : { ok: false, reason: 'Invalid access token.' };
    }
    const { claims } = verified;
    const res = await this.pool.query<UserRow>({ ...USER_LOOKUP_AND_COUNT, values: [claims.sessionId, claims.userId, windowStartMs, new Date(users.now())] });
    const row = res.rows[0];
    if (!row || row.session_ended) return { ok: false, reason: 'The session has ended (logged out, revoked or expired); log in again.' };
    if (row.status !== 'active') return { ok: false, reason: 'This user is deactivated.' };
    if (row.tenant_status !== 'active') return { ok: false, reason: 'The account of this user is not active.' };
    return {
      ok: true,
      windowCount: row.window_count ?? 1,
      principal: userPrincipal(
        { id: row.user_id, tenantId: row.tenant_id, role: row.role, canManageApiKeys: row.can_manage_api_keys, canViewBilling: row.can_view_billing, canDeleteConversations: row.can_delete_conversations },
        { plan: row.plan, rateLimitPerMinute: row.rate_limit_per_minute },
        claims.sessionId,
      ),
    };
  }
}
