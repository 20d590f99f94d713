#!/bin/bash
# The gateway pod's preStop hook: usage `ctg-drain ADMIN_PORT SECONDS [MIN_SECONDS]`. Tells Envoy
# to drain its listeners (HTTP/1.1 replies get `connection: close`, HTTP/2 gets GOAWAY, so clients
# move to other replicas while requests in flight finish), then waits until no request is in
# flight, but never less than MIN_SECONDS (default 0) nor more than SECONDS. The minimum exists
# because a terminating pod keeps receiving new connections until the EndpointSlice change has
# reached every kube-proxy and the load balancer's health checks have failed the node: returning
# at once when idle would let Envoy exit under those late connections. Kubernetes sends SIGTERM
# when this returns. The Envoy image has no curl; bash's /dev/tcp talks to the loopback-only
# admin port.
set -u
port="${1:?admin port}" seconds="${2:?seconds}" min_seconds="${3:-0}"

admin() { # METHOD PATH -> response body on stdout
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf '%s %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$1" "$2" >&3
  sed '1,/^\r\{0,1\}$/d' <&3
  exec 3<&-
}

admin POST '/drain_listeners?graceful' >/dev/null || exit 0  # Envoy already gone
for ((i = 0; i < seconds; i++)); do
  # The filter ^http\.gateway\.downstream_rq_active$, percent-encoded for the request line.
  stats="$(admin GET '/stats?filter=%5Ehttp%5C.gateway%5C.downstream_rq_active%24')" || exit 0
  # An answer without the gauge counts as busy: wait rather than cut requests short.
  ((i >= min_seconds)) && [[ "$(sed -n 's/^http\.gateway\.downstream_rq_active: //p' <<<"$stats")" == "0" ]] && exit 0
  sleep 1
done
