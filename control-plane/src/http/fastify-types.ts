import type { Scope } from '@vap/shared';
import type { UserRight } from '../modules/auth/permissions.js';
import type { Principal } from '../modules/auth/principal.js';

/** What a route declares about access; read by the auth hook and rendered into OpenAPI. */
export interface RouteAccess {
  /**
   * Scope an API key needs; `false`: a credential but no scope (a permission decides);
   * `null`: public, no credential.
   */
  scope?: Scope | false | null;
  /**
   * A permission needed beyond the scope. API keys hold `canManageApiKeys` as a flag and
   * `canDeleteConversations` always (the `conversations:write` scope decides); users hold
   * them as their permissions (spec "User").
   */
  permission?: 'canManageApiKeys' | 'canDeleteConversations';
  /**
   * A user-only right (see auth/permissions.ts): only a signed-in user whose role (and
   * permissions) hold it passes; API keys get 403. Declare it with `scope: false`.
   */
  right?: UserRight;
  /** POSTs that create or act: `Idempotency-Key` is honoured. */
  idempotent?: boolean;
}

declare module 'fastify' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- declaration merging adds the fields
  interface FastifyContextConfig extends RouteAccess {}
  interface FastifyRequest {
    principal: Principal | null;
  }
  interface FastifyInstance {
    docsUrl: string;
  }
}
