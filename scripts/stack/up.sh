#!/usr/bin/env bash
# `make up`: brings the local gateway up from a fresh clone, idempotently. Installs what is
# missing (npm dependencies, Envoy, the default model, certificates, the key-hash secret),
# uses or starts Redis, starts authz, the embedder and Envoy in the background (logs in
# .local/logs/, pid files in .local/), waits until the gateway answers, and says how to use it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
mkdir -p "$LOCAL" "$LOG_DIR"
export_stack_env

# 1. Installs (each step is a no-op when its result is already there; the test of this script
#    skips them, since `make test` has installed everything and must not run npm ci mid-run).
[[ -n "${STACK_SKIP_INSTALL:-}" ]] || bash scripts/stack/install.sh
ENVOY="$(bash scripts/install-envoy.sh)"
bash scripts/certs.sh "$TLS_DIR"
if [[ ! -s "$KEY_HASH_SECRET_FILE" ]]; then
  # authz and its admin CLI hash keys with this secret; their default path points here.
  say "creating the key-hash secret $KEY_HASH_SECRET_FILE"
  (umask 077 && openssl rand -hex 32 > "$KEY_HASH_SECRET_FILE")
fi
MODEL_ID="$(model_id)" || die "cannot read the model id from $MODEL_DIR/manifest.json (set MODEL_ID or MODEL_DIR)"
export MODEL_ID

# 2. Redis: the one at REDIS_URL, or a local redis-server we start (and `make down` stops).
ensure_redis redis

# 3. Services, each started only when not already running.
TSX=(node --import tsx)
running_pid authz authz/src/main.ts >/dev/null || start_detached authz "${TSX[@]}" authz/src/main.ts
running_pid embedder embedder/src/main.ts >/dev/null || start_detached embedder "${TSX[@]}" embedder/src/main.ts
if ! running_pid envoy "$LOCAL/envoy.yaml" >/dev/null; then
  npx --no-install tsx envoy/render.ts "$LOCAL/envoy.yaml"
  validation="$("$ENVOY" --mode validate -c "$LOCAL/envoy.yaml" --disable-hot-restart 2>&1)" \
    || die "the rendered Envoy config $LOCAL/envoy.yaml does not validate:
$validation"
  start_detached envoy "$ENVOY" -c "$LOCAL/envoy.yaml" --disable-hot-restart --log-level warn \
    --file-flush-interval-msec 1000
fi

# 4. Ready means: the embedder has its model, and /health answers through Envoy over TLS.
alive() { running_pid "$1" "$2" >/dev/null || die "$1 exited; see $LOG_DIR/$1.log"; }
embedder_ready() { alive embedder embedder/src/main.ts; curl -fsS "http://$EMBEDDER_HOST:$EMBEDDER_PORT/ready"; }
gateway_healthy() {
  alive envoy "$LOCAL/envoy.yaml"
  curl -fsS --cacert "$TLS_DIR/ca.pem" --resolve "localhost:$GATEWAY_PORT:127.0.0.1" \
    "https://localhost:$GATEWAY_PORT/health"
}
authz_listening() { alive authz authz/src/main.ts; with_timeout 1 bash -c "exec 3<>/dev/tcp/$AUTHZ_HOST/$AUTHZ_PORT"; }
wait_until "authz on $AUTHZ_HOST:$AUTHZ_PORT" 60 authz_listening
wait_until "the embedder to load its model" 300 embedder_ready
wait_until "https://localhost:$GATEWAY_PORT/health through Envoy" 60 gateway_healthy

cat <<MSG

The gateway is up.
  Base URL:  https://localhost:$GATEWAY_PORT   (OpenAI SDKs: baseURL https://localhost:$GATEWAY_PORT/v1)
  CA:        $TLS_DIR/ca.pem
  Model:     $MODEL_ID
  Logs:      $LOG_DIR/   (make logs)      Stop: make down

Create an organization and an API key:
  npm run admin -- org create acme --models $MODEL_ID
  npm run admin -- key create --org acme --json

Then:
  curl --cacert $TLS_DIR/ca.pem https://localhost:$GATEWAY_PORT/v1/embeddings \\
    -H "Authorization: Bearer \$KEY" -H 'Content-Type: application/json' \\
    -d '{"model": "$MODEL_ID", "input": "Patient denies chest pain."}'
MSG
