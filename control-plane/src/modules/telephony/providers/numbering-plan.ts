/**
 * What the adapters need to know about an E.164 number without asking a carrier: its
 * country (Vonage's buy call requires one; pricing is per country) and whether it is
 * toll-free (pricing is per number type). Only the plans the platform sells are listed.
 */

// Longest prefix first. +1 is NANP: US unless the caller says otherwise (Canada shares it).
const COUNTRY_PREFIXES: readonly [string, string][] = [
  ['+353', 'IE'],
  ['+44', 'GB'],
  ['+61', 'AU'],
  ['+49', 'DE'],
  ['+33', 'FR'],
  ['+34', 'ES'],
  ['+31', 'NL'],
  ['+1', 'US'],
];

// NANP toll-free NPAs and the UK's freephone 080x ranges.
const TOLL_FREE = /^\+1(800|833|844|855|866|877|888)\d{7}$|^\+44(800|808)\d{6,7}$/;

/** ISO 3166-1 alpha-2 country of an E.164 number, or undefined for a plan not listed. */
export function countryOfNumber(e164: string): string | undefined {
  return COUNTRY_PREFIXES.find(([prefix]) => e164.startsWith(prefix))?.[1];
}

/** The calling code of a country listed here (`US` → `1`), or undefined. */
export function callingCode(country: string): string | undefined {
  return COUNTRY_PREFIXES.find(([, iso]) => iso === country.toUpperCase())?.[0].slice(1);
}

/** Whether an E.164 number is in a toll-free range. */
export function isTollFreeNumber(e164: string): boolean {
  return TOLL_FREE.test(e164);
}

/** Keypad digits for letters, as carriers read vanity patterns (`CALL` → `2255`). */
export function keypadDigits(pattern: string): string {
  const pad: Record<string, string> = { a: '2', b: '2', c: '2', d: '3', e: '3', f: '3', g: '4', h: '4', i: '4', j: '5', k: '5', l: '5', m: '6', n: '6', o: '6', p: '7', q: '7', r: '7', s: '7', t: '8', u: '8', v: '8', w: '9', x: '9', y: '9', z: '9' };
  return pattern.replace(/[a-z]/gi, (c) => pad[c.toLowerCase()] ?? c);
}
