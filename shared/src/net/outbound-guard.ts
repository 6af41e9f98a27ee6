import { lookup as dnsLookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';
import type { LookupFunction } from 'node:net';

/** One resolved address of a host. */
type ResolvedAddress = { address: string; family: 4 | 6 };

/**
 * A customer-supplied URL the platform was about to call points somewhere it must not:
 * an internal, loopback, metadata or otherwise non-public address, a refused scheme or host
 * name, or a host that does not resolve (`reason: 'dns'`). `message` is one line meant for
 * the customer (`10.0.0.5 is a private address`), never a stack.
 */
export class OutboundBlockedError extends Error {
  override readonly name = 'OutboundBlockedError';
  /** The URL as given, without any credentials in it (from `connectLookup`, which never sees the URL: the host name). */
  readonly url: string;
  /** The offending address, or null when the refusal came before DNS (scheme, host name, DNS failure). */
  readonly address: string | null;
  /** Short machine-readable reason: a range name from {@link OutboundGuard.forbiddenReason}, or `scheme`, `invalid-url`, `dns`. */
  readonly reason: string;

  constructor(url: string, address: string | null, reason: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.url = url;
    this.address = address;
    this.reason = reason;
  }
}

/** Options of {@link OutboundGuard}. */
export interface OutboundGuardOptions {
  /** Operator allowlist: CIDRs (`10.1.0.0/16`, `127.0.0.1/32`, `::1/128`), bare IPs, host names (`hooks.internal`) or wildcard suffixes (`*.corp.example`). Entries permit otherwise forbidden targets. */
  allow?: readonly string[];
  /** DNS lookup (default node:dns `lookup` with `all: true`); tests inject. */
  lookup?: (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;
}

// Order matters: the first list that contains an address names its reason, so the metadata
// endpoints come before the wider link-local / unique-local ranges that contain them.
// IPv4-mapped IPv6 (::ffff:0:0/96) is deliberately absent: Node's BlockList matches an
// IPv6 rule there against every IPv4 address; mapped addresses are judged by their IPv4.
const RANGES: ReadonlyArray<readonly [reason: string, cidrs: readonly string[]]> = [
  ['metadata', ['169.254.169.254/32', 'fd00:ec2::254/128']],
  ['unspecified', ['0.0.0.0/8', '::/128']],
  ['loopback', ['127.0.0.0/8', '::1/128']],
  ['private', ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', 'fc00::/7', 'fec0::/10']],
  ['cgnat', ['100.64.0.0/10']],
  ['link-local', ['169.254.0.0/16', 'fe80::/10']],
  ['multicast', ['224.0.0.0/4', 'ff00::/8']],
  ['documentation', ['192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24', '2001:db8::/32']],
  ['benchmarking', ['198.18.0.0/15']],
  // 64:ff9b::/96 is NAT64: refused outright (not judged by its embedded IPv4) as specified.
  ['nat64', ['64:ff9b::/96', '64:ff9b:1::/48']],
  // 192.0.0.0/24 IETF assignments; 240/4 incl. broadcast; ::/96 IPv4-compatible; 100::/64 discard.
  ['reserved', ['192.0.0.0/24', '240.0.0.0/4', '::/96', '100::/64']],
];

function addCidr(list: BlockList, cidr: string): boolean {
  const slash = cidr.indexOf('/');
  const net = slash < 0 ? cidr : cidr.slice(0, slash);
  const family = isIP(net);
  if (family === 0) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (slash < 0) {
    list.addAddress(net, type);
    return true;
  }
  const prefixText = cidr.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > (family === 4 ? 32 : 128)) return false;
  list.addSubnet(net, prefix, type);
  return true;
}

const RULES = RANGES.map(([reason, cidrs]) => {
  const list = new BlockList();
  for (const cidr of cidrs) addCidr(list, cidr);
  return { reason, list };
});

const ARTICLE_AN = new Set(['unspecified']);
const LABEL: Record<string, string> = { cgnat: 'carrier-grade NAT', metadata: 'cloud metadata', nat64: 'NAT64' };

/** `10.0.0.5 is a private address`. */
function describeAddress(address: string, reason: string): string {
  if (reason === 'invalid') return `${address} is not an IP address`;
  const label = LABEL[reason] ?? reason;
  return `${address} is ${ARTICLE_AN.has(reason) ? 'an' : 'a'} ${label} address`;
}

/** Lower-case, without brackets, zone id or a trailing root dot. */
function normalizeHost(host: string): string {
  let out = host.trim().toLowerCase();
  if (out.startsWith('[') && out.endsWith(']')) out = out.slice(1, -1);
  if (out.endsWith('.')) out = out.slice(0, -1);
  return out;
}

function stripZone(address: string): string {
  const pct = address.indexOf('%');
  return pct < 0 ? address : address.slice(0, pct);
}

/** The 8 16-bit words of a valid IPv6 address (checked with isIP beforehand). */
function ipv6Words(address: string): number[] {
  let text = address;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const parse = (part: string | undefined): number[] => (part ? part.split(':').map((h) => parseInt(h, 16)) : []);
  const [head, tail] = text.split('::');
  const first = parse(head);
  if (tail === undefined) return first;
  const last = parse(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

function wordsToIpv4(high: number, low: number): string {
  return `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
}

/**
 * The IPv4 address an IPv6 address stands for when connecting to it would reach that IPv4
 * host: IPv4-mapped `::ffff:a.b.c.d` (also written `::ffff:7f00:1`), and 6to4 `2002:AABB:CCDD::/48`.
 */
function embeddedIpv4(address: string): string | null {
  const w = ipv6Words(address);
  if (w.length !== 8) return null;
  if (w[0] === 0 && w[1] === 0 && w[2] === 0 && w[3] === 0 && w[4] === 0 && w[5] === 0xffff) return wordsToIpv4(w[6]!, w[7]!);
  if (w[0] === 0x2002) return wordsToIpv4(w[1]!, w[2]!);
  return null;
}

function firstReason(address: string, type: 'ipv4' | 'ipv6'): string | null {
  for (const rule of RULES) if (rule.list.check(address, type)) return rule.reason;
  return null;
}

/** Host names refused before any DNS query, and why. */
function forbiddenHostName(host: string): string | null {
  if (host === 'localhost' || host.endsWith('.localhost')) return 'loopback';
  if (host === 'metadata' || host === 'metadata.google.internal') return 'metadata';
  return null;
}

/**
 * SSRF protection for every URL the platform calls on a customer's behalf (webhooks, tools,
 * LLM endpoints): refuses targets that are not public unicast addresses unless an operator
 * allowlisted them. Use {@link check} to validate a URL (e.g. when it is configured) and
 * {@link connectLookup} on the actual request, so the address connected to is the address
 * checked: checking and then letting the HTTP client resolve again would leave a
 * DNS-rebinding window.
 */
export class OutboundGuard {
  private readonly allowAddresses = new BlockList();
  private readonly allowHosts = new Set<string>();
  /** `*.corp.example` stored as `.corp.example`. */
  private readonly allowSuffixes: string[] = [];
  private readonly resolve: (hostname: string) => Promise<ResolvedAddress[]>;

  /** Throws `TypeError` naming the first allowlist entry that is neither an IP, a CIDR nor a host name. */
  constructor(opts: OutboundGuardOptions = {}) {
    for (const raw of opts.allow ?? []) {
      const entry = normalizeHost(raw);
      if (entry.includes('/') || isIP(entry) !== 0) {
        if (!addCidr(this.allowAddresses, entry)) throw new TypeError(`outbound allowlist entry ${JSON.stringify(raw)} is not a valid IP or CIDR`);
      } else if (entry.startsWith('*.') && isHostName(entry.slice(2))) {
        this.allowSuffixes.push(entry.slice(1));
      } else if (isHostName(entry)) {
        this.allowHosts.add(entry);
      } else {
        throw new TypeError(`outbound allowlist entry ${JSON.stringify(raw)} is not an IP, CIDR, host name or *.suffix`);
      }
    }
    this.resolve = opts.lookup ?? defaultLookup;
  }

  /**
   * Why connecting to `address` (an IP literal) is forbidden: `loopback`, `private`,
   * `link-local`, `metadata`, `unspecified`, `multicast`, `reserved`, `cgnat`,
   * `documentation`, `benchmarking`, `nat64`, or `invalid` for a string that is not an IP.
   * Null when the address is public, or is allowlisted by IP/CIDR, or `hostname` (the URL's
   * host) is allowlisted by name. IPv4-mapped and 6to4 IPv6 addresses are judged by the
   * IPv4 address they carry.
   */
  forbiddenReason(address: string, hostname?: string): string | null {
    const ip = stripZone(normalizeHost(address));
    const family = isIP(ip);
    if (family === 0) return 'invalid';
    if (hostname !== undefined && this.hostAllowed(normalizeHost(hostname))) return null;
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (this.allowAddresses.check(ip, type)) return null;
    const v4 = family === 6 ? embeddedIpv4(ip) : null;
    if (v4 !== null) return this.allowAddresses.check(v4, 'ipv4') ? null : firstReason(v4, 'ipv4');
    return firstReason(ip, type);
  }

  /**
   * Validates `url` and returns the addresses its host resolves to: the scheme must be http
   * or https; an IP literal host is judged without DNS; `localhost`, `*.localhost`,
   * `metadata` and `metadata.google.internal` are refused before DNS; otherwise every
   * resolved address must be allowed (one forbidden address refuses the URL, since the
   * client could connect to any of them). Allowlisted host names skip the address rules.
   * Rejects with {@link OutboundBlockedError}; a DNS failure has reason `dns` and the
   * resolver's code in its message and `cause`.
   */
  async check(url: string | URL): Promise<{ address: string; family: 4 | 6 }[]> {
    let parsed: URL;
    try {
      parsed = typeof url === 'string' ? new URL(url) : url;
    } catch (err) {
      throw new OutboundBlockedError(String(url), null, 'invalid-url', 'the URL is not valid', { cause: err });
    }
    const shown = withoutCredentials(parsed);
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new OutboundBlockedError(shown, null, 'scheme', `the scheme ${parsed.protocol.replace(/:$/, '')} is not allowed (http or https only)`);
    }
    const host = normalizeHost(parsed.hostname);
    if (host === '') throw new OutboundBlockedError(shown, null, 'invalid-url', 'the URL has no host');
    return this.resolveChecked(host, shown);
  }

  /**
   * A `lookup` for `node:http(s).request`, `net.connect` or `tls.connect` options: resolves
   * the host with the guard's resolver and fails the connection with
   * {@link OutboundBlockedError} unless every address is allowed, so the socket connects to
   * an address that was checked. Honours `options.all` and `options.family`.
   *
   * Node does not call `lookup` for an IP-literal host, so callers must judge IP literals
   * themselves first ({@link check} does so without DNS).
   */
  readonly connectLookup: LookupFunction = (hostname, options, callback) => {
    const host = normalizeHost(hostname);
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    this.resolveChecked(host, host).then(
      (addresses) => {
        const usable = family === 0 ? addresses : addresses.filter((a) => a.family === family);
        const first = usable[0];
        if (!first) {
          const err = new OutboundBlockedError(host, null, 'dns', `${host} has no IPv${family} address`);
          callback(Object.assign(err, { code: 'ENOTFOUND' }), '');
        } else if (options.all) {
          callback(null, usable);
        } else {
          callback(null, first.address, first.family);
        }
      },
      (err: NodeJS.ErrnoException) => callback(err, ''),
    );
  };

  private hostAllowed(host: string): boolean {
    return this.allowHosts.has(host) || this.allowSuffixes.some((suffix) => host.endsWith(suffix));
  }

  private async resolveChecked(host: string, shownUrl: string): Promise<ResolvedAddress[]> {
    const literal = stripZone(host);
    const family = isIP(literal);
    if (family !== 0) {
      const reason = this.forbiddenReason(literal);
      if (reason !== null) throw new OutboundBlockedError(shownUrl, literal, reason, describeAddress(literal, reason));
      return [{ address: literal, family: family as 4 | 6 }];
    }
    const allowedByName = this.hostAllowed(host);
    const nameReason = allowedByName ? null : forbiddenHostName(host);
    if (nameReason !== null) throw new OutboundBlockedError(shownUrl, null, nameReason, `${host} is a ${LABEL[nameReason] ?? nameReason} host name`);

    let addresses: ResolvedAddress[];
    try {
      addresses = await this.resolve(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unknown error';
      throw new OutboundBlockedError(shownUrl, null, 'dns', `DNS lookup of ${host} failed (${code})`, { cause: err });
    }
    if (addresses.length === 0) throw new OutboundBlockedError(shownUrl, null, 'dns', `DNS lookup of ${host} returned no address`);
    for (const { address } of addresses) {
      const reason = allowedByName ? null : this.forbiddenReason(address);
      if (reason !== null) throw new OutboundBlockedError(shownUrl, address, reason, `${host} resolves to ${describeAddress(address, reason).replace(' is ', ', ')}`);
    }
    return addresses;
  }
}

async function defaultLookup(hostname: string): Promise<ResolvedAddress[]> {
  const found = await dnsLookup(hostname, { all: true });
  return found.filter((a): a is ResolvedAddress => a.family === 4 || a.family === 6);
}

function isHostName(text: string): boolean {
  return /^[a-z0-9_]([a-z0-9_-]{0,62})(\.[a-z0-9_]([a-z0-9_-]{0,62}))*$/.test(text);
}

function withoutCredentials(url: URL): string {
  if (!url.username && !url.password) return url.toString();
  const copy = new URL(url.toString());
  copy.username = '';
  copy.password = '';
  return copy.toString();
}
