import { randomBytes, sha256Hex } from './crypto';

/**
 * RFC 8628 section 6.1: 20 consonants, no vowels (so no words) and no digits (so no 0/O or
 * 1/I/L to misread); 20^8 codes, about 34 bits.
 */
const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
const LENGTH = 8;

/** A code a person reads from one screen and types into another: `XXXX-XXXX`. */
export function newUserCode(): string {
  let code = '';
  while (code.length < LENGTH) {
    // Rejection sampling keeps every letter equally likely (256 is not a multiple of 20).
    for (const byte of randomBytes(LENGTH * 2)) {
      if (byte < 240 && code.length < LENGTH) code += ALPHABET[byte % ALPHABET.length];
    }
  }
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/**
 * RFC 8628 section 6.1: case, dashes and spaces typed by a person do not matter. Answers null
 * for a string that cannot be a code, so callers answer "not found" without a lookup.
 */
export function normalizeUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, '');
  return code.length === LENGTH && [...code].every((ch) => ALPHABET.includes(ch)) ? code : null;
}

/** Codes are stored as SHA-256 of their normalised form, like every other credential here. */
export const userCodeHash = (normalized: string) => sha256Hex(`user-code:${normalized}`);
