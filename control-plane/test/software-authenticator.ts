import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import type { KeyObject } from 'node:crypto';

/**
 * A FIDO2 authenticator in software, for tests: a real P-256 key pair, real CBOR
 * attestation objects ("none" format) and real ES256 assertion signatures, built byte for
 * byte as WebAuthn §6.1 (authenticator data) and §6.5 (attestation) lay them out. The
 * server's verifier sees exactly what a browser with a security key would send.
 */
export class SoftwareAuthenticator {
  readonly credentialId: Buffer = randomBytes(16);
  /** The signature counter the next assertion reports (incremented before signing). */
  counter = 0;
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;

  constructor() {
    const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    this.privateKey = pair.privateKey;
    this.publicKey = pair.publicKey;
  }

  get id(): string {
    return this.credentialId.toString('base64url');
  }

  /** navigator.credentials.create(): the RegistrationResponseJSON for `challenge`. */
  register(challenge: string, opts: { origin: string; rpId: string; type?: string }) {
    const clientDataJSON = Buffer.from(JSON.stringify({ type: opts.type ?? 'webauthn.create', challenge, origin: opts.origin, crossOrigin: false }));
    const jwk = this.publicKey.export({ format: 'jwk' });
    // COSE_Key (RFC 9053 §7.1.1): kty EC2, alg ES256, crv P-256, x, y.
    const coseKey = new Map<number, unknown>([
      [1, 2],
      [3, -7],
      [-1, 1],
      [-2, Buffer.from(jwk.x!, 'base64url')],
      [-3, Buffer.from(jwk.y!, 'base64url')],
    ]);
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(this.credentialId.length);
    const attestedCredentialData = Buffer.concat([Buffer.alloc(16) /* AAGUID: none */, idLength, this.credentialId, cbor(coseKey)]);
    // Flags: UP (0x01) | UV (0x04) | AT (0x40).
    const authData = Buffer.concat([sha256(opts.rpId), Buffer.from([0x45]), u32(this.counter), attestedCredentialData]);
    const attestationObject = cbor(new Map<string, unknown>([['fmt', 'none'], ['attStmt', new Map()], ['authData', authData]]));
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key' as const,
      response: { clientDataJSON: clientDataJSON.toString('base64url'), attestationObject: attestationObject.toString('base64url'), transports: ['usb'] },
      clientExtensionResults: {},
    };
  }

  /**
   * navigator.credentials.get(): an assertion over `challenge`, in the spec's flat fields.
   * The counter goes up by one first unless `counter` is given (to go backwards on purpose).
   */
  assert(challenge: string, opts: { origin: string; rpId: string; counter?: number }) {
    this.counter = opts.counter ?? this.counter + 1;
    const clientDataJSON = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: opts.origin, crossOrigin: false }));
    const authenticatorData = Buffer.concat([sha256(opts.rpId), Buffer.from([0x05]), u32(this.counter)]);
    // ES256 over authenticatorData || SHA-256(clientDataJSON), DER-encoded (WebAuthn §6.5.6).
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientDataJSON)]), this.privateKey);
    return {
      credentialId: this.id,
      authenticatorData: authenticatorData.toString('base64url'),
      clientDataJSON: clientDataJSON.toString('base64url'),
      signature: signature.toString('base64url'),
    };
  }
}

function sha256(data: Buffer | string): Buffer {
  return createHash('sha256').update(data).digest();
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** A minimal CBOR encoder (RFC 8949): unsigned/negative integers, byte and text strings, maps. */
export function cbor(value: unknown): Buffer {
  if (typeof value === 'number') {
    if (!Number.isInteger(value)) throw new Error('only integers');
    return value >= 0 ? head(0, value) : head(1, -1 - value);
  }
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value]);
  if (typeof value === 'string') {
    const b = Buffer.from(value, 'utf8');
    return Buffer.concat([head(3, b.length), b]);
  }
  if (value instanceof Map) {
    const parts: Buffer[] = [head(5, value.size)];
    for (const [k, v] of value) parts.push(cbor(k), cbor(v));
    return Buffer.concat(parts);
  }
  throw new Error(`cannot encode ${typeof value}`);
}

function head(major: number, n: number): Buffer {
  if (n < 24) return Buffer.from([(major << 5) | n]);
  if (n < 0x100) return Buffer.from([(major << 5) | 24, n]);
  if (n < 0x10000) {
    const b = Buffer.alloc(3);
    b[0] = (major << 5) | 25;
    b.writeUInt16BE(n, 1);
    return b;
  }
  const b = Buffer.alloc(5);
  b[0] = (major << 5) | 26;
  b.writeUInt32BE(n, 1);
  return b;
}
