import { describe, expect, it } from 'vitest';
import { parseRetryAfter } from '../../src/simulators/mulaw-caller.js';

describe('parseRetryAfter (the simulated carrier reading a refusal)', () => {
  const now = Date.parse('2026-11-28T00:00:00Z');

  it('reads delay-seconds', () => {
    expect(parseRetryAfter('5', now)).toBe(5);
    expect(parseRetryAfter(' 120 ', now)).toBe(120);
    expect(parseRetryAfter('0', now)).toBe(0);
  });

  it('reads an HTTP-date as the seconds until then, 0 once it is past', () => {
    expect(parseRetryAfter('Sat, 28 Nov 2026 00:00:10 GMT', now)).toBe(10);
    expect(parseRetryAfter('Sat, 28 Nov 2026 00:00:09 GMT', now + 500)).toBe(9);
    expect(parseRetryAfter('Fri, 27 Nov 2026 23:59:00 GMT', now)).toBe(0);
  });

  it('gives null for an absent, empty or malformed header, not a wait of 0', () => {
    for (const v of [undefined, '', '  ', '-1', '1.5', '5s', 'soon']) expect(parseRetryAfter(v, now), String(v)).toBeNull();
  });
});
