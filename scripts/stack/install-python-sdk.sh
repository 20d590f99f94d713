#!/usr/bin/env bash
# Installs the Python tools the test suite runs into the project venv, pinned: the official
# OpenAI Python SDK (the end-to-end test that calls the gateway from Python) and schemathesis
# (the property-based contract test against openapi/openapi.yaml). Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PINS=("openai==3.54.0" "schemathesis==4.32.5")
VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then python3 -m venv "$VENV"; fi
for pin in "${PINS[@]}"; do
  name="${pin%%==*}" version="${pin##*==}"
  if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$name') != '$version')" 2>/dev/null; then
    say "installing $pin into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$pin"
  fi
done
