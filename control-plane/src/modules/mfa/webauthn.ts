import type { AuthenticatorTransport, WebAuthnCredential } from '@simplewebauthn/server';
import type { CredentialRow } from './repository.js';

/** The WebAuthn relying party: who credentials are made for and where ceremonies may run. */
export interface RelyingParty {
  /** Registrable domain the credentials are scoped to (`WEBAUTHN_RP_ID`). */
  rpId: string;
  /** Shown by the authenticator at registration; also the TOTP issuer (`MFA_ISSUER`). */
  rpName: string;
  /** Origins (scheme://host[:port]) a ceremony may come from (`WEBAUTHN_ORIGIN`). */
  origins: readonly string[];
}

/** How long a registration or login challenge stays valid (ms). */
export const WEBAUTHN_CHALLENGE_TTL_MS = 5 * 60_000;

/**
 * COSE algorithms we accept: ES256, EdDSA, RS256 (what security keys and platform
 * authenticators make); the library's default would add ML-DSA where the runtime has it.
 */
export const SUPPORTED_ALGORITHMS = [-7, -8, -257];

const TRANSPORTS: ReadonlySet<string> = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb']);

/** Keeps only transports the WebAuthn spec names (they are echoed back to browsers). */
export function knownTransports(list: readonly string[] | undefined): AuthenticatorTransport[] {
  return (list ?? []).filter((t): t is AuthenticatorTransport => TRANSPORTS.has(t));
}

/** A stored credential in the library's shape. */
export function toWebAuthnCredential(row: CredentialRow): WebAuthnCredential {
  return {
    id: row.id,
    publicKey: new Uint8Array(Buffer.from(row.publicKey, 'base64url')),
    counter: row.counter,
    transports: knownTransports(row.transports),
  };
}

/** The public view of a credential (never its key). */
export function credentialView(row: CredentialRow): { id: string; name: string; transports: string[]; createdAt: string; lastUsedAt: string | null } {
  return { id: row.id, name: row.name, transports: row.transports, createdAt: row.createdAt.toISOString(), lastUsedAt: row.lastUsedAt?.toISOString() ?? null };
}
