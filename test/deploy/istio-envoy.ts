/**
 * An Envoy bootstrap shaped like the one Istio generates on an ingress gateway for this
 * project's Istio mode (deploy/istio): a CUSTOM AuthorizationPolicy with an envoyExtAuthzGrpc
 * provider becomes an ext_authz filter with a gRPC service, headers only unless
 * includeRequestBodyInCheck is set, failure_mode_allow false and status_on_error from the
 * provider. None of the
 * project's own filters run: no header stripping, no json_to_metadata, no body limit, no problem
 * bodies of Envoy's own. The routes are the shipped staging VirtualService's; GET /health is
 * outside the policy (notPaths), so unchecked.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { istioEdgeOf } from '../../envoy/istio-edge.js';
import { repoRoot } from '../support/stack.js';

export interface IstioLikeOptions {
  readonly listenerPort: number;
  readonly adminPort: number;
  readonly authzPort: number;
  readonly embedderPort: number;
  /** includeRequestBodyInCheck set on the provider. */
  readonly includeBody: boolean;
}

const AUTHZ_CLUSTER = 'outbound|9191||ctg-authz.ctg-staging.svc.cluster.local';
// Istio names clusters outbound|port||host and sets the gRPC :authority to the host (a '|'
// is not valid in an authority, so the cluster name cannot serve as one).
const AUTHZ_AUTHORITY = 'ctg-authz.ctg-staging.svc.cluster.local';
const EMBEDDER_CLUSTER = 'outbound|8081||ctg-embedder.ctg-staging.svc.cluster.local';

function cluster(name: string, port: number, http2: boolean): object {
  return {
    name,
    type: 'STATIC',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } }] }],
    },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: http2 ? { http2_protocol_options: {} } : { http_protocol_options: {} },
      },
    },
  };
}

function extAuthz(includeBody: boolean): object {
  return {
    name: 'envoy.filters.http.ext_authz',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
      transport_api_version: 'V3',
      grpc_service: { envoy_grpc: { cluster_name: AUTHZ_CLUSTER, authority: AUTHZ_AUTHORITY }, timeout: '0.5s' },
      // Provider failOpen: false and statusOnError: "503" (deploy/istio/<env>/istiod-values.yaml).
      failure_mode_allow: false,
      status_on_error: { code: 'ServiceUnavailable' },
      // includeRequestBodyInCheck { maxRequestBytes: 1 MiB, allowPartialMessage: false }.
      ...(includeBody ? { with_request_body: { max_request_bytes: 1_048_576, allow_partial_message: false } } : {}),
    },
  };
}

/**
 * The shipped staging VirtualService's http routes as Istio turns them into Envoy routes: each
 * match block one route (named after the http route), `exact` a path, `regex` a safe_regex,
 * `method` a :method header; its timeout, its retries (attempts 0: none) and its destination,
 * here the embedder's cluster. A route outside the AuthorizationPolicy (GET /health, its
 * notPaths) has ext_authz off, as Istio's shadow-RBAC metadata turns it off there.
 */
function shippedRoutes(): object[] {
  const vs = parse(readFileSync(join(repoRoot, 'deploy/istio/staging/virtual-service.yaml'), 'utf8'));
  const notPaths = istioEdgeOf('staging').uncheckedPaths;
  const path = (uri: any) => (uri.exact !== undefined ? { path: uri.exact } : { safe_regex: { regex: uri.regex } });
  return vs.spec.http.flatMap((route: any) =>
    route.match.map((m: any) => ({
      name: route.name,
      match: { ...path(m.uri), ...(m.method ? { headers: [{ name: ':method', string_match: { exact: m.method.exact } }] } : {}) },
      route: {
        cluster: EMBEDDER_CLUSTER,
        ...(route.timeout ? { timeout: route.timeout } : {}),
        ...(route.retries.attempts > 0 ? { retry_policy: { retry_on: route.retries.retryOn, num_retries: route.retries.attempts } } : {}),
      },
      ...(m.uri.exact !== undefined && notPaths.includes(m.uri.exact) ? { typed_per_filter_config: unchecked } : {}),
    })),
  );
}

/**
 * The shipped staging EnvoyFilter (edge-filter.yaml) as Istio applies it to the host's filter
 * chain: its HCM MERGE's fields, and its HTTP filters inserted before ext_authz in order. The
 * SNI match itself is checked by istio-objects.test.ts (this listener has no TLS).
 */
function shippedEdge(): { hcm: object; filters: object[] } {
  const filter = parse(readFileSync(join(repoRoot, 'deploy/istio/staging/edge-filter.yaml'), 'utf8'));
  const patches: any[] = filter.spec.configPatches;
  const merge = patches.find((p) => p.applyTo === 'NETWORK_FILTER' && p.patch.operation === 'MERGE');
  const { '@type': _type, ...hcm } = merge.patch.value.typed_config;
  const filters = patches
    .filter(
      (p) =>
        p.applyTo === 'HTTP_FILTER' &&
        p.patch.operation === 'INSERT_BEFORE' &&
        p.match.listener.filterChain.filter.subFilter.name === 'envoy.filters.http.ext_authz',
    )
    .map((p) => p.patch.value);
  if (filters.length + 1 !== patches.length) throw new Error('edge-filter.yaml has a patch this bootstrap does not apply');
  return { hcm, filters };
}

const unchecked = {
  'envoy.filters.http.ext_authz': {
    '@type': 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute',
    disabled: true,
  },
};

/** The bootstrap, as JSON (Envoy reads JSON as YAML). */
export function istioLikeBootstrap(o: IstioLikeOptions): string {
  const edge = shippedEdge();
  const hcm = {
    ...edge.hcm,
    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
    stat_prefix: 'outbound_0.0.0.0_443',
    codec_type: 'AUTO',
    use_remote_address: true,
    normalize_path: true,
    merge_slashes: true,
    route_config: {
      name: 'https.443.https-ctg.ctg-staging.istio-system',
      virtual_hosts: [{ name: 'embeddings.staging.example.org:443', domains: ['*'], routes: shippedRoutes() }],
    },
    http_filters: [
      ...edge.filters,
      extAuthz(o.includeBody),
      {
        name: 'envoy.filters.http.router',
        typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
      },
    ],
  };
  return JSON.stringify(
    {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: o.adminPort } } },
      static_resources: {
        listeners: [
          {
            name: '0.0.0.0_443',
            address: { socket_address: { address: '127.0.0.1', port_value: o.listenerPort } },
            filter_chains: [{ filters: [{ name: 'envoy.filters.network.http_connection_manager', typed_config: hcm }] }],
          },
        ],
        clusters: [cluster(AUTHZ_CLUSTER, o.authzPort, true), cluster(EMBEDDER_CLUSTER, o.embedderPort, false)],
      },
    },
    null,
    1,
  );
}
