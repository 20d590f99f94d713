#!/bin/sh
# Starts one of the fleet's Redis nodes as deploy/kubernetes/components/redis-sentinel/start.sh
# starts a pod: a replica of the primary the Sentinels name, or the primary when they name this
# node; when no Sentinel answers (the fleet's first start), a replica of FIRST_PRIMARY (or the
# primary, on that node). While a Sentinel sees the primary down or is failing it over, it waits
# (at most FAILOVER_WAIT_S) and asks again: a node that died as the primary must not come back
# as one while a replica is being promoted (a split brain: writes on two primaries, one side
# lost). A node restarted after the promotion rejoins as a replica at once.
#
# START_AS_PRIMARY_FILE, when that file exists, skips all this and starts the node as a primary:
# a node restarted with its old role (the "restarted before demotion" scenario provokes the split
# brain with it). The Sentinels' password comes in REDISCLI_AUTH (not on a command line).
set -eu
: "${SELF:?}" "${SENTINELS:?}" "${SENTINEL_NAME:?}" "${FIRST_PRIMARY:?}" "${PORT:?}" "${FAILOVER_WAIT_S:?}"
if [ -n "${START_AS_PRIMARY_FILE:-}" ] && [ -e "$START_AS_PRIMARY_FILE" ]; then
  echo "redis-start: $SELF starts as a primary (as it was)"
  unset REDISCLI_AUTH
  exec redis-server "$@"
fi

waited=0
while :; do
  primary="" busy=""
  for s in $SENTINELS; do
    answer="$(timeout 2 redis-cli -h "${s%:*}" -p "${s#*:}" SENTINEL get-master-addr-by-name "$SENTINEL_NAME" 2>/dev/null | head -n 1 || true)"
    case "$answer" in '' | *ERR* | *NOAUTH* | *'(nil)'*) continue ;; esac
    [ -n "$primary" ] || primary="$answer"
    [ "$answer" = "$primary" ] || busy="the Sentinels name $primary and $answer"
    flags="$(timeout 2 redis-cli -h "${s%:*}" -p "${s#*:}" SENTINEL master "$SENTINEL_NAME" 2>/dev/null | sed -n '/^flags$/{n;p;}' || true)"
    case "$flags" in *s_down* | *o_down* | *failover_in_progress*) busy="$s: $flags" ;; esac
  done
  [ -n "$busy" ] && [ "$waited" -lt "$FAILOVER_WAIT_S" ] || break
  [ "$waited" -gt 0 ] || echo "redis-start: $SELF waits for the failover ($busy)"
  sleep 1
  waited=$((waited + 1))
done
[ -n "$primary" ] || primary="$FIRST_PRIMARY"
# redis-server does not need the Sentinels' password: it leaves with this shell.
unset REDISCLI_AUTH
echo "redis-start: $SELF starts with primary $primary"
if [ "$primary" = "$SELF" ]; then exec redis-server "$@"; fi
exec redis-server "$@" --replicaof "$primary" "$PORT"
