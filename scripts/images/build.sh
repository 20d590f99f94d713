#!/usr/bin/env bash
# Builds the project's four images with podman, as a platform team would with docker, tagged
# localhost/ctg-{authz,embedder,gateway,admin}:<image_tag> (this checkout's own tag, lib.sh; plus the
# bases they need, see bases.sh). Layers
# stay in podman's storage, so a rebuild after a source change redoes only the COPY layers.
# Prints each image's build time, size and digest. Run as root. CTG_REBUILD_BASES=1 (bases.sh)
# and CTG_NO_CACHE=1 rebuild everything, as a fresh machine would.
set -euo pipefail
cd "$(dirname "$0")/../.."

bash scripts/images/podman-setup.sh
bash scripts/images/bases.sh
[[ -s .local/models/default/model.onnx ]] || bash scripts/install-model.sh >/dev/null

# shellcheck source=scripts/images/lib.sh
source scripts/images/lib.sh
# Each build FROM its base by digest: the image podman has for the Containerfile's tag (the
# registry's when one answered, else the stand-in bases.sh built), so what was tested is known.
NODE_IMAGE="$(pinned "$(arg_default deploy/authz/Containerfile NODE_IMAGE)")"
ENVOY_IMAGE="$(pinned "$(arg_default deploy/gateway/Containerfile ENVOY_IMAGE)")"
log "bases: $NODE_IMAGE, $ENVOY_IMAGE"
TAG="$(image_tag)"

mkdir -p .local/images
# build NAME CONTAINERFILE [TARGET]
build() {
  local name="$1" file="$2" target="${3:-}" start=$SECONDS
  local args=(build --pull=never --network host --layers -f "$file" --ignorefile "${file}.dockerignore" -t "localhost/ctg-$name:$TAG"
    --build-arg "NODE_IMAGE=$NODE_IMAGE" --build-arg "ENVOY_IMAGE=$ENVOY_IMAGE")
  [[ -n "$target" ]] && args+=(--target "$target")
  # CTG_NO_CACHE=1: every layer built again, as on a fresh machine (to time a first build).
  [[ "${CTG_NO_CACHE:-}" == 1 ]] && args+=(--no-cache)
  if ! podman "${args[@]}" . >".local/images/$name.log" 2>&1; then
    tail -n 30 ".local/images/$name.log" >&2
    echo "images: building $name failed (.local/images/$name.log)" >&2
    return 1
  fi
  local size digest
  size="$(podman image inspect --format '{{.Size}}' "localhost/ctg-$name:$TAG")"
  digest="$(podman image inspect --format '{{.Digest}}' "localhost/ctg-$name:$TAG")"
  log "$name built in $((SECONDS - start)) s, $((size / 1000000)) MB, localhost/ctg-$name:$TAG@$digest"
}

build gateway deploy/gateway/Containerfile
build authz deploy/authz/Containerfile
build embedder deploy/embedder/Containerfile embedder-with-model
build admin deploy/admin/Containerfile
