import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../../src/secret-box.js';

describe('SecretBox', () => {
  const box = new SecretBox(randomBytes(32));

  it('opens what it sealed, and seals the same text differently each time', () => {
    const a = box.seal('hf_secret_value');
    const b = box.seal('hf_secret_value');
    expect(a).toMatch(/^v1\./);
    expect(a).not.toContain('hf_secret_value');
    expect(a).not.toBe(b);
    expect(box.open(a)).toBe('hf_secret_value');
    expect(box.open(b)).toBe('hf_secret_value');
  });

  it('refuses a tampered ciphertext and a different key', () => {
    const sealed = box.seal('hf_secret_value');
    const parts = sealed.split('.');
    const ct = Buffer.from(parts[3]!, 'base64url');
    ct[0] = ct[0]! ^ 1;
    expect(() => box.open([...parts.slice(0, 3), ct.toString('base64url')].join('.'))).toThrow();
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow();
    expect(() => box.open('v0.a.b.c')).toThrow(/format/);
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32-byte/);
  });
});
