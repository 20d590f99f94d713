/**
 * The `Authorization` header, pure: reading `Bearer <key>` and checking the key's shape
 * (contract/api-key.ts owns the format and the hashing). A bad header is a denial, never an
 * exception, and the key is never echoed.
 */
import { keyShape, parseKey, type PresentedKey } from '../../../contract/api-key.js';
import type { Deny } from './decision.js';

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
    return deny('malformed_api_key', `The API key must look like ${keyShape(keyPrefix)}.`);
  }
  return key;
}

function deny(code: Deny['code'], detail: string): Deny {
  return { kind: 'deny', code, detail };
}
