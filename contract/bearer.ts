/**
 * The check every internal metrics endpoint makes (authz's, the embedder's, the admin
 * listener's): `Authorization: Bearer <token>`, compared as SHA-256 digests in constant time.
 * Without a configured token nobody passes: fail closed.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (value: string): Buffer => createHash('sha256').update(value).digest();

/** A predicate over an Authorization header value: true only for `Bearer <token>`. */
export function bearerCheck(token: string | undefined): (authorization: string | undefined) => boolean {
  const expected = token ? digest(`Bearer ${token}`) : undefined;
  // Digests have one length, so the compare takes the same time whatever was sent.
  return (authorization) => expected !== undefined && timingSafeEqual(digest(authorization ?? ''), expected);
}
