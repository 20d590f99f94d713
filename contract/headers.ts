/**
 * Header names shared by Envoy, authz and the embedder (the agreed interfaces; the embedder
 * imports them from here). Envoy strips any client-sent `x-gateway-*` header before ext_authz,
 * and authz removes any it does not set, so only the gateway sets them.
 */

/** The prefix of every header only authz may set; client-sent ones are removed. */
export const GATEWAY_HEADER_PREFIX = 'x-gateway-';

/**
 * Identity headers authz adds to the upstream request, for logs and traces. `model` is present
 * only when the organization may use the served model. The embedder acts on the signed grant
 * (GRANT_HEADER) alone, never on these.
 */
export const IDENTITY_HEADERS = {
  org: 'x-gateway-org-id',
  key: 'x-gateway-key-id',
  model: 'x-gateway-model',
} as const;

/**
 * The signed grant (contract/grant.ts): what authz decided, verifiable by the embedder. The
 * embedder acts on nothing else; the identity headers above are informational (logs, traces).
 */
export const GRANT_HEADER = 'x-gateway-grant';

/**
 * The gRPC metadata Envoy's ext_authz sends authz on every Check: the caller token
 * (AUTHZ_CALLER_TOKEN_FILE), without which authz refuses the call (authz/src/edge/caller.ts).
 */
export const AUTHZ_CALLER_METADATA = 'x-authz-caller-token';
