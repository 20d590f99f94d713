#!/usr/bin/env bash
# Tuning comparison: the per-request costs (part `cost`: whole-path CPU at 500 req/s, added p50
# at 100 req/s) of the unpatched tree and of each variant, one after another, ROUNDS times in
# alternation so a change in the machine's load hits every variant alike. A variant is a patch
# name (bench/tuning/NAME.patch) or strip:PARTS (Envoy without those filters, bench/envoy-strip.ts).
#   bash bench/tuning/compare.sh ROUNDS VARIANT...   e.g. 2 autopipelining strip:access-log
# Prints one line per run; every run's table is in .local/bench/compare/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rounds="${1:?usage: bash bench/tuning/compare.sh ROUNDS VARIANT...}"; shift
out=.local/bench/compare; mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for variant in baseline "$@"; do
    log="$out/$variant-$round.txt"
    case "$variant" in
      strip:*) bash bench/variant.sh baseline --parts cost --envoy-strip "${variant#strip:}" --label "variant-${variant/:/-}" >"$log" 2>&1 ;;
      *) bash bench/variant.sh "$variant" --parts cost >"$log" 2>&1 ;;
    esac
    printf '%s round %s: %s\n' "$variant" "$round" \
      "$(grep -E 'path_cost_cpu|path_cost_added|load_average_1m_gateway' "$log" | tr -s ' ' | tr '\n' ' ')"
  done
done
