# Sourced by the image scripts (and test/house/pipes.test.ts): their log line and version check.
# shellcheck shell=bash

log() { echo "images: $*" >&2; }

# check_version WHAT WANT COMMAND...: COMMAND's whole output first, then the match. Piping it
# into `grep -q` instead lets grep exit at the first matching line; a producer that writes in
# several writes (Envoy's --version writes three) then dies of SIGPIPE (141), which pipefail
# turns into a failure that looks like a wrong version. Each failure names its own cause.
check_version() {
  local what="$1" want="$2" out status=0
  shift 2
  out="$("$@" 2>&1)" || status=$?
  if ((status != 0)); then
    log "$what: \`$*\` failed (exit $status): $(tail -n 5 <<<"$out")"
    return 1
  fi
  [[ "$out" == *"$want"* ]] || { log "$what is not $want: \`$*\` printed: $(tail -n 5 <<<"$out")"; return 1; }
}

# arg_default CONTAINERFILE NAME: the default of `ARG NAME=…` (the base image a build uses
# unless told otherwise).
arg_default() {
  local value
  value="$(sed -n "s/^ARG $2=//p" "$1")"
  [[ -n "$value" ]] || { log "$1 has no ARG $2=<image>"; return 1; }
  echo "$value"
}

# base_tag REF: REF without its @sha256:… digest, if it has one (a stand-in is tagged by tag).
base_tag() { echo "${1%@sha256:*}"; }

# pinned REF: REF by tag and the digest of the image podman has for it: what a build pins to.
pinned() {
  local ref="$1" digest
  if [[ "$ref" == *@sha256:* ]] && podman image exists "$ref"; then echo "$ref"; return 0; fi
  digest="$(podman image inspect --format '{{.Digest}}' "$(base_tag "$ref")")" || return 1
  echo "$(base_tag "$ref")@$digest"
}

# image_tag: the tag of this checkout's test images (CTG_IMAGE_TAG, else test- and a hash of the
# checkout's path; scripts/images/image-tag.ts computes the same): podman's storage is the
# machine's, and two checkouts building at once must not overwrite each other's images.
image_tag() {
  local root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
  echo "${CTG_IMAGE_TAG:-test-$(printf '%s' "$root" | sha256sum | cut -c1-8)}"
}
