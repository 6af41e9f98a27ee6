import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateKey, hashKey, keyPrefix, parseKey } from '../../src/modules/api-keys/key-material.js';

describe('API key material', () => {
  it('hashes a key to the SHA-256 hex that stored keys were saved with', () => {
    // Known answer (FIPS 180-2 "abc"): a change of algorithm or encoding would lock every stored key out.
    expect(hashKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const key = generateKey('live');
    expect(hashKey(key)).toBe(createHash('sha256').update(key, 'utf8').digest('hex'));
  });

  it('makes keys that parse, with a prefix that shows the environment and 8 random characters', () => {
    const live = generateKey('live');
    const sandbox = generateKey('sandbox');
    expect(parseKey(live)).toEqual({ environment: 'live' });
    expect(parseKey(sandbox)).toEqual({ environment: 'sandbox' });
    expect(parseKey('svc_live_short')).toBeNull();
    expect(keyPrefix(live)).toBe(live.slice(0, 'svc_live_'.length + 8));
    expect(keyPrefix(sandbox)).toBe(sandbox.slice(0, 'svc_sb_'.length + 8));
  });
});
