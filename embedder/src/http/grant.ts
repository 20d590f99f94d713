/**
 * Only the gateway's requests are served: an embeddings request must carry the grant authz
 * signed for it (contract/grant.ts), checked in an onRequest hook, before its body is read, so a
 * caller who reaches the embedder directly, whatever identity headers it forges, costs only its
 * headers. The verified claims ride on the request for the handler and the settlement.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { verifyGrant, type GrantClaims } from '../../../contract/grant.js';
import { GRANT_HEADER } from '../../../contract/headers.js';
import { ProblemError } from '../../../openapi/problems.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified grant of a gateway request; null on routes that need none. */
    grant: GrantClaims | null;
  }
}

/**
 * Refuses, on POSTs to `paths` and on any method of `allMethods` (the Batch API, whose reads are
 * an organization's data too), every request without a valid grant; 401 for none or a forged
 * one, 503 for an expired one.
 */
export function requireGrant(
  app: FastifyInstance,
  paths: readonly string[],
  secret: string,
  retryAfterSeconds: number,
  now: () => number = Date.now,
  allMethods: readonly string[] = [],
): void {
  app.decorateRequest('grant', null);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    const url = request.routeOptions.url ?? '';
    if (!allMethods.includes(url) && (request.method !== 'POST' || !paths.includes(url))) return;
    const checked = verifyGrant(request.headers[GRANT_HEADER], secret, now());
    if (checked.ok) {
      request.grant = checked.claims;
      return;
    }
    // A grant that expired on its way (a very slow upload) is the gateway's to decide again.
    if (checked.fault === 'expired') {
      throw new ProblemError('authorization_unavailable', 'The authorization of this request expired before it arrived; retry.', {
        'retry-after': String(retryAfterSeconds),
      });
    }
    throw new ProblemError('invalid_api_key', "The request did not pass the gateway's authorization.", { 'www-authenticate': 'Bearer' });
  });
}
