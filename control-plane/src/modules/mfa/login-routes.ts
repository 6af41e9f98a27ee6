import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { problemResponses } from '../../http/problem.js';
import { sessionMeta } from '../auth/session-routes.js';
import { tokenResponseSchema } from '../auth/session-schemas.js';
import type { MfaLoginService } from './login-service.js';
import { fido2ChallengeBody, fido2ChallengeSchema, fido2VerifyBody, verifyMfaBody } from './schemas.js';

const tags = ['Sessions'];
// Public: the mfaToken from the password step is the credential here.
const PUBLIC = { scope: null } as const;

/** The second login step: `/auth/mfa/verify` (TOTP or recovery code) and `/auth/mfa/fido2/*`. */
export const mfaLoginRoutes: FastifyPluginAsync<{ service: MfaLoginService }> = async (app, { service }) => {
  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post('/auth/mfa/verify', {
    config: PUBLIC,
    schema: {
      tags,
      summary: 'Finish an MFA login with a TOTP code or a recovery code',
      description:
        'TOTP: RFC 6238 (SHA-1, 6 digits, 30 s), one step of clock drift either way; each code works once. A recovery code works once. Each try counts one of the mfaToken\'s 5 attempts; after the fifth the token is dead (log in again).',
      body: verifyMfaBody,
      response: { 200: tokenResponseSchema, ...problemResponses(400, 401, 422, 429) },
    },
    handler: async (req) => service.verifyCode(req.body, sessionMeta(req)),
  });

  r.post('/auth/mfa/fido2/challenge', {
    config: PUBLIC,
    schema: {
      tags,
      summary: 'Get a FIDO2 challenge for an MFA login (options for navigator.credentials.get())',
      description: 'The challenge is bound to the mfaToken and works for one assertion; asking again replaces it.',
      body: fido2ChallengeBody,
      response: { 200: fido2ChallengeSchema, ...problemResponses(400, 401, 422, 429) },
    },
    handler: async (req) => service.fido2Challenge(req.body.mfaToken),
  });

  r.post('/auth/mfa/fido2/verify', {
    config: PUBLIC,
    schema: {
      tags,
      summary: 'Finish an MFA login with a FIDO2 assertion',
      description:
        'Send the assertion as the spec\'s flat base64url fields (`credentialId`, `authenticatorData`, `clientDataJSON`, `signature`, optional `userHandle`) or as the browser\'s JSON-encoded credential in `response`. Checked: the challenge bound to the mfaToken (then spent), origin, RP ID, signature, and a signature counter that grows. Counts one of the mfaToken\'s 5 attempts.',
      body: fido2VerifyBody,
      response: { 200: tokenResponseSchema, ...problemResponses(400, 401, 422, 429) },
    },
    handler: async (req) => service.fido2Verify(req.body, sessionMeta(req)),
  });
};
