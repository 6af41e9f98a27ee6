import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Request parameters as Twilio posted them: a name may repeat (form fields with several
 * values), hence `string[]`. `undefined` entries are ignored.
 */
export type TwilioParams = Record<string, string | readonly string[] | undefined>;

/** Byte-wise comparison of UTF-8 strings (the reference says "sorted byte-wise", not by UTF-16 unit). */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * The string Twilio signs (reference/telephony-twilio.md §3): the URL, then for each
 * parameter name in byte-wise order `name` + `value`, without separators or encoding.
 * A repeated name contributes `name` + `value` once per distinct value, values sorted.
 */
export function twilioSignaturePayload(url: string, params: TwilioParams = {}): string {
  let out = url;
  for (const name of Object.keys(params).sort(byteOrder)) {
    const raw = params[name];
    if (raw === undefined) continue;
    const values = typeof raw === 'string' ? [raw] : [...new Set(raw)].sort(byteOrder);
    for (const value of values) out += name + value;
  }
  return out;
}

/**
 * `X-Twilio-Signature` for a request: base64 of HMAC-SHA1 over
 * {@link twilioSignaturePayload}, keyed with the account's Auth Token. Use it to sign
 * requests in tests and simulators; to check one, use {@link validateTwilioSignature}.
 */
export function computeTwilioSignature(authToken: string, url: string, params?: TwilioParams): string {
  return createHmac('sha1', authToken).update(twilioSignaturePayload(url, params), 'utf8').digest('base64');
}

/** Hex SHA-256 of a raw body: the `bodySHA256` query parameter of the JSON-body variant. */
export function twilioBodySha256(rawBody: string | Uint8Array): string {
  return createHash('sha256').update(rawBody).digest('hex');
}

const DEFAULT_PORTS: Record<string, string> = { https: '443', wss: '443', http: '80', ws: '80' };
// scheme, userinfo, host (bracketed IPv6 or name), port, rest (path, query, fragment) as received.
const URL_PARTS = /^([a-z][a-z0-9+.-]*):\/\/([^/?#@]*@)?(\[[^\]]*\]|[^/?#:]*)(?::(\d*))?(.*)$/is;

/**
 * The URL as given, without its port, and with the scheme's default port: Twilio's helper
 * libraries try these variants because a proxy or Twilio itself may add or drop the port
 * (reference §3, "Tolerance rules"). String surgery rather than `new URL()`, which would
 * re-encode the path and query and so change the signed bytes.
 */
export function twilioUrlVariants(url: string): string[] {
  const m = URL_PARTS.exec(url);
  if (!m) return [url];
  const [, scheme, user = '', host, port, rest] = m as unknown as [string, string, string | undefined, string, string | undefined, string];
  const base = `${scheme}://${user}${host}`;
  const variants = [url, `${base}${rest}`];
  const def = DEFAULT_PORTS[scheme.toLowerCase()];
  if (def && port === undefined) variants.push(`${base}:${def}${rest}`);
  return [...new Set(variants)];
}

function sameString(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  // Lengths of a base64 HMAC-SHA1 are public (always 28), so the early return leaks nothing.
  return x.length === y.length && timingSafeEqual(x, y);
}

/** `bodySHA256` from the URL's query string, or undefined. */
function bodyHashOf(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  const query = url.slice(q + 1).split('#')[0]!;
  return new URLSearchParams(query).get('bodySHA256') ?? undefined;
}

export interface TwilioSignatureCheck {
  /** The account's Auth Token (or the sandbox token). */
  authToken: string;
  /**
   * The full URL Twilio was configured with: the PUBLIC scheme, host, port, path and query
   * as received, never the internal URL behind a proxy. `wss://…` for the media-stream
   * WebSocket upgrade.
   */
  url: string;
  /** Form parameters of a form-encoded POST; omit for GET, WebSocket upgrades and JSON bodies. */
  params?: TwilioParams;
  /** Raw body of a JSON (non-form) POST; required when the URL carries `bodySHA256`. */
  rawBody?: string | Uint8Array;
  /** The `X-Twilio-Signature` header; missing or empty fails. */
  signature: string | undefined;
}

/**
 * True when `signature` is Twilio's signature of the request (reference §3), trying the
 * port variants of the URL. When the URL carries `bodySHA256` (JSON-body variant) the
 * signature covers the URL alone and the raw body must hash to that value; form
 * parameters are then not part of the payload. Comparisons are constant-time.
 */
export function validateTwilioSignature(check: TwilioSignatureCheck): boolean {
  const { authToken, url, signature } = check;
  if (!signature || !authToken) return false;
  const bodyHash = bodyHashOf(url);
  const params = bodyHash === undefined ? check.params : undefined;
  let signed = false;
  for (const variant of twilioUrlVariants(url)) {
    // No short-circuit: every variant costs the same, whichever matches.
    signed = sameString(computeTwilioSignature(authToken, variant, params), signature) || signed;
  }
  if (!signed) return false;
  if (bodyHash === undefined) return true;
  if (check.rawBody === undefined) return false;
  return sameString(twilioBodySha256(check.rawBody), bodyHash.toLowerCase());
}
