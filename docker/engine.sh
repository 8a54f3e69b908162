#!/usr/bin/env bash
# Make sure a Docker engine answers; install and start one if we may.
#
# Why a script: CI and a fresh classroom machine start with nothing running. The docker
# tests call this from a session fixture; `make doctor` explains what it would do.
#   docker/engine.sh            start (and, as root on Debian/Ubuntu, install) the engine
#   docker/engine.sh --check    only say whether an engine answers (exit 0/1)
# Prints one line saying what happened; on failure, one line saying why (exit 1).
set -uo pipefail

LOG_DIR="${DELIVERYLAB_CACHE:-$HOME/.cache/deliverylab}/docker"
LOG="$LOG_DIR/dockerd.log"

answers() { timeout 20 docker info >/dev/null 2>&1; }
fail() { echo "docker engine: $*" >&2; exit 1; }

if command -v docker >/dev/null 2>&1 && answers; then
    echo "docker engine: answers ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
    exit 0
fi
[ "${1:-}" = "--check" ] && fail "no engine answers (docker/engine.sh starts one)"

# Not ours to start: a Docker Desktop, colima or a remote DOCKER_HOST must be running.
[ -n "${DOCKER_HOST:-}" ] && fail "DOCKER_HOST=$DOCKER_HOST does not answer; start that engine"
[ "$(uname -s)" = "Linux" ] || fail "no engine answers; start Docker Desktop (or colima) first"

if ! command -v dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || fail "dockerd is not installed and we are not root: ask for 'apt-get install docker.io'"
    command -v apt-get >/dev/null 2>&1 || fail "dockerd is not installed and there is no apt-get to install docker.io"
    echo "docker engine: installing Debian's docker.io (apt-get)..." >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker.io >/dev/null 2>&1 \
        || fail "'apt-get install docker.io' failed; run it by hand to see why"
fi
command -v docker >/dev/null 2>&1 || fail "the docker client is missing (apt-get install docker.io)"

# A daemon that is installed but not running: systemd's if there is one, else by hand.
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl start docker >/dev/null 2>&1 || true
fi
if ! answers; then
    [ "$(id -u)" = 0 ] || fail "dockerd is not running and we are not root to start it ('sudo systemctl start docker')"
    mkdir -p "$LOG_DIR"
    if ! pgrep -x dockerd >/dev/null 2>&1; then
        # setsid: the engine must outlive this script and the test session (it is shared).
        # It must not inherit our other file descriptors either: a lock held open by a
        # caller (the test suite's `flock`, the heavy queue's fd 9) would otherwise stay
        # held for as long as the engine runs, and whoever waits for it waits forever.
        (
            for fd in /proc/$BASHPID/fd/*; do
                fd=${fd##*/}
                [ "$fd" -gt 2 ] && eval "exec $fd>&-"
            done
            exec setsid nohup dockerd >"$LOG" 2>&1 < /dev/null
        ) &
    fi
    for _ in $(seq 60); do answers && break; sleep 0.5; done
fi
if answers; then
    # Compose too (not fatal without it): the tests run docker/compose.yml on the engine.
    if ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1 \
        && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq docker-compose >/dev/null 2>&1 \
            || echo "docker engine: could not install docker-compose (compose tests will skip)" >&2
    fi
    echo "docker engine: started ($(docker version -f '{{.Server.Version}}' 2>/dev/null))"
    exit 0
fi
reason="$(grep -iE 'level=(error|fatal)|failed' "$LOG" 2>/dev/null | tail -1 | cut -c1-200)"
fail "dockerd did not answer within 30s${reason:+: $reason} (log: $LOG)"
