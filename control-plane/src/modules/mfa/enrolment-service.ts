import { generateRegistrationOptions, verifyRegistrationResponse } from '@simplewebauthn/server';
import type { PublicKeyCredentialCreationOptionsJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { AppError, validationError } from '@vap/shared';
import type { SecretBox } from '../../secret-box.js';
import { hashRecoveryCode, newRecoveryCodes } from './recovery-codes.js';
import { MfaRepository } from './repository.js';
import type { MfaUser } from './repository.js';
import type { RegisterCredentialInput } from './schemas.js';
import { matchTotp, newTotpSecret, otpauthUri } from './totp.js';
import { SUPPORTED_ALGORITHMS, WEBAUTHN_CHALLENGE_TTL_MS, credentialView, knownTransports } from './webauthn.js';
import type { RelyingParty } from './webauthn.js';

/**
 * How recent a login must be to remove a factor or replace the recovery codes: a stolen
 * access token (or a session kept alive by refreshing) must not be enough to switch MFA
 * off or to mint codes for the thief.
 */
export const RECENT_LOGIN_MS = 15 * 60_000;

/** Who asks: the user and the login session of their access token. */
export interface Caller {
  userId: string;
  sessionId: string | null;
}

/** Collaborators of {@link MfaEnrolmentService}. */
export interface MfaEnrolmentDeps {
  repo: MfaRepository;
  secrets: SecretBox;
  rp: RelyingParty;
  /** Clock (ms) for TOTP steps and challenge expiry; tests move it. */
  now?: () => number;
}

/**
 * A user's own second factors: TOTP (secret sealed at rest, confirmed by a first code),
 * FIDO2/WebAuthn credentials, and recovery codes. MFA is on while the user holds a
 * confirmed TOTP factor or any WebAuthn credential. The change that turns it on creates 10
 * recovery codes (returned once); the change that turns it off deletes them.
 */
export class MfaEnrolmentService {
  private readonly repo: MfaRepository;
  private readonly secrets: SecretBox;
  private readonly rp: RelyingParty;
  private readonly now: () => number;

  constructor(deps: MfaEnrolmentDeps) {
    this.repo = deps.repo;
    this.secrets = deps.secrets;
    this.rp = deps.rp;
    this.now = deps.now ?? Date.now;
  }

  async list(userId: string) {
    const [totp, credentials, remaining] = await Promise.all([this.repo.findTotp(userId), this.repo.listCredentials(userId), this.repo.unusedRecoveryCodes(userId)]);
    const confirmed = totp?.confirmedAt != null;
    return {
      mfaEnabled: confirmed || credentials.length > 0,
      totp: totp ? { confirmed, createdAt: totp.createdAt.toISOString(), confirmedAt: totp.confirmedAt?.toISOString() ?? null } : null,
      webauthn: credentials.map(credentialView),
      recoveryCodesRemaining: remaining,
    };
  }

  /** A new unconfirmed TOTP secret (replacing an unconfirmed one); 409 if one is confirmed. */
  async startTotp(userId: string): Promise<{ secret: string; otpauthUri: string }> {
    const user = await this.user(userId);
    const secret = newTotpSecret();
    if (!(await this.repo.putPendingTotp(userId, this.secrets.seal(secret)))) {
      throw new AppError('conflict', 'A confirmed TOTP factor exists; remove it (DELETE /users/me/mfa/totp) before enrolling a new one.');
    }
    return { secret, otpauthUri: otpauthUri(secret, this.rp.rpName, user.email) };
  }

  /** Confirms the pending TOTP factor with a current code (which cannot then be used to log in). */
  async confirmTotp(userId: string, code: string): Promise<{ mfaEnabled: true; recoveryCodes: string[] | null }> {
    const totp = await this.repo.findTotp(userId);
    if (!totp) throw new AppError('invalid-state', 'No TOTP enrolment is in progress; start one with POST /users/me/mfa/totp.');
    if (totp.confirmedAt) throw new AppError('invalid-state', 'The TOTP factor is already confirmed.');
    const step = matchTotp(this.secrets.open(totp.secretSealed), code, this.now(), totp.lastUsedStep);
    if (step === null) throw validationError('code', 'is not the current code for this secret (check the device clock)');
    const codes = newRecoveryCodes();
    const { result, turnedOn } = await this.repo.changeFactors(userId, codes.map(hashRecoveryCode), (tx) => MfaRepository.confirmTotp(tx, userId, step));
    if (!result) throw new AppError('conflict', 'The TOTP enrolment changed meanwhile (confirmed or replaced by another request).');
    return { mfaEnabled: true, recoveryCodes: turnedOn ? codes : null };
  }

  async deleteTotp({ userId, sessionId }: Caller): Promise<void> {
    await this.requireRecentLogin(userId, sessionId);
    const { result } = await this.repo.changeFactors(userId, [], (tx) => MfaRepository.deleteTotp(tx, userId));
    if (!result) throw new AppError('not-found', 'There is no TOTP factor to remove.');
  }

  /** Registration options; their challenge is remembered for one registration within 5 minutes. */
  async registrationOptions(userId: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const user = await this.user(userId);
    const existing = await this.repo.listCredentials(userId);
    const options = await generateRegistrationOptions({
      rpName: this.rp.rpName,
      rpID: this.rp.rpId,
      userName: user.email,
      userID: new TextEncoder().encode(user.id),
      userDisplayName: `${user.firstName} ${user.lastName}`.trim() || user.email,
      timeout: WEBAUTHN_CHALLENGE_TTL_MS,
      attestationType: 'none',
      excludeCredentials: existing.map((c) => ({ id: c.id, transports: knownTransports(c.transports) })),
      // A second factor after the password: a discoverable credential is not needed.
      authenticatorSelection: { residentKey: 'discouraged', userVerification: 'preferred' },
      supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
    });
    await this.repo.putRegistrationChallenge(userId, options.challenge, new Date(this.now() + WEBAUTHN_CHALLENGE_TTL_MS));
    return options;
  }

  /** Verifies the authenticator's attestation against the pending challenge and stores the credential. */
  async register(userId: string, input: RegisterCredentialInput) {
    const challenge = await this.repo.takeRegistrationChallenge(userId, new Date(this.now()));
    if (!challenge) throw new AppError('invalid-state', 'No registration is pending, or it expired (5 minutes) or was used; ask for new options.');
    let verified;
    try {
      verified = await verifyRegistrationResponse({
        response: input.response as RegistrationResponseJSON,
        expectedChallenge: challenge,
        expectedOrigin: [...this.rp.origins],
        expectedRPID: this.rp.rpId,
        requireUserVerification: false,
        supportedAlgorithmIDs: SUPPORTED_ALGORITHMS,
      });
    } catch (err) {
      // The library's reasons name what did not match (origin, rpId hash, challenge, format): safe and useful here.
      throw validationError('response', `could not be verified: ${err instanceof Error ? err.message : 'unknown reason'}`);
    }
    if (!verified.verified) throw validationError('response', 'could not be verified');
    const { credential } = verified.registrationInfo;
    const codes = newRecoveryCodes();
    const { result: row, turnedOn } = await this.repo.changeFactors(userId, codes.map(hashRecoveryCode), (tx) =>
      MfaRepository.insertCredential(tx, {
        id: credential.id,
        userId,
        name: input.name,
        publicKey: Buffer.from(credential.publicKey).toString('base64url'),
        counter: credential.counter,
        transports: knownTransports(credential.transports ?? input.response.response.transports),
      }),
    );
    if (!row) throw new AppError('conflict', 'This credential is already registered.');
    return { credential: credentialView(row), mfaEnabled: true as const, recoveryCodes: turnedOn ? codes : null };
  }

  async deleteCredential({ userId, sessionId }: Caller, credentialId: string): Promise<void> {
    await this.requireRecentLogin(userId, sessionId);
    const { result } = await this.repo.changeFactors(userId, [], (tx) => MfaRepository.deleteCredential(tx, userId, credentialId));
    if (!result) throw new AppError('not-found', 'You have no FIDO2 credential with this id.');
  }

  /** Replaces every recovery code with 10 new ones; 409 while MFA is off. */
  async regenerateRecoveryCodes({ userId, sessionId }: Caller): Promise<{ recoveryCodes: string[] }> {
    await this.requireRecentLogin(userId, sessionId);
    const codes = newRecoveryCodes();
    if (!(await this.repo.regenerateRecoveryCodes(userId, codes.map(hashRecoveryCode)))) {
      throw new AppError('invalid-state', 'MFA is off: enrol TOTP or a FIDO2 credential first (that creates recovery codes).');
    }
    return { recoveryCodes: codes };
  }

  private async requireRecentLogin(userId: string, sessionId: string | null): Promise<void> {
    const startedAt = sessionId ? await this.repo.sessionStartedAt(userId, sessionId) : undefined;
    if (!startedAt || this.now() - startedAt.getTime() > RECENT_LOGIN_MS) {
      throw new AppError('recent-login-required', `This change needs a login within the last ${RECENT_LOGIN_MS / 60_000} minutes; log in again (password and second factor) and retry with the new access token.`);
    }
  }

  private async user(userId: string): Promise<MfaUser> {
    const user = await this.repo.findUser(userId);
    if (!user) throw new AppError('unauthorized', 'The signed-in user no longer exists.');
    return user;
  }
}
