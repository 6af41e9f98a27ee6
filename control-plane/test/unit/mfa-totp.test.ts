import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, matchTotp, otpauthUri, totpCode, totpStep } from '../../src/modules/mfa/totp.js';
import { hashRecoveryCode, looksLikeRecoveryCode, newRecoveryCodes } from '../../src/modules/mfa/recovery-codes.js';

// RFC 6238 Appendix B, SHA-1 rows: the seed is the ASCII "12345678901234567890"; the RFC
// prints 8 digits, our 6-digit codes are their last six.
const RFC_SECRET = base32Encode(Buffer.from('12345678901234567890', 'ascii'));
const RFC_VECTORS: Array<[number, string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('TOTP (RFC 6238)', () => {
  it('computes the RFC 6238 SHA-1 test vectors', () => {
    for (const [seconds, eight] of RFC_VECTORS) {
      expect(totpCode(RFC_SECRET, totpStep(seconds * 1000)), String(seconds)).toBe(eight.slice(-6));
    }
  });

  it('round-trips base32 (RFC 4648 test strings)', () => {
    expect(base32Encode(Buffer.from('foobar'))).toBe('MZXW6YTBOI');
    expect(base32Encode(Buffer.from('f'))).toBe('MY');
    expect(base32Decode('mzxw6ytboi======').toString()).toBe('foobar');
    expect(RFC_SECRET).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  });

  it('accepts one step of drift either way and nothing further', () => {
    const now = 1_700_000_000_000;
    const step = totpStep(now);
    for (const d of [-1, 0, 1]) expect(matchTotp(RFC_SECRET, totpCode(RFC_SECRET, step + d), now, null)).toBe(step + d);
    for (const d of [-2, 2]) expect(matchTotp(RFC_SECRET, totpCode(RFC_SECRET, step + d), now, null)).toBeNull();
  });

  it('never accepts a step at or before the last used one', () => {
    const now = 1_700_000_000_000;
    const step = totpStep(now);
    const code = totpCode(RFC_SECRET, step);
    expect(matchTotp(RFC_SECRET, code, now, step)).toBeNull();
    expect(matchTotp(RFC_SECRET, totpCode(RFC_SECRET, step - 1), now, step - 1)).toBeNull();
    expect(matchTotp(RFC_SECRET, totpCode(RFC_SECRET, step + 1), now, step)).toBe(step + 1);
  });

  it('refuses anything but six digits', () => {
    const now = 1_700_000_000_000;
    const code = totpCode(RFC_SECRET, totpStep(now));
    expect(matchTotp(RFC_SECRET, ` ${code}`, now, null)).toBeNull();
    expect(matchTotp(RFC_SECRET, `${code}0`, now, null)).toBeNull();
  });

  it('builds an otpauth URI authenticator apps read', () => {
    const uri = new URL(otpauthUri('JBSWY3DPEHPK3PXP', 'Voice Agent Platform', 'ann@example.com'));
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(decodeURIComponent(uri.pathname)).toBe('/Voice Agent Platform:ann@example.com');
    expect(Object.fromEntries(uri.searchParams)).toEqual({ secret: 'JBSWY3DPEHPK3PXP', issuer: 'Voice Agent Platform', algorithm: 'SHA1', digits: '6', period: '30' });
  });
});

describe('recovery codes', () => {
  it('makes 10 distinct codes that hash the same however they are typed', () => {
    const codes = newRecoveryCodes();
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) {
      expect(c).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){3}$/);
      expect(looksLikeRecoveryCode(c.toUpperCase().replace(/-/g, ' '))).toBe(true);
      expect(hashRecoveryCode(c.toUpperCase().replace(/-/g, ''))).toBe(hashRecoveryCode(c));
    }
    expect(looksLikeRecoveryCode('123456')).toBe(false);
  });
});
