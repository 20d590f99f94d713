/**
 * A secret (an API key, a token) with its last character mistyped: same length, same kind of
 * character (digit, lower or upper case letter), never the same. Replacing it with a fixed
 * character left the secret unchanged whenever it already ended with that one (1 in 16 hex
 * tokens, 1 in 52 keys), and the wrong-secret checks then failed at random.
 */
export function mistyped(secret: string): string {
  const last = secret.at(-1) ?? '';
  const first = /\d/.test(last) ? '0' : /[a-z]/.test(last) ? 'a' : 'A';
  return `${secret.slice(0, -1)}${last === first ? String.fromCharCode(first.charCodeAt(0) + 1) : first}`;
}
