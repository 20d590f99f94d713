#!/usr/bin/env bash
# `make bench`: measures the gateway against its baselines in one run (see BENCHMARKS.md).
#   bash bench/run.sh [all|efficiency|gateway|authz|batch|quant|wait] [--quick]
#     all         (default) efficiency, gateway overhead + memory, authz capacity, batch (~13 min)
#     efficiency  embedder vs raw onnxruntime-node vs transformers.js, default + generated model
#     gateway     direct vs Envoy + authz over TLS: highest rate with p99 < 50 ms, whole-path CPU per
#                 request at 500 req/s, added p50 at 100 req/s; the same for f5cf755 (before admission)
#     authz       Check calls/s and p99 with Redis
#     batch       the Batch API on the default model: throughput vs raw onnxruntime-node, online p99
#                 alone and during a batch, fairness between two organizations' batches
#     quant       int8 dynamic quantisation of the default model: cosine vs fp32 and speed
#     wait        (not in all) the cost of the durable 200 (issue 28): the gateway path with a Redis
#                 replica and SETTLEMENT_MIN_REPLICAS=1 (WAIT 1 500 after each usage record) against
#                 a standalone Redis without WAIT, alternated 4 rounds: whole-path and Redis CPU per
#                 request at 500 req/s, p50/p99 at 100 req/s and the added p50 (~3 min; its own
#                 three redis-servers, whatever BENCH_REDIS_URL says)
#     --quick     short measurements (a smoke run, not figures to quote)
# Prints a table and writes bench/results/latest.json. Expects `make up` to have installed the
# stack's pieces (it is not used: the bench starts its own processes, its own redis-server
# included, on free loopback ports and stops them, whatever happens; BENCH_REDIS_URL=redis://…
# uses another Redis instead, under a random key prefix). Installs only what is missing: hey, the
# generated test model, a bench TLS certificate, and (for quant) onnxruntime + onnx in the venv.
# The older gateway is `git archive`d into .local/bench/baseline (BENCH_BASELINE=none skips it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# onnxruntime-node's built-in telemetry stays off in every process the bench starts (see
# embedder/src/model/runner.ts).
export ORT_DISABLE_TELEMETRY=1

part="all"; quick=()
for arg in "$@"; do
  case "$arg" in
    all|efficiency|gateway|authz|batch|quant|wait) part="$arg" ;;
    --quick) quick=(--quick) ;;
    *) echo "usage: bash bench/run.sh [all|efficiency|gateway|authz|batch|quant|wait] [--quick]" >&2; exit 2 ;;
  esac
done
say() { echo "bench: $*" >&2; }
bench_redis="${BENCH_REDIS_URL:-own}"
mkdir -p .local/bench bench/results

if ! command -v hey >/dev/null 2>&1; then
  say "installing hey (Debian package) for the HTTP load"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hey >/dev/null
fi
[[ -s .local/models/default/model.onnx ]] || bash scripts/install-model.sh
[[ -s .local/models/test/model.onnx ]] || npx --no-install tsx scripts/generate-test-model.ts

if [[ "$part" == "quant" ]]; then
  py=.venv/bin/python
  [[ -x "$py" ]] || python3 -m venv .venv
  "$py" -c 'import onnxruntime, onnx' 2>/dev/null \
    || "$py" -m pip install --quiet --disable-pip-version-check onnxruntime onnx
  for flags in "" --per-channel; do
    # shellcheck disable=SC2086 # an empty $flags must vanish
    "$py" bench/quantize.py .local/models/default .local/bench/quant $flags >/dev/null 2>.local/bench/quantize.log \
      || { cat .local/bench/quantize.log >&2; exit 1; }
  done
  mkdir -p bench/results
  : > bench/results/quant.jsonl
  for candidate in int8 int8-per-channel; do
    node --import tsx bench/quant-compare.ts --reference .local/bench/quant/fp32 \
      --candidate ".local/bench/quant/$candidate" --label "dynamic $candidate vs fp32" | tee -a bench/results/quant.jsonl
  done
  node --import tsx bench/quant-compare.ts --reference .local/bench/quant/fp32 --candidate .local/models/default \
    --label "shipped (int8 weights, fp32 compute) vs fp32" | tee -a bench/results/quant.jsonl
  exit 0
fi

if [[ "$part" == "all" || "$part" == "gateway" || "$part" == "authz" || "$part" == "batch" || "$part" == "wait" ]]; then
  if [[ "$bench_redis" == own || "$part" == "wait" ]]; then
    command -v redis-server >/dev/null 2>&1 || { say "redis-server is not installed (make up installs it)"; exit 1; }
  else
    redis-cli -u "$bench_redis" ping >/dev/null 2>&1 || { say "no Redis answers at $bench_redis"; exit 1; }
  fi
  ENVOY="$(bash scripts/install-envoy.sh)"
  bash scripts/certs.sh .local/bench/tls >/dev/null 2>&1
fi
baseline_args=()
# The gateway before token admission (the issue's "before"), from its own commit, started by its
# own bench/stack.ts with this tree's node_modules and models.
baseline_commit="${BENCH_BASELINE:-f5cf755}"
if [[ ("$part" == "all" || "$part" == "gateway") && "$baseline_commit" != none ]] && git cat-file -e "$baseline_commit^{commit}" 2>/dev/null; then
  tree=.local/bench/baseline
  if [[ "$(cat "$tree/.commit" 2>/dev/null)" != "$baseline_commit" ]]; then
    rm -rf "$tree" && mkdir -p "$tree/.local"
    git archive "$baseline_commit" | tar -x -C "$tree"
    ln -s "$PWD/node_modules" "$tree/node_modules"
    ln -s "$PWD/.local/models" "$tree/.local/models"
    echo "$baseline_commit" > "$tree/.commit"
  fi
  baseline_args=(--baseline-tree "$tree")
fi
parts="efficiency,gateway,authz,batch"; [[ "$part" == "all" ]] || parts="$part"
exec node --import tsx bench/main.ts --parts "$parts" ${quick[@]+"${quick[@]}"} --command "bash bench/run.sh${*:+ $*}" \
  --envoy "${ENVOY:-.venv/bin/envoy}" --tls .local/bench/tls --redis-url "$bench_redis" ${baseline_args[@]+"${baseline_args[@]}"}
