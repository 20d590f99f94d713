#!/bin/sh
# ctg-redis pods' init step: writes redis.conf and sentinel.conf into /data/conf (the pod's
# volume; Sentinel rewrites its own file as it learns the topology, so it must persist). The
# primary is whichever one the other pods' Sentinels name; when none answers (first start of
# the set), pod 0. Passwords and TLS material come from Secrets mounted as files; nothing secret
# is passed on a command line. Runs as the redis user with a read-only root filesystem.
set -eu
: "${POD_NAME:?}" "${HEADLESS:?}" "${REPLICAS:?}"
SECRETS=/etc/ctg/redis-auth TLS=/etc/ctg/redis-tls CONF=/data/conf
# The embedder's ACL user (its REDIS_USERNAME) is not made here: its rules name the
# settlement's secret namespace, which only authz knows; authz (re)creates it on the primary on
# every (re)connect and every 30 s (authz/src/store/settlement.ts; deploy/README.md → Redis).
me="$POD_NAME.$HEADLESS"
set_name="${POD_NAME%-*}"
mkdir -p "$CONF"

sentinel() {
  host="$1"
  shift
  REDISCLI_AUTH="$(cat "$SECRETS/sentinel-password")" timeout 3 redis-cli --tls --cacert "$TLS/ca.crt" -h "$host" -p 26379 "$@"
}
# While a peer's Sentinel holds the primary down or is failing it over, wait (at most 60 s) and
# ask again: a pod that died as the primary must not come back as one while a replica is being
# promoted (a split brain: clients write to both, and the demotion discards one side's writes).
waited=0
while :; do
  primary="" busy=""
  i=0
  while [ "$i" -lt "$REPLICAS" ]; do
    peer="$set_name-$i.$HEADLESS"
    i=$((i + 1))
    [ "$peer" != "$me" ] || continue
    answer="$(sentinel "$peer" SENTINEL get-master-addr-by-name ctg 2>/dev/null | head -n 1 || true)"
    case "$answer" in ''|*ERR*|*NOAUTH*) continue ;; esac
    [ -n "$primary" ] || primary="$answer"
    flags="$(sentinel "$peer" SENTINEL master ctg 2>/dev/null | sed -n '/^flags$/{n;p;}' || true)"
    case "$flags" in *s_down*|*o_down*|*failover_in_progress*) busy="$peer: $flags" ;; esac
  done
  [ -n "$busy" ] && [ "$waited" -lt 60 ] || break
  [ "$waited" -gt 0 ] || echo "ctg-redis: $me waits for the failover ($busy)"
  sleep 1
  waited=$((waited + 1))
done
[ -n "$primary" ] || primary="$set_name-0.$HEADLESS"

umask 077
{
  echo "port 0"
  echo "tls-port 6379"
  echo "tls-cert-file $TLS/tls.crt"
  echo "tls-key-file $TLS/tls.key"
  echo "tls-ca-cert-file $TLS/ca.crt"
  echo "tls-auth-clients no"
  echo "tls-replication yes"
  echo "dir /data"
  # The system of record (organizations, keys, usage): every write in the append-only file.
  echo "appendonly yes"
  echo "appendfsync everysec"
  # Writes refused (NOREPLICAS) unless a replica acknowledged the stream within 2 s: a primary
  # cut off from both replicas stops taking writes it would lose. Replicas acknowledge every
  # second and the lag counts whole seconds, so 1 s would refuse writes on one late ack. With
  # three pods one may be down; until the first replica syncs after a first start, writes wait.
  echo "min-replicas-to-write 1"
  echo "min-replicas-max-lag 2"
  # Redis 7's defaults, written out because the split brain's safety rests on them: a primary
  # restarted from its file has a new replication ID, so a replica attaching to it needs a full
  # sync that starts only after 5 s, and until then neither counts above nor answers WAIT.
  echo "repl-diskless-sync yes"
  echo "repl-diskless-sync-delay 5"
  echo "replica-announce-ip $me"
  echo "requirepass $(cat "$SECRETS/password")"
  echo "masterauth $(cat "$SECRETS/password")"
  [ "$primary" = "$me" ] || echo "replicaof $primary 6379"
} >"$CONF/redis.conf"

# Written once: afterwards Sentinel owns the file (the current primary, its peers, the epoch).
if [ ! -s "$CONF/sentinel.conf" ]; then
  {
    echo "port 0"
    echo "tls-port 26379"
    echo "tls-cert-file $TLS/tls.crt"
    echo "tls-key-file $TLS/tls.key"
    echo "tls-ca-cert-file $TLS/ca.crt"
    echo "tls-auth-clients no"
    echo "tls-replication yes"
    echo "dir /data"
    echo "sentinel resolve-hostnames yes"
    echo "sentinel announce-hostnames yes"
    echo "sentinel announce-ip $me"
    echo "requirepass $(cat "$SECRETS/sentinel-password")"
    echo "sentinel sentinel-pass $(cat "$SECRETS/sentinel-password")"
    echo "sentinel monitor ctg $primary 6379 2"
    echo "sentinel auth-pass ctg $(cat "$SECRETS/password")"
    # 2 s without an answer and a quorum of 2 promote the replica: the fail-closed window
    # measured by make fleet is this plus the election (under 3 s with 1 s there).
    echo "sentinel down-after-milliseconds ctg 2000"
    # Also how soon a failed election is retried (2 x this): with one pod lost, the two Sentinels
    # left can split their votes; at 10 s the retry came after 20 s (measured in make test-images).
    # 5 s, as make fleet's rehearsal runs it.
    echo "sentinel failover-timeout ctg 5000"
    echo "sentinel parallel-syncs ctg 1"
  } >"$CONF/sentinel.conf"
fi
echo "ctg-redis: $me starts with primary $primary"
