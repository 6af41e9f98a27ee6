import { generateAuthenticationOptions, verifyAuthenticationResponse } from '@simplewebauthn/server';
import type { AuthenticationResponseJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { AppError } from '@vap/shared';
import type { SecretBox } from '../../secret-box.js';
import { MFA_MAX_ATTEMPTS } from '../auth/mfa-tokens.js';
import type { MfaChallenge, MfaTokens } from '../auth/mfa-tokens.js';
import type { SessionMeta, SessionService, TokenResponse } from '../auth/session-service.js';
import { hashRecoveryCode, looksLikeRecoveryCode } from './recovery-codes.js';
import type { MfaRepository } from './repository.js';
import type { Fido2VerifyInput, VerifyMfaInput } from './schemas.js';
import { matchTotp } from './totp.js';
import { WEBAUTHN_CHALLENGE_TTL_MS, knownTransports, toWebAuthnCredential } from './webauthn.js';
import type { RelyingParty } from './webauthn.js';

/** Collaborators of {@link MfaLoginService}: the login's `MfaTokens` and `SessionService` for the login around the factor check. */
export interface MfaLoginDeps {
  repo: MfaRepository;
  tokens: MfaTokens;
  sessions: Pick<SessionService, 'startSession'>;
  secrets: SecretBox;
  rp: RelyingParty;
  /** Clock (ms) for TOTP steps; tests move it. */
  now?: () => number;
  /** Why a FIDO2 assertion was refused goes here (the caller only hears "refused"). */
  log?: { info(obj: object, msg: string): void };
}

const TOKEN_DEAD = 'The mfaToken is unknown, expired, already used or out of attempts; log in again with your password.';

/**
 * The second step of a login with MFA: the `mfaToken` from the password step plus a TOTP
 * code, a recovery code or a FIDO2 assertion. Every code or assertion counts one of the
 * token's {@link MFA_MAX_ATTEMPTS} attempts before it is checked; success completes the
 * token (once) and starts the session.
 */
export class MfaLoginService {
  private readonly repo: MfaRepository;
  private readonly tokens: MfaTokens;
  private readonly sessions: Pick<SessionService, 'startSession'>;
  private readonly secrets: SecretBox;
  private readonly rp: RelyingParty;
  private readonly now: () => number;
  private readonly log: { info(obj: object, msg: string): void } | undefined;

  constructor(deps: MfaLoginDeps) {
    this.repo = deps.repo;
    this.tokens = deps.tokens;
    this.sessions = deps.sessions;
    this.secrets = deps.secrets;
    this.rp = deps.rp;
    this.now = deps.now ?? Date.now;
    this.log = deps.log;
  }

  /**
   * TOTP (RFC 6238, ±1 step, each step once) or a recovery code (each once). A code that
   * is not 6 digits is taken as a recovery code whatever `method` says.
   */
  async verifyCode(input: VerifyMfaInput, meta: SessionMeta): Promise<TokenResponse> {
    const challenge = await this.attempt(input.mfaToken);
    const code = input.code.trim();
    const asRecovery = input.method === 'recovery_code' || !/^\d{6}$/.test(code);
    const ok = asRecovery ? await this.spendRecoveryCode(challenge.userId, code) : await this.useTotp(challenge.userId, code);
    if (!ok) throw refused(asRecovery ? 'The recovery code is not valid or was already used.' : 'The code is not valid or was already used.', challenge);
    return this.complete(challenge, meta);
  }

  /** Authentication options for the user's credentials; the challenge is bound to this mfaToken (a new one replaces it). */
  async fido2Challenge(mfaToken: string): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const challenge = await this.tokens.find(mfaToken);
    if (!challenge) throw new AppError('mfa-failed', TOKEN_DEAD);
    const credentials = await this.repo.listCredentials(challenge.userId);
    if (credentials.length === 0) throw new AppError('mfa-failed', 'This account has no FIDO2 credential; use another of the login response\'s mfaMethods.');
    const options = await generateAuthenticationOptions({
      rpID: this.rp.rpId,
      allowCredentials: credentials.map((c) => ({ id: c.id, transports: knownTransports(c.transports) })),
      userVerification: 'preferred',
      timeout: WEBAUTHN_CHALLENGE_TTL_MS,
    });
    if (!(await this.tokens.bindWebauthnChallenge(challenge.id, options.challenge))) throw new AppError('mfa-failed', TOKEN_DEAD);
    return options;
  }

  /**
   * Verifies an assertion against the challenge bound to the token (taken: single use),
   * the configured origins and RP ID, the stored public key and signature counter (which
   * must grow when the authenticator keeps one); stores the new counter.
   */
  async fido2Verify(input: Fido2VerifyInput, meta: SessionMeta): Promise<TokenResponse> {
    const challenge = await this.attempt(input.mfaToken);
    const expected = await this.tokens.takeWebauthnChallenge(challenge.id);
    if (!expected) throw refused('No FIDO2 challenge is pending for this mfaToken (each works once); request one from /auth/mfa/fido2/challenge.', challenge);
    const response = assertionOf(input);
    const credential = await this.repo.findCredential(challenge.userId, response.id);
    if (!credential) throw this.fido2Refused(challenge, 'unknown credential');
    let newCounter: number;
    try {
      const result = await verifyAuthenticationResponse({
        response,
        expectedChallenge: expected,
        expectedOrigin: [...this.rp.origins],
        expectedRPID: this.rp.rpId,
        credential: toWebAuthnCredential(credential),
        requireUserVerification: false,
      });
      if (!result.verified) throw new Error('signature did not verify');
      newCounter = result.authenticationInfo.newCounter;
    } catch (err) {
      throw this.fido2Refused(challenge, err instanceof Error ? err.message : 'verification failed');
    }
    // Compare-and-set on the counter we verified against: a concurrent twin cannot pass too.
    if (!(await this.repo.useCredential(credential.id, credential.counter, newCounter))) throw this.fido2Refused(challenge, 'counter changed concurrently');
    return this.complete(challenge, meta);
  }

  /** Finds a usable token and counts this attempt (atomically, so parallel guesses cannot exceed the limit). */
  private async attempt(mfaToken: string): Promise<MfaChallenge> {
    const challenge = await this.tokens.find(mfaToken);
    if (!challenge || !(await this.tokens.recordAttempt(challenge.id))) throw new AppError('mfa-failed', TOKEN_DEAD);
    return challenge;
  }

  private async complete(challenge: MfaChallenge, meta: SessionMeta): Promise<TokenResponse> {
    if (!(await this.tokens.consume(challenge.id))) throw new AppError('mfa-failed', TOKEN_DEAD);
    return this.sessions.startSession(challenge.userId, meta);
  }

  private async useTotp(userId: string, code: string): Promise<boolean> {
    const totp = await this.repo.findTotp(userId);
    if (!totp?.confirmedAt) return false;
    const step = matchTotp(this.secrets.open(totp.secretSealed), code, this.now(), totp.lastUsedStep);
    // The step is recorded with compare-and-set: of two requests with one code, one wins.
    return step !== null && (await this.repo.useTotpStep(userId, step));
  }

  private async spendRecoveryCode(userId: string, code: string): Promise<boolean> {
    return looksLikeRecoveryCode(code) && (await this.repo.spendRecoveryCode(userId, hashRecoveryCode(code)));
  }

  private fido2Refused(challenge: MfaChallenge, reason: string): AppError {
    this.log?.info({ userId: challenge.userId, reason }, 'fido2 assertion refused');
    return refused('The security key\'s response could not be verified.', challenge);
  }
}

/** A refusal that says how many attempts the token has left (this one was already counted). */
function refused(detail: string, challenge: MfaChallenge): AppError {
  const left = Math.max(0, MFA_MAX_ATTEMPTS - challenge.attempts - 1);
  return new AppError('mfa-failed', `${detail} ${left === 0 ? 'This mfaToken has no attempts left; log in again.' : `${left} attempt${left === 1 ? '' : 's'} left with this mfaToken.`}`);
}

/** The assertion in the library's shape, from the spec's flat fields or the browser's `response` object. */
function assertionOf(input: Fido2VerifyInput): AuthenticationResponseJSON {
  if (input.response) return input.response as AuthenticationResponseJSON;
  return {
    id: input.credentialId!,
    rawId: input.credentialId!,
    type: 'public-key',
    response: {
      clientDataJSON: input.clientDataJSON!,
      authenticatorData: input.authenticatorData!,
      signature: input.signature!,
      ...(input.userHandle ? { userHandle: input.userHandle } : {}),
    },
    clientExtensionResults: {},
  };
}
