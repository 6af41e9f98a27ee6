import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Delivery headers of an event POST (SPEC "Events"), lower-case as Node's
 * `IncomingHttpHeaders` and WHATWG `Headers` spell them. Lookups here are case-insensitive.
 */
export const WEBHOOK_HEADERS = {
  signature: 'x-webhook-signature',
  timestamp: 'x-webhook-timestamp',
  deliveryId: 'x-webhook-delivery-id',
} as const;

/** Receivers refuse a timestamp further than this from their clock, past or future (SPEC "Events"). */
const DEFAULT_TOLERANCE_SECONDS = 300;
const SCHEME = 'sha256=';
// 15 digits keeps the value a safe integer and the epoch well past the year 30000.
const TIMESTAMP = /^\d{1,15}$/;
const HEX_DIGEST = /^[0-9a-f]{64}$/i;

function hmac(secret: string, timestampSeconds: number, rawBody: string | Buffer): Buffer {
  // The signed string is `<timestamp>.<raw_body>`; feeding it in two parts spares a copy of
  // the body and signs the body's bytes exactly as they go over the wire.
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(`${timestampSeconds}.`, 'utf8')
    .update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody)
    .digest();
}

/**
 * The `X-Webhook-Signature` value of a delivery: `sha256=<hex>`, the HMAC-SHA256 keyed with
 * the webhook secret (its UTF-8 bytes) over `${timestampSeconds}.${rawBody}`.
 *
 * `timestampSeconds` is whole epoch seconds, the value sent as `X-Webhook-Timestamp`;
 * `rawBody` must be the exact bytes POSTed (sign after serialising, never re-serialise).
 * Throws `RangeError` for a fractional or negative timestamp and `TypeError` for an empty
 * secret, since receivers would refuse such a delivery anyway.
 */
export function signWebhook(secret: string, timestampSeconds: number, rawBody: string | Buffer): string {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError(`webhook timestamp must be whole epoch seconds, got ${timestampSeconds}`);
  }
  if (secret.length === 0) throw new TypeError('webhook secret is empty');
  return SCHEME + hmac(secret, timestampSeconds, rawBody).toString('hex');
}

/**
 * Outcome of {@link verifyWebhook}. On failure `status` is the answer the reference receiver
 * gives: 400 for a missing, malformed or stale timestamp, 401 for a missing or wrong
 * signature. `reason` is short, safe to log, and never contains the secret or a signature.
 */
export type WebhookVerification =
  | { ok: true; deliveryId: string | null; timestampSeconds: number }
  | { ok: false; status: 400 | 401; reason: string };

/** Request headers as Node (`IncomingHttpHeaders`), a plain object or fetch (`Headers`) give them. */
type HeaderSource = Record<string, string | string[] | undefined> | Headers;

/** Every value of header `name` (case-insensitive); a repeated header gives several values. */
function headerValues(headers: HeaderSource, name: string): string[] {
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).forEach === 'function') {
    // WHATWG Headers already match case-insensitively and join repeats with ", ".
    const value = (headers as Headers).get(name);
    return value === null ? [] : [value];
  }
  const record = headers as Record<string, string | string[] | undefined>;
  const out: string[] = [];
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() !== name) continue;
    const value = record[key];
    if (typeof value === 'string') out.push(value);
    else if (Array.isArray(value)) out.push(...value);
  }
  return out;
}

/** The `sha256=` digests of a signature header, several during a secret rotation. */
function candidateDigests(values: readonly string[]): Buffer[] {
  const out: Buffer[] = [];
  for (const value of values) {
    for (const part of value.split(',')) {
      const item = part.trim();
      // Other schemes (a future `v2=`) are skipped rather than failing the whole header.
      if (item.slice(0, SCHEME.length).toLowerCase() !== SCHEME) continue;
      const hex = item.slice(SCHEME.length);
      // A value that is not 64 hex digits cannot match (Buffer.from(…, 'hex') would silently
      // truncate it), so it becomes an empty digest: present, hence a mismatch, not "missing".
      out.push(HEX_DIGEST.test(hex) ? Buffer.from(hex, 'hex') : Buffer.alloc(0));
    }
  }
  return out;
}

/**
 * Checks a received delivery (SPEC "Events"): the timestamp must be within
 * `toleranceSeconds` (default 300) of `nowMs` (default `Date.now()`) in either direction,
 * and one of the `sha256=` values of the signature header must equal
 * {@link signWebhook}`(secret, timestamp, rawBody)`, compared in constant time. Several
 * comma-separated values (or repeated headers) are accepted so a secret can be rotated.
 *
 * `rawBody` must be the bytes as received, before any JSON parsing. The timestamp is
 * checked first, so a stale replay answers 400 whatever its signature. Duplicate
 * suppression is the caller's job, with `deliveryId` and a `DeliveryDeduper`.
 */
export function verifyWebhook(
  secret: string,
  headers: HeaderSource,
  rawBody: string | Buffer,
  opts: { toleranceSeconds?: number; nowMs?: number } = {},
): WebhookVerification {
  const toleranceSeconds = opts.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  const nowMs = opts.nowMs ?? Date.now();

  const timestamps = headerValues(headers, WEBHOOK_HEADERS.timestamp).map((v) => v.trim());
  if (timestamps.length === 0 || timestamps[0] === '') return { ok: false, status: 400, reason: 'missing timestamp header' };
  const timestampText = timestamps[0]!;
  if (timestamps.some((v) => v !== timestampText) || !TIMESTAMP.test(timestampText)) {
    return { ok: false, status: 400, reason: 'malformed timestamp header' };
  }
  const timestampSeconds = Number(timestampText);
  // Compared in milliseconds so "more than 300 s" is exact against a millisecond clock.
  if (Math.abs(nowMs - timestampSeconds * 1000) > toleranceSeconds * 1000) {
    return { ok: false, status: 400, reason: 'stale timestamp' };
  }

  const candidates = candidateDigests(headerValues(headers, WEBHOOK_HEADERS.signature));
  if (candidates.length === 0) return { ok: false, status: 401, reason: 'missing signature' };
  // An empty secret would let anyone sign; treat it as a configuration error, never a pass.
  if (secret.length === 0) return { ok: false, status: 401, reason: 'no webhook secret configured' };

  const expected = hmac(secret, timestampSeconds, rawBody);
  let matched = false;
  for (const candidate of candidates) {
    // Every candidate is compared (no early exit) so timing does not reveal which one matched.
    // Lengths are public (a digest is always 32 bytes), so the length test leaks nothing.
    const same = candidate.length === expected.length && timingSafeEqual(candidate, expected);
    matched = same || matched;
  }
  if (!matched) return { ok: false, status: 401, reason: 'signature mismatch' };

  const deliveryId = headerValues(headers, WEBHOOK_HEADERS.deliveryId)[0]?.trim() || null;
  return { ok: true, deliveryId, timestampSeconds };
}
