import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { OutboundBlockedError, OutboundGuard } from '../../src/net/outbound-guard.js';

type Resolved = { address: string; family: 4 | 6 };

/** A resolver from a fixed table that records what it was asked; unknown names fail like getaddrinfo. */
function fakeDns(table: Record<string, Resolved[]>) {
  const asked: string[] = [];
  const lookup = async (hostname: string): Promise<Resolved[]> => {
    asked.push(hostname);
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };
  return { lookup, asked };
}

const v4 = (address: string): Resolved => ({ address, family: 4 });
const v6 = (address: string): Resolved => ({ address, family: 6 });

async function blocked(promise: Promise<unknown>): Promise<OutboundBlockedError> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OutboundBlockedError);
  return err as OutboundBlockedError;
}

describe('OutboundGuard.forbiddenReason', () => {
  const guard = new OutboundGuard();
  const table: Array<[address: string, reason: string | null]> = [
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['10.0.0.5', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['100.128.0.1', null],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.0.1', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', null],
    ['192.0.0.1', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.20.0.1', null],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['8.8.8.8', null],
    ['1.1.1.1', null],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'documentation'],
    ['64:ff9b::808:808', 'nat64'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::FFFF:7F00:0001', 'loopback'],
    ['::ffff:10.0.0.5', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:8.8.8.8', null],
    ['::ffff:808:808', null],
    ['::127.0.0.1', 'reserved'],
    ['2002:7f00:1::1', 'loopback'],
    ['2002:0808:0808::1', null],
    ['2606:4700:4700::1111', null],
    ['2001:4860:4860::8888', null],
    ['[::1]', 'loopback'],
    ['example.com', 'invalid'],
    ['', 'invalid'],
  ];
  it.each(table)('%s → %s', (address, reason) => {
    expect(guard.forbiddenReason(address)).toBe(reason);
  });
});

describe('OutboundGuard allowlist', () => {
  it('permits addresses inside an allowed CIDR and nothing else', () => {
    const guard = new OutboundGuard({ allow: ['10.1.0.0/16', '127.0.0.1/32', '::1/128'] });
    expect(guard.forbiddenReason('10.1.2.3')).toBeNull();
    expect(guard.forbiddenReason('10.2.0.1')).toBe('private');
    expect(guard.forbiddenReason('127.0.0.1')).toBeNull();
    expect(guard.forbiddenReason('127.0.0.2')).toBe('loopback');
    expect(guard.forbiddenReason('::1')).toBeNull();
    // An IPv4 entry also covers the IPv4-mapped spelling of the same address.
    expect(guard.forbiddenReason('::ffff:127.0.0.1')).toBeNull();
    expect(guard.forbiddenReason('::ffff:7f00:2')).toBe('loopback');
  });

  it('permits a bare IP entry', () => {
    const guard = new OutboundGuard({ allow: ['169.254.169.254', 'fd00::5'] });
    expect(guard.forbiddenReason('169.254.169.254')).toBeNull();
    expect(guard.forbiddenReason('169.254.169.253')).toBe('link-local');
    expect(guard.forbiddenReason('fd00::5')).toBeNull();
  });

  it('permits any address of an allowed host name or wildcard suffix, case-insensitively', () => {
    const guard = new OutboundGuard({ allow: ['Hooks.Internal', '*.corp.example'] });
    expect(guard.forbiddenReason('10.0.0.1', 'hooks.internal')).toBeNull();
    expect(guard.forbiddenReason('10.0.0.1', 'HOOKS.INTERNAL.')).toBeNull();
    expect(guard.forbiddenReason('10.0.0.1', 'a.b.corp.example')).toBeNull();
    expect(guard.forbiddenReason('10.0.0.1', 'corp.example')).toBe('private');
    expect(guard.forbiddenReason('10.0.0.1', 'evilcorp.example')).toBe('private');
    expect(guard.forbiddenReason('10.0.0.1', 'other.internal')).toBe('private');
    expect(guard.forbiddenReason('10.0.0.1')).toBe('private');
  });

  it('refuses malformed allowlist entries at construction', () => {
    for (const bad of ['10.0.0.0/33', '::1/129', '10.0.0.0/x', 'not a host', '*.', '']) {
      expect(() => new OutboundGuard({ allow: [bad] }), bad).toThrow(TypeError);
    }
  });
});

describe('OutboundGuard.check', () => {
  it('returns the resolved addresses of a public host', async () => {
    const dns = fakeDns({ 'hooks.example.com': [v4('93.184.216.34'), v6('2606:2800:220:1::1')] });
    const guard = new OutboundGuard({ lookup: dns.lookup });
    await expect(guard.check('https://hooks.example.com/events')).resolves.toEqual([v4('93.184.216.34'), v6('2606:2800:220:1::1')]);
    expect(dns.asked).toEqual(['hooks.example.com']);
  });

  it('refuses a host if any of its addresses is forbidden, naming host, address and reason', async () => {
    const dns = fakeDns({ 'mixed.example.com': [v4('93.184.216.34'), v4('10.0.0.5')] });
    const err = await blocked(new OutboundGuard({ lookup: dns.lookup }).check('https://user:pw@mixed.example.com/x'));
    expect(err).toMatchObject({ reason: 'private', address: '10.0.0.5', url: 'https://mixed.example.com/x' });
    expect(err.message).toBe('mixed.example.com resolves to 10.0.0.5, a private address');
  });

  it('judges an IP literal without DNS, including bracketed IPv6 and odd IPv4 spellings', async () => {
    const dns = fakeDns({});
    const guard = new OutboundGuard({ lookup: dns.lookup });
    expect(await blocked(guard.check('http://10.0.0.5:8080/'))).toMatchObject({ reason: 'private', address: '10.0.0.5', message: '10.0.0.5 is a private address' });
    expect(await blocked(guard.check('http://[::1]/'))).toMatchObject({ reason: 'loopback', address: '::1' });
    expect(await blocked(guard.check('http://[::ffff:169.254.169.254]/'))).toMatchObject({ reason: 'metadata' });
    expect(await blocked(guard.check('http://2130706433/'))).toMatchObject({ reason: 'loopback', address: '127.0.0.1' });
    expect(await blocked(guard.check('http://0x7f.1/'))).toMatchObject({ reason: 'loopback' });
    await expect(guard.check(new URL('https://8.8.8.8/'))).resolves.toEqual([v4('8.8.8.8')]);
    await expect(guard.check('https://[2606:4700::1111]/')).resolves.toEqual([v6('2606:4700::1111')]);
    expect(dns.asked).toEqual([]);
  });

  it('refuses schemes other than http and https, and invalid URLs', async () => {
    const guard = new OutboundGuard({ lookup: fakeDns({}).lookup });
    for (const url of ['ftp://example.com/', 'file:///etc/passwd', 'gopher://example.com/', 'javascript:alert(1)']) {
      expect(await blocked(guard.check(url)), url).toMatchObject({ reason: 'scheme', address: null });
    }
    expect(await blocked(guard.check('not a url'))).toMatchObject({ reason: 'invalid-url' });
  });

  it('refuses localhost and metadata host names before DNS unless allowlisted', async () => {
    const dns = fakeDns({ localhost: [v4('127.0.0.1')], 'api.localhost': [v4('127.0.0.1')], 'metadata.google.internal': [v4('169.254.169.254')] });
    const guard = new OutboundGuard({ lookup: dns.lookup });
    expect(await blocked(guard.check('http://localhost:3000/'))).toMatchObject({ reason: 'loopback', address: null });
    expect(await blocked(guard.check('http://LOCALHOST./'))).toMatchObject({ reason: 'loopback' });
    expect(await blocked(guard.check('http://api.localhost/'))).toMatchObject({ reason: 'loopback' });
    expect(await blocked(guard.check('http://metadata.google.internal/computeMetadata/v1/'))).toMatchObject({ reason: 'metadata' });
    expect(await blocked(guard.check('http://metadata/'))).toMatchObject({ reason: 'metadata' });
    expect(dns.asked).toEqual([]);

    const allowed = new OutboundGuard({ allow: ['localhost'], lookup: dns.lookup });
    await expect(allowed.check('http://localhost:3000/')).resolves.toEqual([v4('127.0.0.1')]);
  });

  it('lets an allowlisted host name resolve to a private address', async () => {
    const dns = fakeDns({ 'hooks.internal': [v4('10.0.0.7')], 'svc.corp.example': [v4('10.9.9.9')] });
    const guard = new OutboundGuard({ allow: ['hooks.internal', '*.corp.example'], lookup: dns.lookup });
    await expect(guard.check('http://hooks.internal/x')).resolves.toEqual([v4('10.0.0.7')]);
    await expect(guard.check('http://svc.corp.example/x')).resolves.toEqual([v4('10.9.9.9')]);
  });

  it('reports a DNS failure as reason dns with the resolver code', async () => {
    const err = await blocked(new OutboundGuard({ lookup: fakeDns({}).lookup }).check('https://nowhere.example/'));
    expect(err).toMatchObject({ reason: 'dns', address: null });
    expect(err.message).toContain('ENOTFOUND');
    expect(await blocked(new OutboundGuard({ lookup: async () => [] }).check('https://empty.example/'))).toMatchObject({ reason: 'dns' });
  });
});

describe('OutboundGuard.connectLookup', () => {
  function lookupVia(guard: OutboundGuard, hostname: string, options: { all?: boolean; family?: number }) {
    return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) => {
      guard.connectLookup(hostname, options, (err, address, family) => resolve({ err, address, family }));
    });
  }
  const dns = fakeDns({ 'dual.example.com': [v6('2606:2800:220:1::1'), v4('93.184.216.34')], 'rebind.example.com': [v4('10.0.0.1')] });
  const guard = new OutboundGuard({ lookup: dns.lookup });

  it('answers one address, or all of them when asked', async () => {
    expect(await lookupVia(guard, 'dual.example.com', {})).toEqual({ err: null, address: '2606:2800:220:1::1', family: 6 });
    expect(await lookupVia(guard, 'dual.example.com', { all: true })).toMatchObject({ err: null, address: [v6('2606:2800:220:1::1'), v4('93.184.216.34')] });
  });

  it('honours the requested family', async () => {
    expect(await lookupVia(guard, 'dual.example.com', { family: 4 })).toEqual({ err: null, address: '93.184.216.34', family: 4 });
    expect(await lookupVia(guard, 'dual.example.com', { family: 6, all: true })).toMatchObject({ address: [v6('2606:2800:220:1::1')] });
  });

  it('fails the connection with OutboundBlockedError when an address is forbidden', async () => {
    const { err } = await lookupVia(guard, 'rebind.example.com', { all: true });
    expect(err).toBeInstanceOf(OutboundBlockedError);
    expect(err).toMatchObject({ reason: 'private', address: '10.0.0.1' });
  });

  it('refuses localhost by name', async () => {
    expect((await lookupVia(guard, 'localhost', {})).err).toMatchObject({ reason: 'loopback' });
  });
});
