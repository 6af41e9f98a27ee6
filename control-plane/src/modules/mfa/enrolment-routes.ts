import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { problemResponses } from '../../http/problem.js';
import { principalOf } from '../auth/access-control.js';
import type { Caller, MfaEnrolmentService } from './enrolment-service.js';
import {
  confirmTotpBody,
  credentialIdParams,
  mfaFactorsSchema,
  recoveryCodesSchema,
  registerCredentialBody,
  registeredCredentialSchema,
  registrationOptionsSchema,
  totpConfirmedSchema,
  totpEnrolmentSchema,
} from './schemas.js';

const tags = ['MFA enrolment'];
// The signed-in user's own factors: users only (API keys are not people and have no factors).
const OWN = { scope: false as const, right: 'profile' as const };
const RECENT = 'Needs a login of at most 15 minutes ago (this access token\'s session): otherwise 403 `recent-login-required`.';

/** `/users/me/mfa…`: list, enrol and remove the caller's second factors and recovery codes. */
export const mfaEnrolmentRoutes: FastifyPluginAsync<{ service: MfaEnrolmentService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();
  const me = (req: FastifyRequest): string => principalOf(req).actorId;
  const caller = (req: FastifyRequest): Caller => ({ userId: principalOf(req).actorId, sessionId: principalOf(req).sessionId });

  r.get('/users/me/mfa', {
    config: OWN,
    schema: { tags, summary: 'List my second factors and how many recovery codes remain', response: { 200: mfaFactorsSchema, ...problemResponses(401, 403, 429) } },
    handler: async (req) => service.list(me(req)),
  });

  r.post('/users/me/mfa/totp', {
    config: OWN,
    schema: {
      tags,
      summary: 'Start TOTP enrolment: a new secret and its otpauth:// URI (replaces an unconfirmed one)',
      description: 'The factor counts only after POST /users/me/mfa/totp/confirm with a current code. 409 while a confirmed TOTP factor exists.',
      response: { 201: totpEnrolmentSchema, ...problemResponses(401, 403, 409, 429) },
    },
    handler: async (req, reply) => reply.code(201).send(await service.startTotp(me(req))),
  });

  r.post('/users/me/mfa/totp/confirm', {
    config: OWN,
    schema: {
      tags,
      summary: 'Confirm TOTP enrolment with the code the app shows; the first factor also yields 10 recovery codes (shown once)',
      body: confirmTotpBody,
      response: { 200: totpConfirmedSchema, ...problemResponses(400, 401, 403, 409, 422, 429) },
    },
    handler: async (req) => service.confirmTotp(me(req), req.body.code),
  });

  r.delete('/users/me/mfa/totp', {
    config: OWN,
    schema: {
      tags,
      summary: 'Remove my TOTP factor (removing the last factor turns MFA off and deletes the recovery codes)',
      description: RECENT,
      response: { 204: z.null().describe('Removed'), ...problemResponses(401, 403, 404, 429) },
    },
    handler: async (req, reply) => {
      await service.deleteTotp(caller(req));
      return reply.code(204).send(null);
    },
  });

  r.post('/users/me/mfa/webauthn/registration-options', {
    config: OWN,
    schema: {
      tags,
      summary: 'Start FIDO2 registration: options for navigator.credentials.create() (valid 5 minutes, one use)',
      response: { 200: registrationOptionsSchema, ...problemResponses(401, 403, 429) },
    },
    handler: async (req) => service.registrationOptions(me(req)),
  });

  r.post('/users/me/mfa/webauthn/registration', {
    config: OWN,
    schema: {
      tags,
      summary: 'Finish FIDO2 registration: verify the attestation and store the credential; the first factor also yields 10 recovery codes (shown once)',
      body: registerCredentialBody,
      response: { 201: registeredCredentialSchema, ...problemResponses(400, 401, 403, 409, 422, 429) },
    },
    handler: async (req, reply) => reply.code(201).send(await service.register(me(req), req.body)),
  });

  r.delete('/users/me/mfa/webauthn/:credentialId', {
    config: OWN,
    schema: {
      tags,
      summary: 'Remove one of my FIDO2 credentials (removing the last factor turns MFA off and deletes the recovery codes)',
      description: RECENT,
      params: credentialIdParams,
      response: { 204: z.null().describe('Removed'), ...problemResponses(401, 403, 404, 429) },
    },
    handler: async (req, reply) => {
      await service.deleteCredential(caller(req), req.params.credentialId);
      return reply.code(204).send(null);
    },
  });

  r.post('/users/me/mfa/recovery-codes', {
    config: OWN,
    schema: {
      tags,
      summary: 'Replace my recovery codes with 10 new ones (shown once; the old ones stop working)',
      description: RECENT,
      response: { 200: recoveryCodesSchema, ...problemResponses(401, 403, 409, 429) },
    },
    handler: async (req) => service.regenerateRecoveryCodes(caller(req)),
  });
};
