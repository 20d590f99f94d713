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
