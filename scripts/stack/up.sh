#!/usr/bin/env bash
# `make up`: brings the local gateway up from a fresh clone, idempotently. Installs what is
# missing (npm dependencies, Envoy, the default model, certificates, the key-hash secret), then
# hands over to the stack module (scripts/stack/cli.ts): a supervisor in the background runs
# Redis (its own, persistent, unless REDIS_URL is set), authz, the embedder and Envoy, restarts
# whatever dies, and `make up` returns once the gateway answers. Logs in .local/logs/.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
mkdir -p "$LOCAL" "$LOG_DIR"

# Each step is a no-op when its result is already there; the test of this script skips the
# installs, since `make test` has installed everything and must not run npm ci mid-run.
[[ -n "${STACK_SKIP_INSTALL:-}" ]] || bash scripts/stack/install.sh
ENVOY_BIN="$(bash scripts/install-envoy.sh)"
export ENVOY_BIN
bash scripts/certs.sh "$TLS_DIR"
# authz and admin (CLI, console) hash keys with the first; authz signs each request's grant with the
# second and the embedder verifies it; the third is the embedder's Redis password.
for secret in "$KEY_HASH_SECRET_FILE" "$GRANT_SECRET_FILE" "$LOCAL/redis-embedder-password"; do
  if [[ ! -s "$secret" ]]; then
    say "creating the secret $secret"
    (umask 077 && openssl rand -hex 32 > "$secret")
  fi
done
if [[ -z "${REDIS_URL:-}" ]] && ! command -v redis-server >/dev/null 2>&1; then
  die "redis-server is not installed; the stack runs its own (persistent) Redis.
  Install it (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis),
  or point REDIS_URL at a Redis of yours (one that persists: see docs/operating.md, Persistence)."
fi

exec node --import tsx scripts/stack/cli.ts up
