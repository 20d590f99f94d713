/**
 * Istio mode's share of the project's edge (deploy/istio/<env>/edge-filter.yaml): an EnvoyFilter
 * for the mesh's ingress gateway that adds, on the filter chain of the environment's host only
 * (matched by SNI, so other hosts on the same gateway are untouched):
 * - the new-key budget (new-keys.ts) just before ext_authz, so a flood of junk keys costs authz
 *   no more than ENVOY_NEW_KEY_RPS Checks a second per gateway pod while known keys pass;
 * - the catalogue's problem bodies for the replies the gateway makes itself: the budget's 503,
 *   ext_authz's 503 when authz cannot answer (UAEX), and the 404 of a path no route serves.
 * A request on a path the AuthorizationPolicy leaves unchecked (its notPaths) spends no budget,
 * since no Check is made for it.
 *
 * CLI: `npx tsx envoy/istio-edge.ts` rewrites each environment's file from its Gateway's host;
 * test/deploy/istio-objects.test.ts fails when a committed file differs from this render.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse, stringify } from 'yaml';
import { settingDefault } from '../contract/settings.js';
import { localReplyMappers } from './local-replies.js';
import { knownKeysFilterConfig, NEW_KEY_RPS_DEFAULT, newKeyLimitConfig } from './new-keys.js';

const HCM = 'envoy.filters.network.http_connection_manager';
const deployIstio = fileURLToPath(new URL('../deploy/istio/', import.meta.url));

/** One environment: its public host, and the paths its AuthorizationPolicy does not check. */
interface IstioEdge {
  readonly env: string;
  readonly host: string;
  readonly uncheckedPaths: readonly string[];
}

/** The EnvoyFilter for one environment. */
function istioEdgeFilter(edge: IstioEdge, rps: number = NEW_KEY_RPS_DEFAULT): object {
  const chain = { sni: edge.host, filter: { name: HCM } };
  const beforeExtAuthz = (value: object) => ({
    applyTo: 'HTTP_FILTER',
    match: {
      context: 'GATEWAY',
      listener: { filterChain: { ...chain, filter: { name: HCM, subFilter: { name: 'envoy.filters.http.ext_authz' } } } },
    },
    patch: { operation: 'INSERT_BEFORE', value },
  });
  return {
    apiVersion: 'networking.istio.io/v1alpha3',
    kind: 'EnvoyFilter',
    metadata: { name: `ctg-edge-${edge.env}`, namespace: 'istio-system' },
    spec: {
      workloadSelector: { labels: { istio: 'ingressgateway' } },
      configPatches: [
        {
          applyTo: 'NETWORK_FILTER',
          match: { context: 'GATEWAY', listener: { filterChain: chain } },
          patch: {
            operation: 'MERGE',
            value: {
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                local_reply_config: { mappers: localReplyMappers('istio', settingDefault('RETRY_AFTER_SECONDS')) },
              },
            },
          },
        },
        // Each INSERT_BEFORE lands just before ext_authz: known_keys, then new_keys, then ext_authz.
        beforeExtAuthz(knownKeysFilterConfig({ paths: edge.uncheckedPaths })),
        beforeExtAuthz(newKeyLimitConfig(rps)),
      ],
    },
  };
}

/** An environment's edge as its committed Gateway and AuthorizationPolicy describe it. */
export function istioEdgeOf(env: string): IstioEdge {
  const read = (file: string) => parse(readFileSync(join(deployIstio, env, file), 'utf8'));
  const host: string = read('gateway.yaml').spec.servers[0].hosts[0];
  const uncheckedPaths: string[] = read('authorization-policy.yaml').spec.rules[0].to[0].operation.notPaths;
  return { env, host, uncheckedPaths };
}

/** The committed file's text for one environment. */
export function istioEdgeFile(env: string): string {
  const header = [
    `# Istio mode's edge for ${env} (envoy/istio-edge.ts): the new-key budget before ext_authz and`,
    "# the problem bodies of the gateway's own replies, on this host's filter chain only.",
    '# Generated: `npx tsx envoy/istio-edge.ts` rewrites it; do not edit by hand.',
  ].join('\n');
  return `${header}\n${stringify(istioEdgeFilter(istioEdgeOf(env)), { lineWidth: 0, aliasDuplicateObjects: false })}`;
}

const ISTIO_ENVIRONMENTS = Object.freeze(['staging', 'production']);

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  for (const env of ISTIO_ENVIRONMENTS) writeFileSync(join(deployIstio, env, 'edge-filter.yaml'), istioEdgeFile(env));
}
