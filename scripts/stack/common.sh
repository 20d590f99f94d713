# Shared by scripts/stack/*.sh: paths, the key-hash secret and TLS locations make up installs,
# and the Redis that with-redis.sh provides to the test suite. Starting and supervising the
# stack is the TypeScript stack module's (scripts/stack/cli.ts and its neighbours).
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Where the stack keeps its state (logs, pid files, TLS, secret, rendered config). Only the
# test of these scripts moves it; models stay under the repository's .local/models.
LOCAL="${STACK_DIR:-$ROOT/.local}"
LOG_DIR="$LOCAL/logs"
TLS_DIR="$LOCAL/tls"

# The test suite's Redis (with-redis.sh); make up runs its own unless REDIS_URL is set (settings.ts).
# The default is DEFAULT_REDIS_URL of contract/redis-target.ts (test/contract/env.unit.test.ts checks).
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"
KEY_HASH_SECRET_FILE="${KEY_HASH_SECRET_FILE:-$LOCAL/key-hash-secret}"
GRANT_SECRET_FILE="${GRANT_SECRET_FILE:-$LOCAL/grant-secret}"

say() { echo "stack: $*" >&2; }

# install_pins VENV PIN...: creates the venv if missing and, when any pin's version differs from
# what is installed, installs them all together (so their requirements are resolved as one).
install_pins() {
  local venv="$1" pin name version; shift
  [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
  for pin in "$@"; do
    name="${pin%%==*}" version="${pin##*==}"
    if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$name') != '$version')" 2>/dev/null; then
      say "installing $* into $venv"
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
      return
    fi
  done
}
# `timeout` where coreutils has it (not on stock macOS, where local probes return at once anyway).
with_timeout() { local s="$1"; shift; if command -v timeout >/dev/null 2>&1; then timeout "$s" "$@"; else "$@"; fi; }
die() { echo "stack: $*" >&2; exit 1; }

pid_file() { echo "$LOCAL/$1.pid"; }

# A pid file counts only while its process is alive and still runs what we started (the
# marker in its command line), so a recycled pid is never taken for ours.
running_pid() {
  local name="$1" marker="$2" file pid
  file="$(pid_file "$name")"
  [[ -s "$file" ]] || return 1
  pid="$(cat "$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null || return 1
  [[ "$(ps -ww -o args= -p "$pid" 2>/dev/null)" == *"$marker"* ]] || return 1
  echo "$pid"
}

# Starts "$@" in its own session, detached from the terminal, output appended to the log.
start_detached() {
  local name="$1"; shift
  mkdir -p "$LOG_DIR"
  # Without job control a background job is no group leader, so setsid execs in place and
  # $! is the service's own pid.
  if command -v setsid >/dev/null 2>&1; then
    setsid "$@" >>"$LOG_DIR/$name.log" 2>&1 < /dev/null &
  else
    nohup "$@" >>"$LOG_DIR/$name.log" 2>&1 < /dev/null &   # macOS has no setsid
  fi
  echo $! > "$(pid_file "$name")"
  say "started $name (pid $!), log $LOG_DIR/$name.log"
}

stop_pid() {
  local name="$1" marker="$2" pid i
  if pid="$(running_pid "$name" "$marker")"; then
    kill -TERM "$pid" 2>/dev/null || true
    for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then say "$name did not stop in 10 s; killing"; kill -KILL "$pid" 2>/dev/null || true; fi
    say "stopped $name (pid $pid)"
  fi
  rm -f "$(pid_file "$name")"
}

# host and port of REDIS_URL (redis[s]://[user:pass@]host[:port][/db])
redis_host() { local hp="${REDIS_URL#*://}"; hp="${hp##*@}"; hp="${hp%%/*}"; echo "${hp%%:*}"; }
redis_port() { local hp="${REDIS_URL#*://}"; hp="${hp##*@}"; hp="${hp%%/*}"; [[ "$hp" == *:* ]] && echo "${hp##*:}" || echo 6379; }

# True when something at REDIS_URL answers a PING (an error reply such as NOAUTH counts: it is Redis).
redis_answers() {
  local reply
  reply="$(with_timeout 2 bash -c "exec 3<>/dev/tcp/$(redis_host)/$(redis_port) && printf 'PING\r\n' >&3 && head -c 1 <&3" 2>/dev/null)" || return 1
  [[ "$reply" == "+" || "$reply" == "-" ]]
}

# Polls a command until it succeeds; fails after $2 seconds naming what it waited for.
wait_until() {
  local what="$1" seconds="$2" i; shift 2
  for i in $(seq 1 $((seconds * 5))); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  die "timed out after ${seconds}s waiting for $what (logs in $LOG_DIR)"
}

# Makes Redis answer at REDIS_URL: the one already there, or a local redis-server started under
# pid file $1 (so whoever started it can stop exactly it). Fails with how to get one.
ensure_redis() {
  local name="$1"
  redis_answers && return 0
  if running_pid "$name" redis-server >/dev/null; then
    wait_until "Redis at $REDIS_URL" 10 redis_answers; return 0
  fi
  command -v redis-server >/dev/null 2>&1 || die "no Redis answers at $REDIS_URL and redis-server is not installed.
  Install one (Debian/Ubuntu: sudo apt-get install redis-server; macOS: brew install redis),
  run one in a container (docker run -d -p 6379:6379 redis:7), or point REDIS_URL at yours."
  [[ "$(redis_host)" =~ ^(127\.0\.0\.1|localhost)$ ]] \
    || die "no Redis answers at $REDIS_URL and it is not a local address; start it or set REDIS_URL"
  mkdir -p "$LOCAL/$name"
  start_detached "$name" redis-server --bind 127.0.0.1 --port "$(redis_port)" --save '' --appendonly no \
    --dir "$LOCAL/$name"
  wait_until "redis-server on port $(redis_port)" 10 redis_answers
}
