#!/usr/bin/env bash
# A throwaway Redis Cluster of primaries only, on this machine, for the cluster tests
# (test/e2e/cluster.test.ts) and for trying REDIS_CLUSTER_NODES by hand:
#   redis-cluster.sh start DIR PORT...   one redis-server per port (--cluster-enabled yes, no
#                                        persistence, data and logs in DIR), the slots shared out
#                                        by `redis-cli --cluster create`, with CLUSTER_REPLICAS
#                                        (default 0) replicas per primary (then give
#                                        primaries × (1 + replicas) ports); returns once every
#                                        node says cluster_state:ok and every replica is in sync
#   redis-cluster.sh stop DIR            stops the nodes it started there (their pid files)
# Then: REDIS_CLUSTER_NODES=127.0.0.1:PORT,… (docs/settlement.md, "Redis Cluster").
set -euo pipefail

die() { echo "redis-cluster: $*" >&2; exit 1; }

cmd="${1:-}"
dir="${2:-}"
[[ -n "$cmd" && -n "$dir" ]] || die "usage: $0 start DIR PORT... | stop DIR"
shift 2

case "$cmd" in
  start)
    replicas="${CLUSTER_REPLICAS:-0}"
    [[ "$replicas" =~ ^[0-9]$ ]] || die "CLUSTER_REPLICAS must be a digit"
    (( $# >= 3 * (1 + replicas) )) || die "a cluster needs at least 3 primaries (and their replicas)"
    mkdir -p "$dir"
    nodes=()
    for port in "$@"; do
      [[ "$port" =~ ^[0-9]+$ ]] || die "not a port: $port"
      if redis-cli -p "$port" PING >/dev/null 2>&1; then die "something already answers on $port"; fi
      redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
        --cluster-config-file "$dir/nodes-$port.conf" --cluster-node-timeout 2000 \
        --dir "$dir" --save '' --appendonly no \
        --daemonize yes --pidfile "$dir/redis-$port.pid" --logfile "$dir/redis-$port.log"
      nodes+=("127.0.0.1:$port")
    done
    for port in "$@"; do
      for _ in $(seq 1 50); do
        redis-cli -p "$port" PING >/dev/null 2>&1 && break
        sleep 0.1
      done
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log" 2>&1 ||
      die "cluster create failed: $(tail -n 5 "$dir/create.log")"
    for port in "$@"; do
      ok=""
      for _ in $(seq 1 100); do
        state="$(redis-cli -p "$port" CLUSTER INFO 2>/dev/null || true)"
        if grep -q '^cluster_state:ok' <<<"$state"; then ok=1; break; fi
        sleep 0.1
      done
      [[ -n "$ok" ]] || die "node $port never reached cluster_state:ok"
      synced=""
      for _ in $(seq 1 100); do
        info="$(redis-cli -p "$port" INFO replication 2>/dev/null)"
        if grep -q '^role:master' <<<"$info" || grep -q '^master_link_status:up' <<<"$info"; then synced=1; break; fi
        sleep 0.1
      done
      [[ -n "$synced" ]] || die "replica $port never synced with its primary"
    done
    echo "redis-cluster: up on ${nodes[*]}" >&2
    ;;
  stop)
    shopt -s nullglob
    for pidfile in "$dir"/redis-*.pid; do
      pid="$(cat "$pidfile")"
      # Only a redis-server this script started (its pid file), never a recycled pid.
      if [[ "$pid" =~ ^[0-9]+$ ]] && [[ "$(ps -o args= -p "$pid" 2>/dev/null)" == *redis-server* ]]; then kill "$pid" 2>/dev/null || true; fi
      rm -f "$pidfile"
    done
    ;;
  *) die "unknown command: $cmd" ;;
esac
