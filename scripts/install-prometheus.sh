#!/usr/bin/env bash
# Prints the directory holding `prometheus` and `promtool`, installing Debian's prometheus
# package when either is missing. Order: $PROMETHEUS_BIN_DIR if set, both on PATH, else
# `apt-get install prometheus` (root, or sudo without a password). Idempotent; all chatter goes
# to stderr so that `BIN=$(bash scripts/install-prometheus.sh)` works.
#
# The package's own service is never started here: policy-rc.d refuses it during the install,
# so the only Prometheus that runs is the one the tests or the operator start with our config.
set -euo pipefail

have_both() { [[ -x "$1/prometheus" && -x "$1/promtool" ]]; }

if [[ -n "${PROMETHEUS_BIN_DIR:-}" ]]; then
  have_both "$PROMETHEUS_BIN_DIR" || { echo "PROMETHEUS_BIN_DIR=$PROMETHEUS_BIN_DIR lacks prometheus or promtool" >&2; exit 1; }
  echo "$PROMETHEUS_BIN_DIR"; exit 0
fi

on_path() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }
if on_path; then dirname "$(command -v promtool)"; exit 0; fi

SUDO=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null || {
    echo "prometheus and promtool are missing; install Debian's package: sudo apt-get install prometheus" >&2; exit 1; }
  SUDO=(sudo -n)
fi
command -v apt-get >/dev/null 2>&1 || {
  echo "prometheus and promtool are missing and apt-get is not available; install Prometheus 2.x and put both on PATH" >&2; exit 1; }

echo "installing Debian's prometheus package (apt-get)" >&2
policy="$(mktemp -d)"
trap 'rm -rf "$policy"' EXIT
# A policy-rc.d that answers 101 ("action forbidden") keeps the package's service from starting.
printf '#!/bin/sh\nexit 101\n' > "$policy/policy-rc.d"
chmod +x "$policy/policy-rc.d"
"${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive POLICYRCD="$policy/policy-rc.d" \
  apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends prometheus >&2

on_path || { echo "apt-get installed prometheus, but prometheus/promtool are not on PATH" >&2; exit 1; }
dirname "$(command -v promtool)"
