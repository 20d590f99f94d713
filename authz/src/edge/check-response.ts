/**
 * Builds Envoy CheckResponses from decisions. Denials carry the gateway's one problem body
 * (openapi/problems.ts); allowed requests carry the caller's identity to the upstream, in
 * headers that replace any of the same name, and the rate-limit headers to the client.
 */
import { PROBLEM_CONTENT_TYPE, catalogue, problem } from '../../../openapi/problems.js';
import type { CheckResponse } from '../../generated/envoy/service/auth/v3/CheckResponse.js';
import type { HeaderValueOption } from '../../generated/envoy/config/core/v3/HeaderValueOption.js';
import type { StatusCode } from '../../generated/envoy/type/v3/StatusCode.js';
import type { Deny } from '../policy/decision.js';
import type { Grant } from '../policy/access.js';
import { GRANT_HEADER, IDENTITY_HEADERS } from '../../../contract/headers.js';
import { rateLimitHeaders, retryAfterSeconds, type LimitOutcome } from '../policy/limits.js';

// google.rpc.Code values Envoy reads to tell allowed from denied.
const RPC_OK = 0;
const RPC_PERMISSION_DENIED = 7;
const RPC_RESOURCE_EXHAUSTED = 8;
const RPC_UNAUTHENTICATED = 16;

// Overwrite, never append: a value smuggled past the edge must not survive beside ours.
function headers(values: Record<string, string>): HeaderValueOption[] {
  return Object.entries(values).map(([key, value]) => ({ header: { key, value }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' }));
}

/**
 * The response letting a granted request through, with the signed grant (`signedGrant`, what the
 * embedder acts on), the informational identity headers and the rate-limit headers.
 * `clientGatewayHeaders` are the request's own `x-gateway-*` names: removed unless authz sets
 * them, so a forged header cannot survive even behind a proxy that does not strip them.
 */
export function allowed(
  grant: Grant,
  outcome: LimitOutcome,
  signedGrant: string,
  clientGatewayHeaders: readonly string[] = [],
): CheckResponse {
  const identity: Record<string, string> = {
    [GRANT_HEADER]: signedGrant,
    [IDENTITY_HEADERS.org]: grant.org.id,
    [IDENTITY_HEADERS.key]: grant.keyId,
  };
  if (grant.modelEnabled) identity[IDENTITY_HEADERS.model] = grant.model;
  const forged = clientGatewayHeaders.filter((name) => !(name in identity));
  return {
    status: { code: RPC_OK },
    ok_response: {
      headers: headers(identity),
      // The embedder has no use for the caller's secret; it never travels past the gateway.
      headers_to_remove: ['authorization', ...forged],
      response_headers_to_add: headers(rateLimitHeaders(outcome)),
    },
  };
}

/** The 429 for a request over its organization's limit. */
export function rateLimited(outcome: LimitOutcome): CheckResponse {
  const detail =
    outcome.reason === 'tokens'
      ? `The organization's tokens-per-minute limit (${outcome.limits.tpm}) for this model is used up.`
      : `The organization's requests-per-minute limit (${outcome.limits.rpm}) for this model is used up.`;
  return denied(
    { kind: 'deny', code: 'rate_limit_exceeded', detail },
    {
      ...rateLimitHeaders(outcome),
      'retry-after': String(retryAfterSeconds(outcome)),
    },
  );
}

/** A problem response for a refusal; 401s carry `www-authenticate: Bearer`. */
export function denied(deny: Deny, extra: Record<string, string> = {}): CheckResponse {
  const status = catalogue.get(deny.code)?.status ?? 500;
  const extraHeaders: Record<string, string> = status === 401 ? { 'www-authenticate': 'Bearer', ...extra } : extra;
  return {
    status: { code: rpcCodeFor(status), message: deny.code },
    denied_response: {
      status: { code: status as StatusCode },
      headers: headers({ 'content-type': PROBLEM_CONTENT_TYPE, ...extraHeaders }),
      body: JSON.stringify(problem(deny.code, deny.detail)),
    },
  };
}

function rpcCodeFor(status: number): number {
  if (status === 401) return RPC_UNAUTHENTICATED;
  if (status === 429) return RPC_RESOURCE_EXHAUSTED;
  return RPC_PERMISSION_DENIED;
}
