import { z } from 'zod';

const base64url = (what: string) => z.string().min(1, 'must not be empty').max(65_536, 'is too long').regex(/^[A-Za-z0-9_-]+$/, `must be ${what}, base64url-encoded without padding`);

/** A PublicKeyCredential, JSON-encoded (as @simplewebauthn/browser returns it), around its ceremony's `response`. */
const publicKeyCredentialJson = <R extends z.ZodType>(response: R) =>
  z.looseObject({
    id: base64url('the credential id'),
    rawId: base64url('the credential id'),
    type: z.literal('public-key'),
    response,
    clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
    authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
  });

// --- Enrolment (/users/me/mfa) ------------------------------------------------------

export const webauthnCredentialSchema = z
  .object({
    id: z.string().describe('Base64url credential id'),
    name: z.string(),
    transports: z.array(z.string()).describe('As reported at registration (usb, nfc, ble, internal, hybrid)'),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
  })
  .meta({ id: 'WebAuthnCredential' });

export const mfaFactorsSchema = z
  .object({
    mfaEnabled: z.boolean().describe('A confirmed TOTP factor or at least one FIDO2 credential: login asks for a second step'),
    totp: z
      .object({ confirmed: z.boolean().describe('False while enrolment waits for its first code'), createdAt: z.string(), confirmedAt: z.string().nullable() })
      .nullable()
      .describe('Null: no TOTP factor'),
    webauthn: z.array(webauthnCredentialSchema),
    recoveryCodesRemaining: z.number().int().describe('Unused recovery codes'),
  })
  .meta({ id: 'MfaFactors' });

export const totpEnrolmentSchema = z
  .object({
    secret: z.string().describe('Base32 secret (RFC 4648, no padding) for manual entry; shown only now'),
    otpauthUri: z.string().describe('otpauth://totp/… URI for a QR code (SHA1, 6 digits, 30 s)'),
  })
  .meta({ id: 'TotpEnrolment' });

export const confirmTotpBody = z.strictObject({
  code: z.string().trim().regex(/^\d{6}$/, 'must be the 6-digit code the authenticator app shows'),
});

const recoveryCodes = z
  .array(z.string())
  .nullable()
  .describe('Set when this request turned MFA on: the 10 recovery codes, shown only now (null when MFA was already on; the codes held are unchanged)');

export const totpConfirmedSchema = z.object({ mfaEnabled: z.literal(true), recoveryCodes }).meta({ id: 'TotpConfirmed' });

export const registrationResponseShape = publicKeyCredentialJson(
  z.looseObject({
    clientDataJSON: base64url('clientDataJSON'),
    attestationObject: base64url('the attestation object'),
    transports: z.array(z.string().max(32)).max(10).optional(),
  }),
).describe('The PublicKeyCredential from navigator.credentials.create(), JSON-encoded (as @simplewebauthn/browser startRegistration returns it)');

export const registerCredentialBody = z.strictObject({
  response: registrationResponseShape,
  name: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters').default('Security key').describe('A label for the list of factors'),
});
export type RegisterCredentialInput = z.infer<typeof registerCredentialBody>;

export const registeredCredentialSchema = z
  .object({ credential: webauthnCredentialSchema, mfaEnabled: z.literal(true), recoveryCodes })
  .meta({ id: 'WebAuthnRegistered' });

const credentialDescriptor = z.object({ id: z.string(), type: z.string().describe('public-key'), transports: z.array(z.string()).optional() });

export const registrationOptionsSchema = z
  .object({
    challenge: z.string(),
    rp: z.object({ id: z.string().optional(), name: z.string() }),
    user: z.object({ id: z.string(), name: z.string(), displayName: z.string() }),
    pubKeyCredParams: z.array(z.object({ type: z.string(), alg: z.number() })),
    timeout: z.number().optional(),
    excludeCredentials: z.array(credentialDescriptor).optional(),
    authenticatorSelection: z
      .object({ authenticatorAttachment: z.string().optional(), requireResidentKey: z.boolean().optional(), residentKey: z.string().optional(), userVerification: z.string().optional() })
      .optional(),
    hints: z.array(z.string()).optional(),
    attestation: z.string().optional(),
    extensions: z.object({ credProps: z.boolean().optional() }).optional(),
  })
  .describe('PublicKeyCredentialCreationOptions, JSON-encoded: pass to navigator.credentials.create() (e.g. @simplewebauthn/browser startRegistration); valid 5 minutes, one registration')
  .meta({ id: 'WebAuthnRegistrationOptions' });

export const credentialIdParams = z.object({ credentialId: z.string().min(1).max(1024) });

export const recoveryCodesSchema = z
  .object({ recoveryCodes: z.array(z.string()).describe('10 new codes, shown only now; every earlier code stops working') })
  .meta({ id: 'RecoveryCodes' });

// --- Login second step (/auth/mfa/…) -------------------------------------------------

export const mfaTokenField = z.string().min(1, 'must not be empty').max(200, 'is too long').describe('From the login response');

export const verifyMfaBody = z.strictObject({
  mfaToken: mfaTokenField,
  method: z
    .enum(['totp', 'recovery_code'])
    .default('totp')
    .describe('`totp` (default) or `recovery_code`. A code that is not 6 digits is taken as a recovery code whatever this says, so one input box works'),
  code: z.string().trim().min(1, 'must not be empty').max(64, 'is too long'),
});
export type VerifyMfaInput = z.infer<typeof verifyMfaBody>;

export const fido2ChallengeBody = z.strictObject({ mfaToken: mfaTokenField });

export const fido2ChallengeSchema = z
  .object({
    challenge: z.string().describe('Base64url; bound to this mfaToken, single use'),
    rpId: z.string().optional(),
    userVerification: z.string().optional(),
    timeout: z.number().optional(),
    allowCredentials: z.array(credentialDescriptor).optional(),
    hints: z.array(z.string()).optional(),
  })
  .describe('PublicKeyCredentialRequestOptions, JSON-encoded: pass to navigator.credentials.get()')
  .meta({ id: 'Fido2Challenge' });

const authenticationResponseShape = publicKeyCredentialJson(
  z.looseObject({
    clientDataJSON: base64url('clientDataJSON'),
    authenticatorData: base64url('authenticatorData'),
    signature: base64url('the signature'),
    userHandle: base64url('the user handle').optional(),
  }),
).describe('Alternative to the flat fields: the PublicKeyCredential from navigator.credentials.get(), JSON-encoded');

/**
 * The spec's flat fields (`credentialId`, `authenticatorData`, `clientDataJSON`,
 * `signature`), or the browser's `response` object: one of the two forms.
 */
export const fido2VerifyBody = z
  .strictObject({
    mfaToken: mfaTokenField,
    credentialId: base64url('the credential id').optional(),
    authenticatorData: base64url('authenticatorData').optional(),
    clientDataJSON: base64url('clientDataJSON').optional(),
    signature: base64url('the signature').optional(),
    userHandle: base64url('the user handle').optional(),
    response: authenticationResponseShape.optional(),
  })
  .superRefine((b, ctx) => {
    if (b.response) return;
    for (const field of ['credentialId', 'authenticatorData', 'clientDataJSON', 'signature'] as const) {
      if (b[field] === undefined) ctx.addIssue({ code: 'custom', path: [field], message: 'is required (or send the assertion as `response`)' });
    }
  });
export type Fido2VerifyInput = z.infer<typeof fido2VerifyBody>;
