#!/usr/bin/env bash
# Installs the official OpenAI Python SDK (pinned) into the project venv for the end-to-end
# test that calls the gateway from Python. Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

OPENAI_PY_VERSION="3.54.0"
VENV="$ROOT/.venv"
if [[ ! -x "$VENV/bin/python" ]]; then python3 -m venv "$VENV"; fi
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('openai') != '$OPENAI_PY_VERSION')" 2>/dev/null; then
  say "installing openai==$OPENAI_PY_VERSION into $VENV"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "openai==$OPENAI_PY_VERSION"
fi
