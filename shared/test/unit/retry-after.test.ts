import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../src/net/retry-after.js';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-11-28T00:00:00Z');

  it('reads delay-seconds', () => {
    expect(retryAfterMs('5', now)).toBe(5000);
    expect(retryAfterMs(' 120 ', now)).toBe(120_000);
    expect(retryAfterMs('0', now)).toBe(0);
  });

  it('reads an HTTP-date as the time until then, 0 once it is past', () => {
    expect(retryAfterMs('Sat, 28 Nov 2026 00:00:10 GMT', now)).toBe(10_000);
    expect(retryAfterMs('Sat, 28 Nov 2026 00:00:09 GMT', now + 500)).toBe(8500);
    expect(retryAfterMs('Fri, 27 Nov 2026 23:59:00 GMT', now)).toBe(0);
  });

  it('gives undefined for an absent, empty or malformed value, not a wait of 0 (V8 reads "-1" and "1.5" as dates in 2001)', () => {
    for (const v of [undefined, null, '', '  ', '-1', '1.5', '5s', 'soon']) expect(retryAfterMs(v, now), String(v)).toBeUndefined();
  });
});
