/**
 * API keys, pure: reading the `Authorization` header, the key's shape, minting new keys, and
 * hashing/comparing secrets. Keys look like `<KEY_PREFIX>_<12 letters>_<38 letters>`; the
 * 12-letter segment is the key id (stored in clear), the 38-letter secret only as a hash.
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Deny } from './decision.js';

const KEY_ID_LENGTH = 12;
const KEY_SECRET_LENGTH = 38;
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

export interface PresentedKey {
  readonly id: string;
  readonly secret: string;
}

/** Reads `Authorization: Bearer <key>` and checks the key's shape; never echoes the key. */
export function parseAuthorization(header: string | undefined, keyPrefix: string): PresentedKey | Deny {
  if (header === undefined || header.trim() === '') {
    return deny('missing_api_key', 'The Authorization header with a Bearer API key is required.');
  }
  const match = /^(\S+)[ \t]+(\S+)[ \t]*$/.exec(header.trim());
  if (!match || match[1]!.toLowerCase() !== 'bearer') {
    return deny('malformed_api_key', 'The Authorization header must be "Bearer <API key>".');
  }
  const key = parseKey(match[2]!, keyPrefix);
  if (!key) {
    return deny('malformed_api_key', `The API key must look like ${keyPrefix}_<12 upper-case letters>_<38 upper-case letters>.`);
  }
  return key;
}

/** Splits a full key into id and secret, or returns null when its shape is wrong. */
export function parseKey(key: string, keyPrefix: string): PresentedKey | null {
  const parts = key.split('_');
  if (parts.length !== 3 || parts[0] !== keyPrefix) return null;
  const [, id, secret] = parts as [string, string, string];
  if (!isLetters(id, KEY_ID_LENGTH) || !isLetters(secret, KEY_SECRET_LENGTH)) return null;
  return { id, secret };
}

function isLetters(value: string, length: number): boolean {
  return value.length === length && /^[A-Z]+$/.test(value);
}

/** Mints a new key from a cryptographic RNG; `randomLetter` is injectable for tests only. */
export function mintKey(keyPrefix: string, randomLetter: () => string = secureLetter): { id: string; secret: string; key: string } {
  const draw = (n: number): string => Array.from({ length: n }, randomLetter).join('');
  const id = draw(KEY_ID_LENGTH);
  const secret = draw(KEY_SECRET_LENGTH);
  return { id, secret, key: `${keyPrefix}_${id}_${secret}` };
}

function secureLetter(): string {
  return LETTERS[randomInt(LETTERS.length)]!;
}

// HMAC with a server-side secret, not a bare SHA-256: a copy of Redis alone does not let anyone
// test guesses offline. The id is bound into the MAC so a hash cannot be moved to another key.
// Secrets carry 178 bits of entropy, so a slow password hash would add cost and no safety.
/** The stored hash (hex) of a key's secret. */
export function hashSecret(id: string, secret: string, serverSecret: string): string {
  return createHmac('sha256', serverSecret).update(`${id}:${secret}`).digest('hex');
}

/** Compares a presented secret with the stored hash in constant time. */
export function secretMatches(presented: PresentedKey, storedHash: string, serverSecret: string): boolean {
  const expected = Buffer.from(hashSecret(presented.id, presented.secret, serverSecret), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  // Lengths are public (always 32 bytes for a well-formed record); only contents are secret.
  return stored.length === expected.length && timingSafeEqual(stored, expected);
}

function deny(code: Deny['code'], detail: string): Deny {
  return { kind: 'deny', code, detail };
}
