#!/usr/bin/env bash
# `make down`: stops exactly what `make up` started (by pid file, checked against the command
# line), Envoy first so no request reaches a stopping service. A Redis that was already
# running before `make up` is left alone.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stop_pid envoy "$LOCAL/envoy.yaml"
stop_pid embedder embedder/src/main.ts
stop_pid authz authz/src/main.ts
stop_pid redis redis-server
