import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { pageSchema } from '../../http/pagination.js';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import type { UserService } from './service.js';
import {
  acceptInvitationBody,
  acceptedInvitationSchema,
  invitationIdParams,
  invitationSchema,
  inviteBody,
  listInvitationsQuery,
  listUsersQuery,
  profileSchema,
  updateProfileBody,
  updateUserBody,
  userIdParams,
  userSchema,
} from './schemas.js';

const tags = ['Users'];
// User-only rights (auth/permissions.ts): API keys are machines, not members of the staff.
const READ = { scope: false, right: 'users:read' } as const;
const WRITE = { scope: false, right: 'users:write' } as const;
const ADMIN = { scope: false, right: 'users:admin' } as const;
const PROFILE = { scope: false, right: 'profile' } as const;

/**
 * The Users API under /api/v1/users. Static paths (/users/me, /users/invitations, /users/invite)
 * are registered before /users/:userId; find-my-way prefers static segments anyway, the order
 * only keeps that visible.
 */
export const userRoutes: FastifyPluginAsync<{ service: UserService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.get('/users/me', {
    config: PROFILE,
    schema: { tags, summary: 'Your own profile', response: { 200: profileSchema, ...problemResponses(401, 403, 429) } },
    handler: async (req) => service.me(principalOf(req)),
  });

  r.patch('/users/me', {
    config: PROFILE,
    schema: {
      tags,
      summary: 'Change your own names, time zone and notification preferences',
      description: '`timezone` must be an IANA zone name (e.g. `Europe/Paris`) and is stored in its canonical spelling; `notificationPreferences` keys not sent keep their value.',
      body: updateProfileBody,
      response: { 200: profileSchema, ...problemResponses(400, 401, 403, 422, 429) },
    },
    handler: async (req) => service.updateMe(principalOf(req), req.body),
  });

  r.get('/users/invitations', {
    config: READ,
    schema: { tags, summary: 'Pending invitations (not accepted, revoked or expired)', querystring: listInvitationsQuery, response: { 200: pageSchema(invitationSchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.listInvitations(principalOf(req), req.query),
  });

  r.delete('/users/invitations/:invitationId', {
    config: WRITE,
    schema: { tags, summary: 'Revoke a pending invitation (its link stops working at once)', params: invitationIdParams, response: { 204: z.null().describe('Revoked'), ...problemResponses(401, 403, 404, 429) } },
    handler: async (req, reply) => {
      await service.revokeInvitation(principalOf(req), req.params.invitationId);
      return reply.code(204).send(null);
    },
  });

  r.post('/users/invite', {
    config: { ...WRITE, idempotent: true },
    schema: {
      tags,
      summary: 'Invite someone by email',
      description:
        'Emails a single-use link (valid 7 days) with which the invitee sets a password at POST /auth/invitations/accept. You cannot invite a role holding rights you do not hold. 409 when the address belongs to a user or to a pending invitation; 503 when the email could not be sent (then nothing was created).',
      body: inviteBody,
      response: { 201: invitationSchema, ...problemResponses(400, 401, 403, 409, 422, 429, 503) },
    },
    handler: async (req, reply) => reply.code(201).send(await service.invite(principalOf(req), req.body)),
  });

  r.get('/users', {
    config: READ,
    schema: { tags, summary: 'List the account’s users', querystring: listUsersQuery, response: { 200: pageSchema(userSchema), ...problemResponses(401, 403, 422, 429) } },
    handler: async (req) => service.list(principalOf(req), req.query),
  });

  r.get('/users/:userId', {
    config: READ,
    schema: { tags, summary: 'Get a user', params: userIdParams, response: { 200: userSchema, ...problemResponses(401, 403, 404, 429) } },
    handler: async (req) => service.get(principalOf(req), req.params.userId),
  });

  r.patch('/users/:userId', {
    config: WRITE,
    schema: {
      tags,
      summary: 'Change a user’s role, names or permissions',
      description:
        'Applies from the user’s next request. You cannot give rights you do not hold, nor change a user whose rights go beyond yours (403). The last active Admin keeps the Admin role (409 `invalid-state`).',
      params: userIdParams,
      body: updateUserBody,
      response: { 200: userSchema, ...problemResponses(400, 401, 403, 404, 409, 422, 429) },
    },
    handler: async (req) => service.update(principalOf(req), req.params.userId, req.body),
  });

  r.post('/users/:userId/deactivate', {
    config: { ...ADMIN, idempotent: true },
    schema: {
      tags,
      summary: 'Deactivate a user (Admin only)',
      description:
        'Status becomes `deactivated`: the user cannot log in, and every session of theirs ends at once (their access tokens are refused from the next request, refresh tokens fail). Their data is kept. You cannot deactivate yourself or the last active Admin (409 `invalid-state`). Repeating it answers 200.',
      params: userIdParams,
      response: { 200: userSchema, ...problemResponses(401, 403, 404, 409, 429) },
    },
    handler: async (req) => service.deactivate(principalOf(req), req.params.userId),
  });

  r.post('/users/:userId/reactivate', {
    config: { ...ADMIN, idempotent: true },
    schema: {
      tags,
      summary: 'Reactivate a deactivated user (Admin only)',
      description: 'Status becomes `active`; the user logs in again with their password (ended sessions stay ended).',
      params: userIdParams,
      response: { 200: userSchema, ...problemResponses(401, 403, 404, 429) },
    },
    handler: async (req) => service.reactivate(principalOf(req), req.params.userId),
  });
};

/** POST /api/v1/auth/invitations/accept: public, the invitation token is the credential. */
export const invitationAcceptRoutes: FastifyPluginAsync<{ service: UserService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/auth/invitations/accept', {
    config: { scope: null },
    schema: {
      tags: ['Users', 'Sessions'],
      summary: 'Accept an invitation: set a password and sign in',
      description:
        'The `token` is the one in the invitation email’s link (`…/accept-invitation?token=…`). Creates the user with the invited role and names, and answers the new user and a token response, as a login would. The password needs at least 12 characters and must not contain the email. A token works once: 400 `invitation-invalid` when unknown, used or revoked, 410 `invitation-expired` after 7 days.',
      body: acceptInvitationBody,
      response: { 201: acceptedInvitationSchema, ...problemResponses(400, 409, 410, 422, 429) },
    },
    handler: async (req, reply) => {
      const ua = req.headers['user-agent'];
      return reply.code(201).send(await service.accept(req.body, { ip: req.ip, userAgent: typeof ua === 'string' ? ua : null }));
    },
  });
};
