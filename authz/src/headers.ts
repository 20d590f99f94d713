/**
 * Header names shared by Envoy, authz and the embedder (the agreed interfaces; the embedder
 * imports them from here). Envoy strips any client-sent `x-gateway-*` header before ext_authz,
 * and authz removes any it does not set, so only the gateway sets them.
 */

/** The prefix of every header only authz may set; client-sent ones are removed. */
export const GATEWAY_HEADER_PREFIX = 'x-gateway-';

/**
 * Identity headers authz adds to the upstream request. `model` is the grant: present only when
 * the organization may use the served model, and the embedder serves nothing else.
 */
export const IDENTITY_HEADERS = {
  org: 'x-gateway-org-id',
  key: 'x-gateway-key-id',
  model: 'x-gateway-model',
} as const;

/**
 * Envoy's id for one client request, the same on each retry of it to another replica (the
 * embeddings route adds it): the embedder's admission id, so a retried request is recorded once.
 */
export const REQUEST_UID_HEADER = 'x-gateway-request-uid';
