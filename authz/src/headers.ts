/**
 * Header names shared with Envoy and the embedder (the agreed interfaces). Envoy strips any
 * client-sent `x-gateway-*` header before ext_authz, so only authz can set the identity ones.
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

/** Set by the embedder on 200s (= usage.total_tokens); Envoy logs it to authz's ALS. */
export const USAGE_TOKENS_HEADER = 'x-usage-total-tokens';
