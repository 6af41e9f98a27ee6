import { SignJWT, decodeProtectedHeader, errors, jwtVerify } from 'jose';
import type { Role } from '../../db/schema/users.js';
import { JWT_ALGORITHM } from './jwt-keys.js';
import type { JwtKeys } from './jwt-keys.js';

/** Access-token lifetime in seconds (spec "Sessions (JWT)"). */
export const ACCESS_TOKEN_TTL_SECONDS = 900;

/** `aud` of access tokens: this platform's API. */
export const ACCESS_TOKEN_AUDIENCE = 'vap-api';

/** Accepted clock difference between control planes when checking `exp`/`iat` (seconds). */
const CLOCK_TOLERANCE_SECONDS = 5;

/** What an access token says. The role is informational: requests read the current role from the database. */
export interface AccessClaims {
  /** User id (`sub`). */
  userId: string;
  /** Tenant id (`tid`). */
  tenantId: string;
  role: Role;
  /** Login session (`sid`); ending the session ends its access tokens at the next request. */
  sessionId: string;
}

/** A verified token, or why it was refused (`expired` gets its own 401 detail). */
export type VerifiedAccessToken = { ok: true; claims: AccessClaims } | { ok: false; reason: 'expired' | 'invalid' };

const JWT_SHAPE = /^eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+$/;

/** True when a bearer token has the shape of a JWT (three base64url parts, JSON header and payload). */
export function looksLikeJwt(token: string): boolean {
  return token.length < 4096 && JWT_SHAPE.test(token);
}

/**
 * Signs and verifies access tokens: ES256 JWTs with `kid` in the header and the claims
 * sub, tid, role, sid, iat, exp, iss, aud. Times come from the injected clock.
 */
export class AccessTokens {
  constructor(
    private readonly keys: JwtKeys,
    private readonly opts: { issuer: string; audience: string; now?: () => number },
  ) {}

  private nowMs(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** A signed access token valid for {@link ACCESS_TOKEN_TTL_SECONDS}. */
  async issue(claims: AccessClaims): Promise<string> {
    const key = await this.keys.signingKey();
    const iat = Math.floor(this.nowMs() / 1000);
    return new SignJWT({ tid: claims.tenantId, role: claims.role, sid: claims.sessionId })
      .setProtectedHeader({ alg: JWT_ALGORITHM, kid: key.kid, typ: 'JWT' })
      .setSubject(claims.userId)
      .setIssuer(this.opts.issuer)
      .setAudience(this.opts.audience)
      .setIssuedAt(iat)
      .setExpirationTime(iat + ACCESS_TOKEN_TTL_SECONDS)
      .sign(key.privateKey);
  }

  /** Checks signature (by `kid`), algorithm, issuer, audience and expiry. Never throws. */
  async verify(token: string): Promise<VerifiedAccessToken> {
    let kid: string | undefined;
    try {
      const header = decodeProtectedHeader(token);
      kid = header.kid;
      if (header.alg !== JWT_ALGORITHM) return { ok: false, reason: 'invalid' };
    } catch {
      return { ok: false, reason: 'invalid' };
    }
    if (!kid) return { ok: false, reason: 'invalid' };
    const key = await this.keys.verificationKey(kid);
    if (!key) return { ok: false, reason: 'invalid' };
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms: [JWT_ALGORITHM],
        issuer: this.opts.issuer,
        audience: this.opts.audience,
        requiredClaims: ['sub', 'exp', 'iat'],
        currentDate: new Date(this.nowMs()),
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      const { sub, tid, role, sid } = payload;
      if (typeof sub !== 'string' || typeof tid !== 'string' || typeof role !== 'string' || typeof sid !== 'string') return { ok: false, reason: 'invalid' };
      return { ok: true, claims: { userId: sub, tenantId: tid, role: role as Role, sessionId: sid } };
    } catch (err) {
      if (err instanceof errors.JWTExpired) return { ok: false, reason: 'expired' };
      return { ok: false, reason: 'invalid' };
    }
  }
}
