import { createHash, randomInt } from 'node:crypto';

/** How many recovery codes a user holds after (re)generation. */
export const RECOVERY_CODE_COUNT = 10;

// No 0/o, 1/l/i: codes are read off paper and typed by hand.
const ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';
const GROUPS = 4;
const GROUP_LENGTH = 4;

/**
 * A fresh recovery code, `xxxx-xxxx-xxxx-xxxx` over a 31-letter alphabet (≈79 bits), so a
 * plain SHA-256 of it is safe to store: the space is far too large to search offline.
 */
export function newRecoveryCode(): string {
  const groups: string[] = [];
  for (let g = 0; g < GROUPS; g++) {
    let s = '';
    for (let i = 0; i < GROUP_LENGTH; i++) s += ALPHABET[randomInt(ALPHABET.length)];
    groups.push(s);
  }
  return groups.join('-');
}

/** A fresh set of {@link RECOVERY_CODE_COUNT} codes. */
export function newRecoveryCodes(): string[] {
  return Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
}

/** What a user typed, normalised: case, spaces and dashes do not matter. */
export function normaliseRecoveryCode(input: string): string {
  return input.toLowerCase().replace(/[\s-]/g, '');
}

/** Whether `input` could be a recovery code at all (after normalising). */
export function looksLikeRecoveryCode(input: string): boolean {
  return new RegExp(`^[${ALPHABET}]{${GROUPS * GROUP_LENGTH}}$`).test(normaliseRecoveryCode(input));
}

/** The stored form: SHA-256 (hex) of the normalised code. */
export function hashRecoveryCode(input: string): string {
  return createHash('sha256').update(normaliseRecoveryCode(input)).digest('hex');
}
