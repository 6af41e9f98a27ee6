import type { FastifyInstance } from 'fastify';
import { AppError } from '@vap/shared';
import type { RateLimiter } from '../rate-limit/rate-limiter.js';
import type { Authenticator } from './authenticator.js';
import type { Principal } from './principal.js';

export interface PlanLimits {
  starter: number;
  professional: number;
  business: number;
  enterprise: number;
  anonymous: number;
}

export function rateLimitFor(p: Principal, limits: PlanLimits): number {
  if (p.plan === 'enterprise') return p.rateLimitPerMinute ?? limits.enterprise;
  return limits[p.plan];
}

/**
 * One hook for every `/api/` request, in this order: resolve the credential, count the
 * request against the tenant's (or, without a valid credential, the client address's)
 * window and set the X-RateLimit headers, then refuse: 429, 401, 403. Unknown routes and
 * public routes are counted but not authenticated.
 *
 * Every `/api/` route must declare `config.scope` (a scope, or null for public): a route
 * that forgets is refused at start-up rather than left open. Users pass the scope check
 * with the scopes their role allows; `config.right` (user-only rights) admits users only.
 */
export function registerAccessControl(app: FastifyInstance, deps: { authenticator: Authenticator; rateLimiter: RateLimiter; limits: PlanLimits; now: () => number }): void {
  app.decorateRequest('principal', null);

  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/') && route.config?.scope === undefined && route.method !== 'HEAD') {
      throw new Error(`Route ${String(route.method)} ${route.url} does not declare config.scope`);
    }
    if (route.config?.right && route.config.scope !== false) {
      throw new Error(`Route ${String(route.method)} ${route.url} declares config.right, so its scope must be false`);
    }
    if (route.config?.scope === false && !route.config.right && !route.config.permission) {
      throw new Error(`Route ${String(route.method)} ${route.url} has no scope, so it must declare config.right or config.permission`);
    }
  });

  app.addHook('onRequest', async (req, reply) => {
    reply.header('X-Request-Id', req.id);
    reply.header('X-Api-Version', '1');
    if (!req.url.startsWith('/api/')) return;

    const access = req.routeOptions.config;
    const isPublic = req.is404 || access.scope === null;
    const auth = isPublic ? null : await deps.authenticator.authenticate(req.headers.authorization);
    // A valid credential counts in its tenant's window; anything else per client address.
    const rl = auth?.ok ? await deps.rateLimiter.hit(`tenant:${auth.principal.tenantId}`, rateLimitFor(auth.principal, deps.limits)) : await deps.rateLimiter.hit(`ip:${req.ip}`, deps.limits.anonymous);
    reply.headers({
      'X-RateLimit-Limit': String(rl.limit),
      'X-RateLimit-Remaining': String(rl.remaining),
      'X-RateLimit-Reset': String(rl.resetAtSec),
      'X-RateLimit-Policy': 'api-standard',
    });
    if (rl.exceeded) {
      throw new AppError('rate-limited', `Rate limit of ${rl.limit} requests per minute exceeded; retry in ${rl.retryAfterSec} s.`, {
        headers: { 'Retry-After': String(rl.retryAfterSec) },
      });
    }
    if (auth === null) return;
    if (!auth.ok) throw new AppError('unauthorized', auth.reason);
    if (access.scope && !auth.principal.scopes.has(access.scope)) {
      throw new AppError('forbidden', `This operation requires the scope ${access.scope}.`);
    }
    if (access.permission && !auth.principal[access.permission]) {
      throw new AppError('forbidden', `This operation requires the permission ${access.permission}.`);
    }
    if (access.right) {
      if (auth.principal.kind !== 'user') throw new AppError('forbidden', 'This operation is for signed-in users; API keys cannot use it.');
      if (!auth.principal.rights.has(access.right)) {
        throw new AppError('forbidden', `The role ${String(auth.principal.role)} does not allow this operation (right ${access.right}).`);
      }
    }
    req.principal = auth.principal;
  });
}

/** The principal of an authenticated route; throws if a route without auth asks for it. */
export function principalOf(req: { principal: Principal | null }): Principal {
  if (!req.principal) throw new AppError('unauthorized', 'Authentication required.');
  return req.principal;
}
