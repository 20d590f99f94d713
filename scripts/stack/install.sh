#!/usr/bin/env bash
# Installs what the stack and the tests need and is missing, idempotently: npm dependencies
# (npm ci when node_modules is missing or older than package-lock.json), Envoy and the default
# model. `--test` adds the generated test model, the Python tools the tests call (OpenAI SDK,
# schemathesis) and the deploy linters and validators (hadolint, kubectl, kubernetes-validate).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
cd "$ROOT"
mkdir -p "$LOCAL"

if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  say "installing npm dependencies (npm ci)"
  # onnxruntime-node's postinstall would download CUDA libraries from outside the npm registry
  # (this machine and CI reach only the registry; we run on CPU). ONNXRUNTIME_NODE_INSTALL is
  # the switch its installer documents; as a project .npmrc key, every npm command warned
  # `Unknown project config "onnxruntime-node-install"`.
  ONNXRUNTIME_NODE_INSTALL=skip npm ci
fi

bash scripts/install-envoy.sh >/dev/null
bash scripts/install-model.sh

if [[ "${1:-}" == "--test" ]]; then
  if [[ ! -s .local/models/test/model.onnx || ! -s .local/models/test/manifest.json ]]; then
    say "generating the test model"
    npx --no-install tsx scripts/generate-test-model.ts
  fi
  bash scripts/stack/install-python-sdk.sh
  # hadolint, kubectl (kustomize) and kubernetes-validate for test/deploy.
  bash scripts/install-deploy-tools.sh
  # Debian's prometheus and promtool for test/observability (apt when missing).
  bash scripts/install-prometheus.sh >/dev/null
fi
