#!/usr/bin/env bash
# Measures a proposed change without touching embedder/ or authz/: copies embedder/, authz/ and
# openapi/ to .local/bench/variants/NAME, applies bench/tuning/NAME.patch there, and runs the
# bench against that copy (authz capacity is then measured on the copy's authz in the bench
# stack). Results go to bench/results/variant-NAME.json.
#   bash bench/variant.sh NAME [bench/main.ts options, e.g. --parts efficiency --models .local/models/test]
#   bash bench/variant.sh baseline ...   (the unpatched embedder, same procedure, for comparison)
#   bash bench/variant.sh NAME --copy-only  (only the copy, for bench/batch-compare.ts and other tools)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
name="${1:?usage: bash bench/variant.sh NAME [options]}"; shift
dir=".local/bench/variants/$name"
rm -rf "$dir" && mkdir -p "$dir"
cp -r embedder authz openapi contract "$dir/"
ln -s "$PWD/node_modules" "$dir/node_modules"  # authz resolves its protos from the repository root
if [[ "$name" != "baseline" ]]; then
  patch -s -p1 -d "$dir" < "bench/tuning/$name.patch"
fi
if [[ "${1:-}" == "--copy-only" ]]; then echo "$dir/embedder/src/main.ts"; exit 0; fi
exec node --import tsx bench/main.ts --embedder-entry "$dir/embedder/src/main.ts" --authz-entry "$dir/authz/src/main.ts" \
  --label "variant-$name" --tls .local/bench/tls \
  --envoy "$(bash scripts/install-envoy.sh)" "$@"
