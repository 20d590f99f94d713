#!/usr/bin/env bash
# Installs the Python tools the test suite runs into the project venv, pinned: the official
# OpenAI Python SDK (the end-to-end test that calls the gateway from Python) and schemathesis
# (the property-based contract test against openapi/openapi.yaml). Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

install_pins "$ROOT/.venv" "openai==3.54.0" "schemathesis==4.32.5"
