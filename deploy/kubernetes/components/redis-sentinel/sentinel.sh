#!/bin/sh
# ctg-redis pods' Sentinel: runs redis-sentinel, then shortens its TILT period from 30 s to 5 s.
#
# Why: a Sentinel whose timer stalls past 2 s (a starved CPU, or a blocking DNS lookup of the
# lost pod's name, which it retries every second) enters TILT and acts on nothing for the period.
# It only then marks the primary down, and it never promotes a replica whose link to the primary
# has been down for more than 10 x down-after-milliseconds (20 s here) longer than the primary
# has been marked down: a 30 s TILT within 10 s of the loss left every replica disqualified,
# for good (-failover-abort-no-good-slave every 10 s; measured in make test-images). With 5 s the
# primary is marked down within 20 s of its loss unless the stall itself lasts about 15 s.
# SENTINEL DEBUG settings are not kept in sentinel.conf, so this is set at every start; a
# Sentinel that refuses it keeps running (with the 30 s period) and says so.
set -u
redis-sentinel /data/conf/sentinel.conf &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
tries=0
until REDISCLI_AUTH="$(cat /etc/ctg/redis-auth/sentinel-password)" timeout 3 redis-cli --tls --cacert /etc/ctg/redis-tls/ca.crt \
  -h localhost -p 26379 SENTINEL DEBUG tilt-period 5000 2>/dev/null | grep -q '^OK$'; do
  kill -0 "$pid" 2>/dev/null || break
  tries=$((tries + 1))
  if [ "$tries" -ge 150 ]; then
    echo "ctg-redis: SENTINEL DEBUG tilt-period 5000 refused for 30 s; TILT lasts 30 s" >&2
    break
  fi
  sleep 0.2
done
status=0
wait "$pid" || status=$?
# A trapped signal ends the first wait early: wait for Sentinel's own exit.
if kill -0 "$pid" 2>/dev/null; then
  status=0
  wait "$pid" || status=$?
fi
exit "$status"
