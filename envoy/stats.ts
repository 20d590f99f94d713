/**
 * Envoy's stats for a Prometheus outside the pod: a plain-HTTP listener on ENVOY_STATS_PORT
 * whose one route, GET /stats/prometheus, goes to the loopback-only admin interface; every other
 * path and method is 404, so config_dump, /quitquitquit and the rest stay unreachable from the
 * network. Off (no listener, no cluster) when the port is 0: the local stack's Prometheus reads
 * the admin interface on loopback itself.
 */

const CLUSTER = 'envoy_admin_stats';

/** The stats listener as one YAML flow item of static_resources.listeners, or a comment when off. */
export function statsListener(statsPort: number): string {
  if (statsPort === 0) return '# no stats listener (ENVOY_STATS_PORT=0)';
  const listener = {
    name: 'stats',
    address: { socket_address: { address: '0.0.0.0', port_value: statsPort } },
    // A scrape is one small request: a tight buffer and timeouts, and few connections.
    per_connection_buffer_limit_bytes: 32768,
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: 'stats',
              codec_type: 'HTTP1',
              normalize_path: true,
              merge_slashes: true,
              path_with_escaped_slashes_action: 'REJECT_REQUEST',
              request_headers_timeout: '5s',
              request_timeout: '10s',
              common_http_protocol_options: { idle_timeout: '60s', max_headers_count: 32 },
              route_config: {
                virtual_hosts: [
                  {
                    name: 'stats',
                    domains: ['*'],
                    routes: [
                      {
                        // Exactly this path, GET only (a query string is not matched, and passed on:
                        // ?usedonly or ?filter= still read only stats).
                        match: { path: '/stats/prometheus', headers: [{ name: ':method', string_match: { exact: 'GET' } }] },
                        route: { cluster: CLUSTER, timeout: '5s' },
                      },
                      { match: { prefix: '/' }, direct_response: { status: 404 } },
                    ],
                  },
                ],
              },
              http_filters: [
                {
                  name: 'envoy.filters.http.router',
                  typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
                },
              ],
            },
          },
        ],
      },
    ],
  };
  return `- ${JSON.stringify(listener)}`;
}

/** The cluster the stats route goes to: Envoy's own admin address on loopback, or a comment when off. */
export function statsCluster(statsPort: number, adminPort: number): string {
  if (statsPort === 0) return '# no admin stats cluster (ENVOY_STATS_PORT=0)';
  const cluster = {
    name: CLUSTER,
    type: 'STATIC',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: CLUSTER,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } } }] }],
    },
  };
  return `- ${JSON.stringify(cluster)}`;
}
