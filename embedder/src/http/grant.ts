/**
 * Only the gateway's requests are served: a request to an operation that needs the API key must
 * carry the grant authz signed for it (contract/grant.ts), checked in an onRequest hook, before
 * its body is read, so a caller who reaches the embedder directly, whatever identity headers it
 * forges, costs only its headers. The verified claims ride on the request for the handler and
 * the settlement.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { verifyGrant, type GrantClaims } from '../../../contract/grant.js';
import { GRANT_HEADER } from '../../../contract/headers.js';
import type { SecretValues } from '../../../contract/secrets.js';
import { ProblemError } from '../../../openapi/problems.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The verified grant of a gateway request; null on routes that need none. */
    grant: GrantClaims | null;
  }
}

/**
 * Refuses, on `routes` (`METHOD /url` as Fastify names them), every request without a valid
 * grant for its method and target; 401 for none, a forged one or another request's, 503 for an
 * expired one.
 */
export function requireGrant(
  app: FastifyInstance,
  routes: readonly string[],
  secret: SecretValues,
  retryAfterSeconds: number,
  now: () => number = Date.now,
): void {
  app.decorateRequest('grant', null);
  app.addHook('onRequest', async (request: FastifyRequest) => {
    if (!routes.includes(`${request.method} ${request.routeOptions.url ?? ''}`)) return;
    const checked = verifyGrant(request.headers[GRANT_HEADER], secret.accepted, now());
    // A grant covers the one request authz decided on: the same method and the exact target
    // (a query string added or changed is another request), so a captured grant replayed
    // elsewhere serves nothing; its single use is enforced on Redis (settlement.lua).
    if (checked.ok && checked.claims.method === request.method && checked.claims.path === request.url) {
      request.grant = checked.claims;
      return;
    }
    // A grant that expired on its way (a very slow upload) is the gateway's to decide again.
    if (!checked.ok && checked.fault === 'expired') {
      throw new ProblemError('authorization_unavailable', 'The authorization of this request expired before it arrived; retry.', {
        'retry-after': String(retryAfterSeconds),
      });
    }
    throw new ProblemError('invalid_api_key', "The request did not pass the gateway's authorization.", { 'www-authenticate': 'Bearer' });
  });
}
