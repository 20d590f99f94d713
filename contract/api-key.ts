/**
 * API keys, pure: their format, minting, and the hash of their secret. admin mints a key and
 * stores only its hash; authz parses a presented key and compares. Keys look like
 * `<KEY_PREFIX>_<12 letters>_<38 letters>`: the 12-letter segment is the key id (stored in
 * clear), the 38-letter secret is stored only as an HMAC under KEY_HASH_SECRET.
 */
import { createHmac, randomInt, timingSafeEqual } from 'node:crypto';

const KEY_ID_LENGTH = 12;
const KEY_SECRET_LENGTH = 38;
const LETTERS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A key split into its id and secret. */
export interface PresentedKey {
  readonly id: string;
  readonly secret: string;
}

/** The key's shape in words, for messages: `CTG_<12 upper-case letters>_<38 upper-case letters>`. */
export function keyShape(keyPrefix: string): string {
  return `${keyPrefix}_<${KEY_ID_LENGTH} upper-case letters>_<${KEY_SECRET_LENGTH} upper-case letters>`;
}

/** True when `value` has a key id's shape (12 upper-case letters). */
export function isKeyId(value: string): boolean {
  return isLetters(value, KEY_ID_LENGTH);
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
