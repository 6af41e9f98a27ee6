import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { checkTelnyxSignature, computeTelnyxSignature, telnyxPrivateKeyFromSeed, telnyxPublicKey, telnyxPublicKeyBase64, telnyxSignatureHeaders } from '../../src/telnyx-signature.js';

// The verified vector of reference/telephony-telnyx.md §5.
const VECTOR = {
  seed: '0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20',
  publicKey: 'ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=',
  timestamp: '1700000000',
  body: '{"data":{"event_type":"call.initiated","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0","occurred_at":"2023-11-14T22:13:20.000000Z","payload":{"call_control_id":"v3:abc","direction":"incoming","from":"+15551230001","to":"+15551230002","state":"parked"},"record_type":"event"},"meta":{"attempt":1,"delivered_to":"https://example.com/telnyx"}}',
  signature: '74hP1LqGvD0tX0H/Feh7rOD7GOt+1UNjcJa15LfDkQK4R45SVAOL1Hn/fVTCt5mbsy4E8ypMpkKrST6X4IlNCw==',
};
const AT = 1_700_000_000;

describe('Telnyx Ed25519 webhook signatures', () => {
  it('derives the reference public key from the seed and signs the reference body to the reference signature', () => {
    const key = telnyxPrivateKeyFromSeed(VECTOR.seed);
    expect(telnyxPublicKeyBase64(key)).toBe(VECTOR.publicKey);
    expect(computeTelnyxSignature(key, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.signature);
  });

  it('accepts the reference vector with the portal public key', () => {
    expect(checkTelnyxSignature({ publicKey: VECTOR.publicKey, timestamp: VECTOR.timestamp, signature: VECTOR.signature, rawBody: VECTOR.body, nowSec: AT + 10 })).toBeNull();
    expect(checkTelnyxSignature({ publicKey: VECTOR.publicKey, timestamp: VECTOR.timestamp, signature: VECTOR.signature, rawBody: Buffer.from(VECTOR.body), nowSec: AT })).toBeNull();
  });

  it('refuses a changed body, another timestamp, another key and a mangled signature', () => {
    const base = { publicKey: VECTOR.publicKey, timestamp: VECTOR.timestamp, signature: VECTOR.signature, rawBody: VECTOR.body, nowSec: AT };
    expect(checkTelnyxSignature({ ...base, rawBody: VECTOR.body.replace('+15551230002', '+15551230003') })).toBe('bad-signature');
    expect(checkTelnyxSignature({ ...base, rawBody: `${VECTOR.body}\n` })).toBe('bad-signature');
    expect(checkTelnyxSignature({ ...base, timestamp: '1700000001' })).toBe('bad-signature');
    const other = generateKeyPairSync('ed25519').privateKey;
    expect(checkTelnyxSignature({ ...base, publicKey: telnyxPublicKeyBase64(other) })).toBe('bad-signature');
    expect(checkTelnyxSignature({ ...base, signature: VECTOR.signature.slice(4) })).toBe('bad-signature');
    expect(checkTelnyxSignature({ ...base, signature: 'not base64 at all!' })).toBe('bad-signature');
  });

  it('refuses a timestamp more than 300 s away in either direction, or not a number', () => {
    const base = { publicKey: VECTOR.publicKey, timestamp: VECTOR.timestamp, signature: VECTOR.signature, rawBody: VECTOR.body };
    expect(checkTelnyxSignature({ ...base, nowSec: AT + 300 })).toBeNull();
    expect(checkTelnyxSignature({ ...base, nowSec: AT + 301 })).toBe('stale-timestamp');
    expect(checkTelnyxSignature({ ...base, nowSec: AT - 301 })).toBe('stale-timestamp');
    expect(checkTelnyxSignature({ ...base, timestamp: '1700000000.0', nowSec: AT })).toBe('stale-timestamp');
  });

  it('names a missing header or key', () => {
    const base = { publicKey: VECTOR.publicKey, timestamp: VECTOR.timestamp, signature: VECTOR.signature, rawBody: VECTOR.body, nowSec: AT };
    expect(checkTelnyxSignature({ ...base, signature: undefined })).toBe('missing-signature');
    expect(checkTelnyxSignature({ ...base, signature: '' })).toBe('missing-signature');
    expect(checkTelnyxSignature({ ...base, timestamp: undefined })).toBe('missing-timestamp');
    expect(checkTelnyxSignature({ ...base, publicKey: undefined })).toBe('no-public-key');
    expect(checkTelnyxSignature({ ...base, publicKey: 'c2hvcnQ=' })).toBe('no-public-key');
  });

  it('rejects public keys that are not 32 bytes of base64', () => {
    expect(telnyxPublicKey(VECTOR.publicKey)).toBeDefined();
    expect(telnyxPublicKey('ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60Elm')).toBeUndefined();
    expect(telnyxPublicKey('!!!')).toBeUndefined();
  });

  it('signs fresh headers a checker accepts', () => {
    const key = telnyxPrivateKeyFromSeed(VECTOR.seed);
    const headers = telnyxSignatureHeaders(key, '{"x":1}');
    expect(checkTelnyxSignature({ publicKey: VECTOR.publicKey, timestamp: headers['telnyx-timestamp'], signature: headers['telnyx-signature-ed25519'], rawBody: '{"x":1}' })).toBeNull();
  });
});
