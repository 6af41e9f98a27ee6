import type pg from 'pg';
import type { Scope } from '@vap/shared';
import type { Plan } from '../../db/schema/tenants.js';
import { hashKey, parseKey } from '../api-keys/key-material.js';
import { looksLikeJwt } from './access-tokens.js';
import type { AccessTokens } from './access-tokens.js';
import { apiKeyRights, userPrincipal } from './permissions.js';
import type { Role } from '../../db/schema/users.js';
import type { AuthResult, Principal } from './principal.js';
import { ApiKeyCache } from './api-key-cache.js';

interface KeyRow {
  id: string;
  tenant_id: string;
  scopes: Scope[];
  can_manage_api_keys: boolean;
  expires_at_ms: string | null;
  expired: boolean;
  revoked: boolean;
  plan: Plan;
  rate_limit_per_minute: number | null;
  tenant_status: string;
}

// The key and its tenant in one round trip; the rate-limit count is the RateLimiter's.
const KEY_LOOKUP = {
  name: 'auth-api-key',
  text: `select k.id, k.tenant_id, k.scopes, k.can_manage_api_keys,
                (extract(epoch from k.expires_at) * 1000)::bigint as expires_at_ms,
                (k.expires_at is not null and k.expires_at <= now()) as expired,
                (k.revoked_at is not null) as revoked,
                t.plan, t.rate_limit_per_minute, t.status as tenant_status
           from api_keys k join tenants t on t.id = k.tenant_id
          where k.key_hash = $1`,
};

/** lastUsedAt is written at most once a minute per key. */
const TOUCH_INTERVAL_MS = 60_000;
/** Keys whose last write time is remembered before the memory is cleared. */
const TOUCH_MEMORY = 10_000;

interface UserRow {
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

// A user's access token: session, user and tenant as they are now (so a logout,
// deactivation or role change applies to the next request; $3 = now). Not cached.
const USER_LOOKUP = {
  name: 'auth-user-session-lookup',
  text: `select u.id as user_id, u.tenant_id, u.role, u.status,
                u.can_manage_api_keys, u.can_view_billing, u.can_delete_conversations,
                t.plan, t.rate_limit_per_minute, t.status as tenant_status,
                (s.revoked_at is not null or s.expires_at <= $3) as session_ended
           from auth_sessions s
           join users u on u.id = s.user_id
           join tenants t on t.id = u.tenant_id
          where s.id = $1 and s.user_id = $2`,
};

/**
 * Turns an `Authorization` header into a principal: an API key (`svc_…`), looked up by its
 * hash and kept in an {@link ApiKeyCache} for a few seconds (revocation drops it at once),
 * or a user's access token (a JWT; see {@link AccessTokens}) whose session, user and tenant
 * are read on every request. Rate-limit counting is the {@link RateLimiter}'s.
 */
export class Authenticator {
  private readonly touchedAt = new Map<string, number>();
  private readonly lookups = new Map<string, Promise<AuthResult>>();
  /** Bumped by every {@link forgetKey}: lookups started before it do not fill the cache. */
  private generation = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly users?: { tokens: AccessTokens; now: () => number },
    private readonly keys: ApiKeyCache = new ApiKeyCache({ ttlMs: 0, maxEntries: 0 }),
  ) {}

  /** Resolves the credential (no database round trip for an API key found in the cache). */
  async authenticate(header: string | undefined): Promise<AuthResult> {
    if (!header) return { ok: false, reason: 'Missing Authorization header; send "Authorization: Bearer <api key>".' };
    const m = /^Bearer +(\S+)\s*$/i.exec(header);
    if (!m) return { ok: false, reason: 'Malformed Authorization header; expected "Bearer <token>".' };
    const token = m[1]!;
    if (!parseKey(token)) {
      if (this.users && looksLikeJwt(token)) return this.authenticateUser(token, this.users);
      return { ok: false, reason: 'The bearer token is not a valid API key or access token.' };
    }
    const keyHash = hashKey(token);
    const cached = this.keys.get(keyHash);
    if (cached && cached.expiresAtMs !== null && cached.expiresAtMs <= Date.now()) {
      this.keys.invalidateKey(cached.principal.actorId);
      return { ok: false, reason: 'This API key has expired.' };
    }
    if (cached) {
      this.touch(cached.principal.actorId);
      return { ok: true, principal: cached.principal };
    }
    // Concurrent requests with one uncached key share one lookup.
    let lookup = this.lookups.get(keyHash);
    if (!lookup) {
      const generation = this.generation;
      lookup = this.lookUpKey(keyHash, generation).finally(() => this.lookups.delete(keyHash));
      this.lookups.set(keyHash, lookup);
    }
    const result = await lookup;
    if (result.ok) this.touch(result.principal.actorId);
    return result;
  }

  private async lookUpKey(keyHash: string, generation: number): Promise<AuthResult> {
    const res = await this.pool.query<KeyRow>({ ...KEY_LOOKUP, values: [keyHash] });
    const row = res.rows[0];
    if (!row) return { ok: false, reason: 'Unknown API key.' };
    if (row.revoked) return { ok: false, reason: 'This API key has been revoked.' };
    if (row.expired) return { ok: false, reason: 'This API key has expired.' };
    if (row.tenant_status !== 'active') return { ok: false, reason: 'The account of this API key is not active.' };
    const found = { principal: keyPrincipal(row), expiresAtMs: row.expires_at_ms === null ? null : Number(row.expires_at_ms) };
    // A revocation that arrived while this lookup ran may be older than what it read: not cached then.
    if (generation === this.generation) this.keys.set(keyHash, found);
    return { ok: true, principal: found.principal };
  }

  /** Drops the cached lookup of key `keyId` on this replica (revoked or changed). */
  forgetKey(keyId: string): void {
    this.generation++;
    this.lookups.clear(); // requests from now on do not join a lookup that began before
    this.keys.invalidateKey(keyId);
  }

  /** Records lastUsedAt off the request's path, at most once a minute per key (the SQL guards across replicas). */
  private touch(keyId: string): void {
    const nowMs = Date.now();
    const last = this.touchedAt.get(keyId);
    if (last !== undefined && nowMs - last < TOUCH_INTERVAL_MS) return;
    if (this.touchedAt.size >= TOUCH_MEMORY) this.touchedAt.clear();
    this.touchedAt.set(keyId, nowMs);
    this.pool
      .query(`update api_keys set last_used_at = now() where id = $1 and (last_used_at is null or last_used_at < now() - interval '60 seconds')`, [keyId])
      .catch(() => this.touchedAt.delete(keyId));
  }

  private async authenticateUser(token: string, users: { tokens: AccessTokens; now: () => number }): Promise<AuthResult> {
    const verified = await users.tokens.verify(token);
    if (!verified.ok) {
      return verified.reason === 'expired'
        ? { ok: false, reason: 'Expired access token; get a new one with POST /api/v1/auth/refresh.' }
        : { ok: false, reason: 'Invalid access token.' };
    }
    const { claims } = verified;
    const res = await this.pool.query<UserRow>({ ...USER_LOOKUP, values: [claims.sessionId, claims.userId, new Date(users.now())] });
    const row = res.rows[0];
    if (!row || row.session_ended) return { ok: false, reason: 'The session has ended (logged out, revoked or expired); log in again.' };
    if (row.status !== 'active') return { ok: false, reason: 'This user is deactivated.' };
    if (row.tenant_status !== 'active') return { ok: false, reason: 'The account of this user is not active.' };
    return {
      ok: true,
      principal: userPrincipal(
        { id: row.user_id, tenantId: row.tenant_id, role: row.role, canManageApiKeys: row.can_manage_api_keys, canViewBilling: row.can_view_billing, canDeleteConversations: row.can_delete_conversations },
        { plan: row.plan, rateLimitPerMinute: row.rate_limit_per_minute },
        claims.sessionId,
      ),
    };
  }
}

function keyPrincipal(row: KeyRow): Principal {
  const rights = apiKeyRights(row.scopes, row.can_manage_api_keys);
  return {
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
  };
}
