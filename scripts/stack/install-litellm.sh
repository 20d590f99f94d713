#!/usr/bin/env bash
# Installs litellm (pinned) into its own venv, .venv-litellm, for the check that litellm's
# OpenAI-compatible path classifies the gateway's errors right (make test-litellm). Its own
# venv because litellm 1.106 requires openai<3 while the project venv pins openai 3.54, and
# because it is heavy (about 310 MB with boto3, tokenizers, aiohttp …; about a minute), so
# `make install` does not pay for it. Idempotent.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

install_pins "$ROOT/.venv-litellm" "litellm==1.106.2" "openai==2.54.0"
