import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { gatewayConfigSchema } from '@vap/media-gateway';
import { ConfigError, configSchema, loadConfig } from '../../src/config.js';

const example = readFileSync(new URL('../../../.env.example', import.meta.url), 'utf8');
const exampleVars = new Map(
  example
    .split('\n')
    .filter((l) => /^[A-Z][A-Z0-9_]*=/.test(l))
    .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const),
);

describe('configuration', () => {
  it('.env.example lists exactly the variables the config schemas read', () => {
    const read = new Set([...Object.keys(configSchema.shape), ...Object.keys(gatewayConfigSchema.shape)]);
    expect([...exampleVars.keys()].sort()).toEqual([...read].sort());
  });

  it('.env.example values parse, and equal the defaults', () => {
    const fromExample = loadConfig(Object.fromEntries(exampleVars));
    expect(fromExample).toEqual(loadConfig({}));
  });

  it('defaults to the one-machine mode', () => {
    const c = loadConfig({});
    expect(c.databaseUrl).toBeUndefined();
    expect(c.natsUrl).toBeUndefined();
    expect(c.rateLimits).toEqual({ starter: 60, professional: 120, business: 300, enterprise: 1000, anonymous: 60 });
    expect(c.publicUrl).toBe('http://localhost:3000');
    expect(c.docsUrl).toBe('http://localhost:3000/docs');
  });

  it('lists every problem at once', () => {
    let err: unknown;
    try {
      loadConfig({ PORT: 'abc', RATE_LIMIT_STARTER: '0', BOOTSTRAP_API_KEY: 'nope', SECRET_ENCRYPTION_KEY: 'c2hvcnQ=' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const fields = (err as ConfigError).problems.map((p) => p.split(':')[0]).sort();
    expect(fields).toEqual(['BOOTSTRAP_API_KEY', 'PORT', 'RATE_LIMIT_STARTER', 'SECRET_ENCRYPTION_KEY']);
  });

  it('allows loopback for outbound calls in development only, and takes an explicit allowlist or none', () => {
    expect(loadConfig({}).outboundAllowlist).toEqual(['127.0.0.0/8', '::1/128', 'localhost']);
    expect(loadConfig({ APP_ENV: 'production', SECRET_ENCRYPTION_KEY: Buffer.alloc(32).toString('base64') }).outboundAllowlist).toEqual([]);
    expect(loadConfig({ OUTBOUND_ALLOWLIST: '10.1.0.0/16, hooks.internal ,*.corp.example' }).outboundAllowlist).toEqual(['10.1.0.0/16', 'hooks.internal', '*.corp.example']);
    expect(loadConfig({ OUTBOUND_ALLOWLIST: 'none' }).outboundAllowlist).toEqual([]);
    expect(() => loadConfig({ OUTBOUND_ALLOWLIST: '10.0.0.0/99' })).toThrow(/OUTBOUND_ALLOWLIST/);
  });
});
