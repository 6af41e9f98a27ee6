import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { WEBHOOK_HEADERS, signWebhook, verifyWebhook } from '../../src/webhooks/webhook-signature.js';

const SECRET = 'whsec_test_0123456789';
const BODY = '{"id":"evt_01","type":"SessionEnded","data":{"caller":"Zoë"}}';
const TS = 1_700_000_000;
const NOW_MS = TS * 1000;

/** Written from the spec sentence, independently of the module under test. */
function reference(secret: string, timestamp: number, body: string): string {
  const mac = createHmac('sha256', secret);
  mac.update(String(timestamp) + '.' + body);
  return 'sha256=' + mac.digest('hex');
}

function headersFor(signature: string, timestamp: number | string = TS, deliveryId = 'evt_01'): Record<string, string> {
  return {
    'x-webhook-signature': signature,
    'x-webhook-timestamp': String(timestamp),
    'x-webhook-delivery-id': deliveryId,
  };
}

describe('signWebhook', () => {
  it('is the hex HMAC-SHA256 over "<timestamp>.<raw_body>" prefixed sha256=', () => {
    const signature = signWebhook(SECRET, TS, BODY);
    expect(signature).toBe(reference(SECRET, TS, BODY));
    expect(signature).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it('signs a Buffer body exactly like the same bytes as a string', () => {
    expect(signWebhook(SECRET, TS, Buffer.from(BODY, 'utf8'))).toBe(signWebhook(SECRET, TS, BODY));
  });

  it('matches fixed vectors computed with openssl, including a non-ASCII secret and body', () => {
    // printf '%s' '1700000000.{}' | openssl dgst -sha256 -hmac secret
    expect(signWebhook('secret', 1_700_000_000, '{}')).toBe('sha256=b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163');
    // printf '%s' '1700000000.{"caller":"Zoë"}' | openssl dgst -sha256 -hmac 'clé'   (UTF-8 terminal)
    expect(signWebhook('clé', 1_700_000_000, '{"caller":"Zoë"}')).toBe('sha256=bbaef52fe0fdf15ac580bd607e14364d31bc66a568403f704ef803acd5871bd4');
  });

  it('refuses a fractional timestamp and an empty secret', () => {
    expect(() => signWebhook(SECRET, 1.5, BODY)).toThrow(RangeError);
    expect(() => signWebhook('', TS, BODY)).toThrow(TypeError);
  });
});

describe('verifyWebhook', () => {
  const valid = headersFor(reference(SECRET, TS, BODY));

  it('accepts a correctly signed delivery and returns its id and timestamp', () => {
    expect(verifyWebhook(SECRET, valid, BODY, { nowMs: NOW_MS })).toEqual({ ok: true, deliveryId: 'evt_01', timestampSeconds: TS });
  });

  it('accepts a Buffer raw body', () => {
    expect(verifyWebhook(SECRET, valid, Buffer.from(BODY), { nowMs: NOW_MS }).ok).toBe(true);
  });

  it('finds headers whatever their case in a plain object', () => {
    const mixed = {
      'X-Webhook-Signature': valid[WEBHOOK_HEADERS.signature],
      'X-WEBHOOK-TIMESTAMP': valid[WEBHOOK_HEADERS.timestamp],
      'X-Webhook-Delivery-Id': 'evt_01',
    };
    expect(verifyWebhook(SECRET, mixed, BODY, { nowMs: NOW_MS })).toEqual({ ok: true, deliveryId: 'evt_01', timestampSeconds: TS });
  });

  it('reads a WHATWG Headers object', () => {
    const headers = new Headers({ 'X-Webhook-Signature': valid['x-webhook-signature']!, 'X-Webhook-Timestamp': String(TS) });
    expect(verifyWebhook(SECRET, headers, BODY, { nowMs: NOW_MS })).toEqual({ ok: true, deliveryId: null, timestampSeconds: TS });
  });

  it('accepts when any of several comma-separated signatures matches (secret rotation)', () => {
    const oldSig = reference('old-secret', TS, BODY);
    const newSig = reference(SECRET, TS, BODY);
    expect(verifyWebhook(SECRET, headersFor(`${oldSig}, ${newSig}`), BODY, { nowMs: NOW_MS }).ok).toBe(true);
    expect(verifyWebhook(SECRET, headersFor(`${newSig},${oldSig}`), BODY, { nowMs: NOW_MS }).ok).toBe(true);
    expect(verifyWebhook('old-secret', headersFor(`${oldSig}, ${newSig}`), BODY, { nowMs: NOW_MS }).ok).toBe(true);
    expect(verifyWebhook('third', headersFor(`${oldSig}, ${newSig}`), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
  });

  it('accepts a repeated signature header given as an array', () => {
    const headers = { ...valid, 'x-webhook-signature': [reference('old', TS, BODY), reference(SECRET, TS, BODY)] };
    expect(verifyWebhook(SECRET, headers, BODY, { nowMs: NOW_MS }).ok).toBe(true);
  });

  it('answers 401 when the body was tampered with', () => {
    expect(verifyWebhook(SECRET, valid, BODY.replace('Zoë', 'Zoe'), { nowMs: NOW_MS })).toEqual({ ok: false, status: 401, reason: 'signature mismatch' });
  });

  it('answers 401 when the signature was made with another secret or timestamp', () => {
    expect(verifyWebhook(SECRET, headersFor(reference('other', TS, BODY)), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
    expect(verifyWebhook(SECRET, headersFor(reference(SECRET, TS - 1, BODY)), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
  });

  it('answers 401 for a missing, empty, truncated or foreign-scheme signature without throwing', () => {
    const good = reference(SECRET, TS, BODY);
    const { 'x-webhook-signature': _dropped, ...unsigned } = valid;
    expect(verifyWebhook(SECRET, unsigned, BODY, { nowMs: NOW_MS })).toEqual({ ok: false, status: 401, reason: 'missing signature' });
    expect(verifyWebhook(SECRET, headersFor(''), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
    expect(verifyWebhook(SECRET, headersFor(good.slice(0, -2)), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
    expect(verifyWebhook(SECRET, headersFor(good + '00'), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
    expect(verifyWebhook(SECRET, headersFor(good.replace('sha256=', 'sha1=')), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
    expect(verifyWebhook(SECRET, headersFor('sha256=zz' + good.slice(9)), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
  });

  it('answers 401 when the receiver has no secret, even for a signature made with an empty key', () => {
    expect(verifyWebhook('', headersFor(reference('', TS, BODY)), BODY, { nowMs: NOW_MS })).toMatchObject({ ok: false, status: 401 });
  });

  it('answers 400 for a missing or malformed timestamp', () => {
    const sig = reference(SECRET, TS, BODY);
    const { 'x-webhook-timestamp': _dropped, ...undated } = valid;
    expect(verifyWebhook(SECRET, undated, BODY, { nowMs: NOW_MS })).toEqual({ ok: false, status: 400, reason: 'missing timestamp header' });
    for (const bad of ['', 'abc', '1700000000.5', '-1700000000', '1e9', `${TS}, ${TS + 1}`]) {
      expect(verifyWebhook(SECRET, headersFor(sig, bad), BODY, { nowMs: NOW_MS }), bad).toMatchObject({ ok: false, status: 400 });
    }
  });

  it('answers 400 for a timestamp more than 300 s in the past or the future, and accepts the boundary', () => {
    const at = (offsetSeconds: number) => {
      const ts = TS + offsetSeconds;
      return verifyWebhook(SECRET, headersFor(reference(SECRET, ts, BODY), ts), BODY, { nowMs: NOW_MS });
    };
    expect(at(-301)).toEqual({ ok: false, status: 400, reason: 'stale timestamp' });
    expect(at(301)).toEqual({ ok: false, status: 400, reason: 'stale timestamp' });
    expect(at(-300).ok).toBe(true);
    expect(at(300).ok).toBe(true);
    // One millisecond beyond the window already counts.
    expect(verifyWebhook(SECRET, valid, BODY, { nowMs: NOW_MS + 300_001 })).toMatchObject({ ok: false, status: 400 });
  });

  it('checks the timestamp before the signature, so a stale replay answers 400', () => {
    const stale = verifyWebhook(SECRET, headersFor('sha256=' + '0'.repeat(64)), BODY, { nowMs: NOW_MS + 3_600_000 });
    expect(stale).toMatchObject({ ok: false, status: 400 });
  });

  it('honours a custom tolerance', () => {
    expect(verifyWebhook(SECRET, valid, BODY, { nowMs: NOW_MS + 11_000, toleranceSeconds: 10 })).toMatchObject({ ok: false, status: 400 });
    expect(verifyWebhook(SECRET, valid, BODY, { nowMs: NOW_MS + 9_000, toleranceSeconds: 10 }).ok).toBe(true);
  });
});
