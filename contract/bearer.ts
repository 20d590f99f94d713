/**
 * The check every internal metrics endpoint makes (authz's, the embedder's, the admin
 * listener's): `Authorization: Bearer <token>` for any accepted metrics token (two during a
 * rotation, contract/secrets.ts), compared as SHA-256 digests in constant time. Without a
 * configured token nobody passes: fail closed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { SecretValues } from './secrets.js';

/** The SHA-256 digest the checks compare. */
export const secretDigest = (value: string): Buffer => createHash('sha256').update(value).digest();
const digest = secretDigest;

/** True when `given` equals one of `expected` (digests); every one is compared, whichever matches. */
export function matchesAnyDigest(given: Buffer, expected: readonly Buffer[]): boolean {
  let found = false;
  for (const one of expected) found = timingSafeEqual(given, one) || found;
  return found;
}

/**
 * The digests of `secret`'s accepted values under `form`, recomputed only when a rotation
 * replaced them (`accepted` is a new array after each change).
 */
export function acceptedDigests(secret: SecretValues, form: (value: string) => string): () => readonly Buffer[] {
  let seen: readonly string[] | undefined;
  let digests: readonly Buffer[] = [];
  return () => {
    if (secret.accepted !== seen) {
      seen = secret.accepted;
      digests = seen.map((value) => digest(form(value)));
    }
    return digests;
  };
}

/** A predicate over an Authorization header value: true only for `Bearer <token>`, any accepted token. */
export function bearerCheck(token: SecretValues | undefined): (authorization: string | undefined) => boolean {
  if (token === undefined) return () => false;
  const expected = acceptedDigests(token, (value) => `Bearer ${value}`);
  // Digests have one length, so the compare takes the same time whatever was sent.
  return (authorization) => matchesAnyDigest(digest(authorization ?? ''), expected());
}
