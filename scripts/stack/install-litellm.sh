#!/usr/bin/env bash
# Installs litellm (pinned) into its own venv, .venv-litellm, for the check that litellm's
# OpenAI-compatible path classifies the gateway's errors right (make test-litellm). Its own
# venv because litellm 1.106 requires openai<3 while the project venv pins openai 3.54, and
# because it is heavy (about 310 MB with boto3, tokenizers, aiohttp …; about a minute), so
# `make install` does not pay for it. Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

PINS=("litellm==1.106.2" "openai==2.54.0")
VENV="$ROOT/.venv-litellm"
if [[ ! -x "$VENV/bin/python" ]]; then python3 -m venv "$VENV"; fi
for pin in "${PINS[@]}"; do
  name="${pin%%==*}" version="${pin##*==}"
  if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$name') != '$version')" 2>/dev/null; then
    say "installing ${PINS[*]} into $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${PINS[@]}"
    break
  fi
done
