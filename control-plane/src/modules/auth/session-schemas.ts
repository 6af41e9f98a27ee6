import { z } from 'zod';

export const loginBody = z.strictObject({
  email: z.string().trim().min(1, 'must not be empty').max(320, 'must be at most 320 characters'),
  password: z.string().min(1, 'must not be empty').max(1024, 'must be at most 1024 characters'),
});

/** Token response of login, refresh and MFA completion (spec "Auth and API keys"). */
export const tokenResponseSchema = z
  .object({
    accessToken: z.string().describe('JWT (ES256) for `Authorization: Bearer`, valid `expiresIn` seconds'),
    refreshToken: z.string().describe('Opaque, single use; exchange at POST /auth/refresh for a new pair'),
    tokenType: z.literal('Bearer'),
    expiresIn: z.number().int().describe('Seconds until the access token expires (900)'),
    mfaRequired: z.literal(false),
  })
  .meta({ id: 'TokenResponse' });

export const mfaChallengeResponseSchema = z
  .object({
    mfaRequired: z.literal(true),
    mfaToken: z.string().describe('Completes the login at /auth/mfa/verify or /auth/mfa/fido2/*; valid 5 minutes, 5 attempts'),
    mfaMethods: z.array(z.enum(['totp', 'fido2'])),
    accessToken: z.null(),
    refreshToken: z.null(),
  })
  .meta({ id: 'MfaChallengeResponse' });

export const loginResponseSchema = z.union([tokenResponseSchema, mfaChallengeResponseSchema]);

export const refreshBody = z.strictObject({
  refreshToken: z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters'),
});

export const logoutBody = z
  .strictObject({
    refreshToken: z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters').optional().describe('Ends the session of this refresh token; without it, send the access token as Bearer'),
  })
  // No body at all is fine: then the access token in the Authorization header says which session.
  .nullish();

export const jwksSchema = z
  .object({ keys: z.array(z.record(z.string(), z.unknown())).describe('Public JWKs (ES256) of the keys that may have signed a live access token') })
  .meta({ id: 'JsonWebKeySet' });
