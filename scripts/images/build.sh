#!/usr/bin/env bash
# Builds the project's three images with podman, as a platform team would with docker, tagged
# localhost/ctg-{authz,embedder,gateway}:test (plus the bases they need, see bases.sh). Layers
# stay in podman's storage, so a rebuild after a source change redoes only the COPY layers.
# Prints each image's build time and size. Run as root.
set -euo pipefail
cd "$(dirname "$0")/../.."

bash scripts/images/podman-setup.sh
bash scripts/images/bases.sh
[[ -s .local/models/default/model.onnx ]] || bash scripts/install-model.sh >/dev/null

mkdir -p .local/images
# build NAME CONTAINERFILE [TARGET]
build() {
  local name="$1" file="$2" target="${3:-}" start=$SECONDS
  local args=(build --pull=never --network host --layers -f "$file" --ignorefile "${file}.dockerignore" -t "localhost/ctg-$name:test")
  [[ -n "$target" ]] && args+=(--target "$target")
  if ! podman "${args[@]}" . >".local/images/$name.log" 2>&1; then
    tail -n 30 ".local/images/$name.log" >&2
    echo "images: building $name failed (.local/images/$name.log)" >&2
    return 1
  fi
  echo "images: $name built in $((SECONDS - start)) s, $(podman image inspect --format '{{.Size}}' "localhost/ctg-$name:test" | awk '{printf "%d MB", $1 / 1e6}')" >&2
}

build gateway deploy/gateway/Containerfile
build authz deploy/authz/Containerfile
build embedder deploy/embedder/Containerfile embedder-with-model
