#!/usr/bin/env bash
# with-docker.sh <command> [args...]
# Runs a command with a Docker engine available: installs Debian's docker.io
# (and debootstrap, for building a base without a registry; chromium, for the
# console's browser tests; rsync, for store snapshots; zsh and fish, for completion
# scripts; runsc, for boxes under gVisor; podman and catatonit, for boxes under
# Podman; prometheus, for the telemetry suite; squid, for the door behind a
# parent proxy) when absent, starts dockerd when none answers, registers runsc with it,
# starts Podman's API service (rootful, and a rootless one for a user of its own),
# and stops what it started when the command ends. Needs root only for what it
# has to install or start.
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
# the engine suites run again under Podman: its init for boxes (catatonit), its
# network stack (a test's neighbour container has a network), and what a
# rootless service needs (uidmap, slirp4netns), which apt only recommends
command -v podman >/dev/null 2>&1 || missing+=(podman netavark aardvark-dns uidmap slirp4netns)
[[ -x /usr/libexec/podman/catatonit ]] || missing+=(catatonit)
# the telemetry suite has a real Prometheus scrape a running server
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
# the door's egress through a company proxy is tested against a real Squid (with its
# basic_ncsa_auth helper), started by the test on a port of its own
[[ -x /usr/sbin/squid ]] || missing+=(squid)
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

podman_started=()
stop_started() {
  for pid in "${podman_started[@]}"; do kill "$pid" 2>/dev/null || true; done
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

# Podman's Docker-compatible API, rootful, with runc: Debian's crun 1.8 refuses
# hybrid cgroups, and the compat API ignores a box's own runtime choice, so the
# service is started with the one it must use. scripts/test-engines.mjs gives
# it the box image once the suite has built the image. A socket file is no
# proof of a service (one that was stopped leaves it behind): it must answer.
podman_answers() { timeout 10 podman --remote --url "unix://$1" version >/dev/null 2>&1; }
# podman_wait <socket> <log>: up to 30 s for the service to answer, else its log
podman_wait() {
  for _ in $(seq 1 30); do
    podman_answers "$1" && return 0
    sleep 1
  done
  echo "with-docker: podman system service at $1 did not answer within 30 s:" >&2
  tail -n 20 "$2" >&2
}
if command -v podman >/dev/null 2>&1 && ! podman_answers /run/podman/podman.sock; then
  mkdir -p /run/podman
  rm -f /run/podman/podman.sock
  podman_log="$(mktemp -t roster-podman.XXXXXX)"
  echo "with-docker: starting podman system service (rootful, log: $podman_log)" >&2
  podman --runtime runc system service --time=0 unix:///run/podman/podman.sock \
    >"$podman_log" 2>&1 &
  podman_started+=($!)
  podman_wait /run/podman/podman.sock "$podman_log"
fi
# a rootless service for a user of its own: roster must refuse it where it can't
# enforce a box's limits (cgroup v1), which test/box/podman.test.ts checks
rootless_user=rosteruser
if command -v podman >/dev/null 2>&1 && [[ $(id -u) -eq 0 ]]; then
  id -u "$rootless_user" >/dev/null 2>&1 || useradd -m "$rootless_user"
  uid="$(id -u "$rootless_user")"
  run_dir="/run/user/$uid"
  socket="$run_dir/podman/podman.sock"
  if ! podman_answers "$socket"; then
    # the socket's own folder too: podman does not make it when it serves a path
    # it was given (a fresh machine has none: "bind: no such file or directory")
    install -d -o "$rootless_user" -m 700 "$run_dir" "$(dirname "$socket")"
    rm -f "$socket"
    home="$(getent passwd "$rootless_user" | cut -d: -f6)"
    install -d -o "$rootless_user" "$home/.config" "$home/.config/containers"
    printf '[storage]\ndriver = "overlay"\n' >"$home/.config/containers/storage.conf"
    chown "$rootless_user" "$home/.config/containers/storage.conf"
    rootless_log="$(mktemp -t roster-podman-rootless.XXXXXX)"
    chmod 666 "$rootless_log"
    echo "with-docker: starting podman system service (rootless, $rootless_user, log: $rootless_log)" >&2
    su "$rootless_user" -s /bin/sh -c "XDG_RUNTIME_DIR=$run_dir podman --runtime runc system service --time=0 unix://$socket >$rootless_log 2>&1 &"
    podman_wait "$socket" "$rootless_log"
  fi
fi

status=0
"$@" || status=$?
exit "$status"
