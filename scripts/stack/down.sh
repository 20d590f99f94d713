#!/usr/bin/env bash
# `make down`: drains and stops exactly what `make up` started (its supervisor stops Envoy
# first, so no request reaches a stopping service). A REDIS_URL of your own is left alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
exec node --import tsx scripts/stack/cli.ts down
