#!/usr/bin/env bash
# Makes this machine able to build and run the project's images with Debian's podman, as root:
# installs podman, runc and debootstrap when missing, and writes the engine settings that work
# on these machines (runc, since crun fails with "cgroups in hybrid mode not supported";
# cgroupfs; file events and k8s-file logs, with no systemd/journald; explicit ulimits, since
# asking for the host's own fails with EPERM). Idempotent: a file it wrote is rewritten, a file
# someone else wrote is left alone (and reported).
set -euo pipefail

[[ $EUID -eq 0 ]] || { echo "podman-setup: run as root (rootful podman)" >&2; exit 1; }

missing=()
for tool in podman runc debootstrap; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
if ((${#missing[@]})); then
  echo "podman-setup: installing ${missing[*]}" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

MARK='# Written by scripts/images/podman-setup.sh (the project rewrites this file; remove this line to keep your own).'

# write_config PATH: stdin becomes PATH unless PATH exists without our mark.
write_config() {
  local path="$1" body first=''
  body="$(cat)"
  if [[ -e "$path" ]]; then
    IFS= read -r first <"$path" || true # a file without a newline still gives its line
    if [[ "$first" != "$MARK" ]]; then
      echo "podman-setup: $path is not ours, left as it is" >&2
      return 0
    fi
  fi
  mkdir -p "$(dirname "$path")"
  printf '%s\n%s\n' "$MARK" "$body" >"$path.tmp" && mv "$path.tmp" "$path"
}

write_config /etc/containers/containers.conf <<'CONF'
[containers]
log_driver = "k8s-file"
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF

write_config /etc/containers/storage.conf <<'CONF'
[storage]
driver = "overlay"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
