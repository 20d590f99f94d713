#!/usr/bin/env bash
# Whole gateways of older commits against this tree, by one procedure (bench/baseline.ts: each
# tree started by its own bench/stack.ts; CPU per request at 500 req/s with Redis counted, after
# 30 s at that rate (WARM_UP=3 for the shorter warm-up of earlier rounds), highest
# rate with p99 < 50 ms), alternated ROUNDS times so a change in the machine's load hits all alike.
#   bash bench/tuning/compare-trees.sh ROUNDS COMMIT...   e.g. 2 ba32448 f5cf755
# CPU_RATE=250 measures CPU per request at 250 req/s instead of 500 (on a machine that 500
# saturates, per-request CPU grows with the queue and swings run to run); RATES=none skips the
# highest-rate ladder (RATES=1000,1500 sets it).
# Prints one JSON line per run; each tree lies in .local/bench/tree-COMMIT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds="${1:?usage: bash bench/tuning/compare-trees.sh ROUNDS COMMIT...}"; shift
envoy="$(bash scripts/install-envoy.sh)"
bash scripts/certs.sh .local/bench/tls >/dev/null 2>&1
trees=(.)
for commit in "$@"; do
  tree=".local/bench/tree-$commit"
  if [[ ! -f "$tree/.commit" ]]; then
    rm -rf "$tree" && mkdir -p "$tree/.local"
    git archive "$commit" | tar -x -C "$tree"
    ln -s "$PWD/node_modules" "$tree/node_modules"
    ln -s "$PWD/.local/models" "$tree/.local/models"
    echo "$commit" > "$tree/.commit"
  fi
  trees+=("$tree")
done
# One redis-server for every run, as bench/redis-server.ts starts it; stopped on exit.
port="$(node --import tsx -e "import('./scripts/free-port.ts').then(async (m) => console.log(await m.freePort()))")"
dir="$PWD/.local/bench/redis-trees"; rm -rf "$dir"; mkdir -p "$dir"
redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --appendonly yes --appendfsync everysec --save '' \
  --daemonize no --protected-mode no >"$dir/redis.log" 2>&1 &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null || true' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.2; done
for round in $(seq 1 "$rounds"); do
  for tree in "${trees[@]}"; do
    result="$(cd "$tree" && node --import tsx "$OLDPWD/bench/baseline.ts" --envoy "$envoy" --tls "$OLDPWD/.local/bench/tls" \
      --redis-url "redis://127.0.0.1:$port" --redis-pid "$redis_pid" --rates "${RATES:-1000,1500,2000}" --cpu-rate "${CPU_RATE:-500}" --warm-up "${WARM_UP:-30}" | tail -1)"
    echo "{\"tree\":\"$tree\",\"round\":$round,\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"result\":$result}"
  done
done
