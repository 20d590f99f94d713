#!/usr/bin/env bash
# Runs a command (the test suite) with Redis answering at REDIS_URL: the one already there, or
# a local redis-server started for the command and stopped after it. Exits with the command's
# status.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
mkdir -p "$LOCAL"

started=""
if ! redis_answers; then
  ensure_redis redis-test
  started=1
fi
status=0
"$@" || status=$?
if [[ -n "$started" ]]; then stop_pid redis-test redis-server; fi
exit "$status"
