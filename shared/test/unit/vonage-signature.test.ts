import { describe, expect, it } from 'vitest';
import { vonageBearerToken, signVonageWebhook, verifyVonageWebhook, vonagePayloadHash } from '../../src/vonage-signature.js';

// The computed vector of reference/telephony-vonage.md §6.
const VECTOR = {
  secret: 'vonage-signature-secret-0123456789',
  body: '{"from":"447700900000","to":"447700900001","uuid":"aaaaaaaa-bbbb-cccc-dddd-0123456789ab","conversation_uuid":"CON-aaaaaaaa-bbbb-cccc-dddd-0123456789ab","status":"answered","direction":"inbound","timestamp":"2023-11-14T22:13:20.000Z"}',
  payloadHash: 'f5b5fbc998a636ec69ae56893db1f302b106b8bbb0ce340bc1311df8b4d6694a',
  token:
    'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpYXQiOjE3MDAwMDAwMDAsImp0aSI6ImM1YmE4ZjI0LTFhMTQtNGMxMC1iZmRmLTNmYmU4Y2U1MTFiNSIsImlzcyI6IlZvbmFnZSIsInBheWxvYWRfaGFzaCI6ImY1YjVmYmM5OThhNjM2ZWM2OWFlNTY4OTNkYjFmMzAyYjEwNmI4YmJiMGNlMzQwYmMxMzExZGY4YjRkNjY5NGEiLCJhcGlfa2V5IjoiYTFiMmMzZDQiLCJhcHBsaWNhdGlvbl9pZCI6ImFhYWFhYWFhLWJiYmItY2NjYy1kZGRkLTAxMjM0NTY3ODlhYiJ9.xWa2zrkSyL8tkaWowMJNBn0KB45KFVmK8zMY9NY0zEU',
};
const AT = 1_700_000_000;

describe('Vonage signed webhooks (HS256 JWT with payload_hash)', () => {
  it('hashes the reference body to the reference payload_hash', () => {
    expect(vonagePayloadHash(VECTOR.body)).toBe(VECTOR.payloadHash);
    expect(vonagePayloadHash(Buffer.from(VECTOR.body))).toBe(VECTOR.payloadHash);
  });

  it('signs the reference claims to the reference token', () => {
    const token = signVonageWebhook({ secret: VECTOR.secret, rawBody: VECTOR.body, iat: AT, jti: 'c5ba8f24-1a14-4c10-bfdf-3fbe8ce511b5', apiKey: 'a1b2c3d4', applicationId: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab' });
    expect(token).toBe(VECTOR.token);
  });

  it('accepts the reference token with the age check disabled, and at its issue time', () => {
    const noAge = verifyVonageWebhook({ secret: VECTOR.secret, token: VECTOR.token, rawBody: VECTOR.body, maxAgeSec: Infinity });
    expect(noAge).toMatchObject({ ok: true, claims: { iss: 'Vonage', api_key: 'a1b2c3d4', payload_hash: VECTOR.payloadHash } });
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: VECTOR.token, rawBody: VECTOR.body, nowSec: AT + 60 }).ok).toBe(true);
  });

  it('refuses a token older or further in the future than the tolerance', () => {
    const base = { secret: VECTOR.secret, token: VECTOR.token, rawBody: VECTOR.body };
    expect(verifyVonageWebhook({ ...base, nowSec: AT + 301 })).toEqual({ ok: false, reason: 'stale' });
    expect(verifyVonageWebhook({ ...base, nowSec: AT - 301 })).toEqual({ ok: false, reason: 'stale' });
    expect(verifyVonageWebhook({ ...base, nowSec: AT + 3600, maxAgeSec: 7200 }).ok).toBe(true);
  });

  it('refuses another secret, a changed body, a mangled signature and a missing token', () => {
    const base = { secret: VECTOR.secret, token: VECTOR.token, rawBody: VECTOR.body, nowSec: AT };
    expect(verifyVonageWebhook({ ...base, secret: 'another-secret' })).toEqual({ ok: false, reason: 'bad-signature' });
    expect(verifyVonageWebhook({ ...base, rawBody: VECTOR.body.replace('answered', 'completed') })).toEqual({ ok: false, reason: 'payload-hash-mismatch' });
    expect(verifyVonageWebhook({ ...base, token: `${VECTOR.token.slice(0, -2)}AA` })).toEqual({ ok: false, reason: 'bad-signature' });
    expect(verifyVonageWebhook({ ...base, token: undefined })).toEqual({ ok: false, reason: 'missing-token' });
    expect(verifyVonageWebhook({ ...base, token: 'a.b' })).toEqual({ ok: false, reason: 'malformed' });
  });

  it('refuses a token whose claims were swapped after signing (signature covers the claims)', () => {
    const [header, , signature] = VECTOR.token.split('.');
    const forged = Buffer.from(JSON.stringify({ iat: AT, jti: 'x', iss: 'Vonage', payload_hash: vonagePayloadHash('{}') })).toString('base64url');
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: `${header}.${forged}.${signature}`, rawBody: '{}', nowSec: AT })).toEqual({ ok: false, reason: 'bad-signature' });
  });

  it('pins the algorithm: alg none or HS512 is refused even with a valid-looking signature', () => {
    const claims = Buffer.from(JSON.stringify({ iat: AT, jti: 'x', iss: 'Vonage', payload_hash: VECTOR.payloadHash })).toString('base64url');
    const none = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${claims}.`;
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: none, rawBody: VECTOR.body, nowSec: AT })).toEqual({ ok: false, reason: 'bad-algorithm' });
  });

  it('requires payload_hash unless the caller allows its absence (GET answer webhooks), and a present one must match', () => {
    const noHash = signVonageWebhook({ secret: VECTOR.secret, iat: AT });
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: noHash, rawBody: '', nowSec: AT })).toEqual({ ok: false, reason: 'payload-hash-mismatch' });
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: noHash, rawBody: '', nowSec: AT, allowMissingPayloadHash: true }).ok).toBe(true);
    const emptyHash = signVonageWebhook({ secret: VECTOR.secret, rawBody: '', iat: AT });
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: emptyHash, rawBody: '', nowSec: AT, allowMissingPayloadHash: true }).ok).toBe(true);
    const otherHash = signVonageWebhook({ secret: VECTOR.secret, rawBody: 'x', iat: AT });
    expect(verifyVonageWebhook({ secret: VECTOR.secret, token: otherHash, rawBody: '', nowSec: AT, allowMissingPayloadHash: true })).toEqual({ ok: false, reason: 'payload-hash-mismatch' });
  });

  it('reads the token from an Authorization header', () => {
    expect(vonageBearerToken(`Bearer ${VECTOR.token}`)).toBe(VECTOR.token);
    expect(vonageBearerToken(`bearer  ${VECTOR.token} `)).toBe(VECTOR.token);
    expect(vonageBearerToken('Basic abc')).toBeUndefined();
    expect(vonageBearerToken(undefined)).toBeUndefined();
  });
});
