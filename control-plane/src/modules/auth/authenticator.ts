import type pg from 'pg';
import type { Scope } from '@vap/shared';
import type { Plan } from '../../db/schema/tenants.js';
import { hashKey, parseKey } from '../api-keys/key-material.js';
import { apiKeyRights } from './permissions.js';
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

/**
 * Turns an `Authorization` header into a principal. API keys now; user access tokens
 * arrive with the identity issue (#3) and plug in here.
 */
export class Authenticator {
  constructor(private readonly pool: pg.Pool) {}

  /**
   * Resolves the credential and, when it is usable, counts the request in the tenant's
   * rate-limit window starting at `windowStartMs` (see {@link RateLimiter}).
   */
  async authenticate(header: string | undefined, windowStartMs: number): Promise<AuthResult> {
    if (!header) return { ok: false, reason: 'Missing Authorization header; send "Authorization: Bearer <api key>".' };
    const m = /^Bearer +(\S+)\s*$/i.exec(header);
    if (!m) return { ok: false, reason: 'Malformed Authorization header; expected "Bearer <token>".' };
    const token = m[1]!;
    if (!parseKey(token)) return { ok: false, reason: 'The bearer token is not a valid API key or access token.' };
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
}
