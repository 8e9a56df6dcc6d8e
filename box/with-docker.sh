#!/usr/bin/env bash
# with-docker.sh <command> [args...]
# Runs a command with a Docker engine available: installs Debian's docker.io
# (and debootstrap, for building a base without a registry; chromium, for the
# console's browser tests; rsync, for store snapshots; zsh and fish, for completion
# scripts; runsc, for boxes under gVisor) when absent, starts
# dockerd when none answers, registers runsc with it, and stops the engine it started when the command
# ends. Needs root only for what it has to install or start.
set -euo pipefail

if [[ $# -eq 0 ]]; then
  echo "usage: box/with-docker.sh <command> [args...]" >&2
  exit 64
fi

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
command -v git >/dev/null 2>&1 || missing+=(git)
# store snapshots and restores are rsync passes on the host
command -v rsync >/dev/null 2>&1 || missing+=(rsync)
# the web console's tests drive a real browser: Debian's chromium (nothing downloaded)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
# boxes under gVisor ([box] runtime = "runsc") are tested with Debian's runsc
command -v runsc >/dev/null 2>&1 || missing+=(runsc)
# `roster completion` scripts are checked by the shells they are for
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
command -v fish >/dev/null 2>&1 || missing+=(fish)
if ((${#missing[@]})); then
  echo "with-docker: installing ${missing[*]} from Debian" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

started=""
log=""
if ! docker info >/dev/null 2>&1; then
  log="$(mktemp -t roster-dockerd.XXXXXX)"
  echo "with-docker: starting dockerd (log: $log)" >&2
  dockerd >"$log" 2>&1 &
  started=$!
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    if ! kill -0 "$started" 2>/dev/null; then
      echo "with-docker: dockerd exited while starting:" >&2
      tail -n 20 "$log" >&2
      exit 1
    fi
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    echo "with-docker: dockerd did not answer within 60 s:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
fi

stop_started() {
  if [[ -n $started ]]; then
    kill "$started" 2>/dev/null || true
    wait "$started" 2>/dev/null || true
  fi
}
trap stop_started EXIT

# register runsc with the engine (idempotent): the same `roster box doctor --fix`
# a user runs once; the runner is built by then (npm ci's prepare). A failure is
# said here and not fatal: the gVisor tests then fail, saying the same.
roster="$(dirname "$0")/../bin/roster.mjs"
if [[ -f $roster ]]; then
  echo "with-docker: registering runsc with dockerd" >&2
  # stdout is doctor's report (it also fails on a box image the suite has yet to build);
  # stderr is empty unless the fix itself was refused
  refused="$(node "$roster" box doctor --fix --json 2>&1 >/dev/null)" || true
  [[ -z $refused ]] || echo "with-docker: runsc is not registered: $refused" >&2
fi

status=0
"$@" || status=$?
exit "$status"
