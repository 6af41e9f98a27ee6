import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { AppError } from '@vap/shared';
import { problemResponses } from '../../http/problem.js';
import type { JwtKeys } from './jwt-keys.js';
import type { LoginService } from './login-service.js';
import { jwksSchema, loginBody, loginResponseSchema, logoutBody, refreshBody, tokenResponseSchema } from './session-schemas.js';
import type { SessionService } from './session-service.js';

const tags = ['Sessions'];
// Public: these routes are how a user gets (or gives back) a credential. Token answers
// carry `Cache-Control: no-store` so no cache keeps them (RFC 6749 §5.1).
const PUBLIC = { scope: null } as const;

/** Where a request came from, for the session record and the per-address login throttle. */
export function sessionMeta(req: FastifyRequest): { ip: string; userAgent: string | null } {
  const ua = req.headers['user-agent'];
  return { ip: req.ip, userAgent: typeof ua === 'string' ? ua : null };
}

function bearerOf(req: FastifyRequest): string | null {
  const m = /^Bearer +(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return m ? m[1]! : null;
}

/** Login, refresh, logout and the public signing keys, under /api/v1/auth. */
export const sessionRoutes: FastifyPluginAsync<{ login: LoginService; sessions: SessionService; keys: JwtKeys }> = async (app, { login, sessions, keys }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/auth/login', {
    config: PUBLIC,
    schema: {
      tags,
      summary: 'Log in with email and password',
      description:
        'Without MFA: a token response. With confirmed MFA factors: `mfaRequired: true`, an `mfaToken` and the `mfaMethods`, to finish at /auth/mfa/verify or /auth/mfa/fido2/*. A wrong email and a wrong password get the same 401. Repeated failures lock the account or address for a while (429 `account-locked`).',
      body: loginBody,
      response: { 200: loginResponseSchema, ...problemResponses(400, 401, 422, 429) },
    },
    handler: async (req, reply) => {
      reply.header('Cache-Control', 'no-store');
      return login.login(req.body.email, req.body.password, sessionMeta(req));
    },
  });

  r.post('/auth/refresh', {
    config: PUBLIC,
    schema: {
      tags,
      summary: 'Exchange a refresh token for a new token pair',
      description: 'Refresh tokens are single use. Presenting one a second time ends its whole session (all its tokens) and answers 401.',
      body: refreshBody,
      response: { 200: tokenResponseSchema, ...problemResponses(400, 401, 422, 429) },
    },
    handler: async (req, reply) => {
      reply.header('Cache-Control', 'no-store');
      return sessions.refresh(req.body.refreshToken);
    },
  });

  r.post('/auth/logout', {
    config: PUBLIC,
    schema: {
      tags,
      summary: 'End the session',
      description:
        'Ends the session of the refresh token in the body, or, without one, of the access token sent as `Authorization: Bearer`. Its refresh tokens stop working and its access tokens are refused from the next request. Ending a session that already ended also answers 204.',
      body: logoutBody,
      response: { 204: z.null().describe('Session ended'), ...problemResponses(401, 422, 429) },
    },
    handler: async (req, reply) => {
      const refreshToken = req.body?.refreshToken;
      const bearer = bearerOf(req);
      if (refreshToken !== undefined) {
        if (!(await sessions.logout(refreshToken))) throw new AppError('invalid-token', 'The refresh token is unknown.');
      } else if (bearer) {
        if (!(await sessions.logoutAccessToken(bearer))) throw new AppError('invalid-token', 'The access token is invalid or expired; send the refresh token in the body instead.');
      } else {
        throw new AppError('unauthorized', 'Send the refresh token in the body, or the access token as "Authorization: Bearer <token>".');
      }
      return reply.code(204).send(null);
    },
  });

  r.get('/auth/jwks.json', {
    config: PUBLIC,
    schema: { tags, summary: 'Public keys that verify access tokens (JWK set)', response: { 200: jwksSchema, ...problemResponses(429) } },
    handler: async (_req, reply) => {
      reply.header('Cache-Control', 'public, max-age=60');
      return keys.jwks();
    },
  });
};
