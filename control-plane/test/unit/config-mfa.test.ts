import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('configuration of MFA', () => {
  it('defaults the WebAuthn relying party to PUBLIC_URL', () => {
    expect(loadConfig({}).mfa).toEqual({ issuer: 'Voice Agent Platform', webauthnRpId: 'localhost', webauthnOrigins: ['http://localhost:3000'] });
    expect(loadConfig({ PUBLIC_URL: 'https://api.example.com/' }).mfa).toEqual({ issuer: 'Voice Agent Platform', webauthnRpId: 'api.example.com', webauthnOrigins: ['https://api.example.com'] });
  });

  it('takes a parent-domain RP ID and several origins on it', () => {
    const c = loadConfig({ PUBLIC_URL: 'https://api.example.com', MFA_ISSUER: 'Acme Voice', WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGIN: 'https://app.example.com, https://example.com:8443' });
    expect(c.mfa).toEqual({ issuer: 'Acme Voice', webauthnRpId: 'example.com', webauthnOrigins: ['https://app.example.com', 'https://example.com:8443'] });
  });

  it('refuses origins that are not on the RP ID, and values that are not an origin or a domain', () => {
    expect(problems({ WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGIN: 'https://app.example.com,https://evil-example.com' }).join('\n')).toMatch(/WEBAUTHN_ORIGIN: https:\/\/evil-example\.com/);
    expect(problems({ PUBLIC_URL: 'https://app.example.com', WEBAUTHN_RP_ID: 'other.com' }).join('\n')).toMatch(/WEBAUTHN_ORIGIN/);
    const bad = problems({ WEBAUTHN_ORIGIN: 'https://app.example.com/login', WEBAUTHN_RP_ID: 'https://example.com' });
    expect(bad.some((p) => p.startsWith('WEBAUTHN_ORIGIN:'))).toBe(true);
    expect(bad.some((p) => p.startsWith('WEBAUTHN_RP_ID:'))).toBe(true);
  });
});
