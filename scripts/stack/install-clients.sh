#!/usr/bin/env bash
# Installs the clients whose README snippets `make test-clients` runs, pinned, apart from the
# project's own dependencies: the Python ones into .local/clients-venv (test/clients/python/
# requirements.txt), litellm into .venv-litellm (install-litellm.sh: it needs openai<3), the Node
# ones into .local/clients-npm (test/clients/npm/package.json and its lock). About 600 MB
# (chromadb, lancedb and their onnxruntime/pyarrow), so `make install` does not pay for it.
# Idempotent: a second run with nothing changed installs nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mapfile -t pins < <(grep -E '^[a-zA-Z0-9_.-]+==' "$ROOT/test/clients/python/requirements.txt")
install_pins "$ROOT/.local/clients-venv" "${pins[@]}"
bash "$ROOT/scripts/stack/install-litellm.sh"

npm_dir="$ROOT/.local/clients-npm"
mkdir -p "$npm_dir"
if ! cmp -s "$ROOT/test/clients/npm/package-lock.json" "$npm_dir/package-lock.json" || [[ ! -d "$npm_dir/node_modules" ]]; then
  say "installing the Node clients into $npm_dir"
  cp "$ROOT/test/clients/npm/package.json" "$ROOT/test/clients/npm/package-lock.json" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-fund --no-audit --loglevel=error)
fi
