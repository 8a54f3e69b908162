#!/usr/bin/env bash
# Run a command (default: make test) as on a machine that has never run the lab.
#
# Why: a fresh clone on a warm machine reuses the jar cache, the class archives, the
# storage templates and the Docker images of earlier runs, so a bug on the cold path
# stays invisible (it happened: every container broker died on new machines, unable to
# read its jars, while CI stayed green). Here every run starts from nothing of the
# lab's own, and leaves nothing behind:
#   * a private, empty DELIVERYLAB_CACHE (jars, class archives, storage templates, the
#     Debian root filesystems of the images);
#   * image tags of its own (DELIVERYLAB_IMAGE_SUFFIX): the broker image, the lab image
#     and their Debian bases are built from nothing, then removed;
#   * no Docker engine running, if none ran before: the tests start one (and install it
#     as root), this script stops it again at the end.
# The venv is the clone's own (make creates it); pip's download cache is not the lab's.
#
#   scripts/cold-run.sh               make test, cold
#   scripts/cold-run.sh make course   any command, cold
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- make test

run="cold-$(date +%Y%m%d%H%M%S)-$$"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/deliverylab-$run.XXXXXX")"
export DELIVERYLAB_CACHE="$scratch/cache"
export DELIVERYLAB_IMAGE_SUFFIX="-$run"
engine_before=0
if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then
    engine_before=1
fi
say() { echo "cold run: $*" >&2; }

cleanup() {
    local code=$?
    if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then
        local images
        images="$(docker image ls --format '{{.Repository}}:{{.Tag}}' | grep -- "$DELIVERYLAB_IMAGE_SUFFIX\$" || true)"
        # shellcheck disable=SC2086
        [ -z "$images" ] || docker image rm -f $images >/dev/null 2>&1 || true
        docker image prune -f --filter label=deliverylab.image=lab >/dev/null 2>&1 || true
        say "removed images: ${images//$'\n'/ }"
        if [ "$engine_before" = 0 ] && pgrep -x dockerd >/dev/null 2>&1; then
            pkill -TERM -x dockerd || true
            for _ in $(seq 60); do pgrep -x dockerd >/dev/null 2>&1 || break; sleep 0.5; done
            say "stopped the Docker engine the run started"
        fi
    fi
    rm -rf "$scratch"
    say "removed $scratch; exit $code"
    exit "$code"
}
trap cleanup EXIT
say "cache $DELIVERYLAB_CACHE, image tags *$DELIVERYLAB_IMAGE_SUFFIX, engine running before: $engine_before"
start=$SECONDS
set +e
"$@"
code=$?
set -e
say "'$*' exited $code after $((SECONDS - start)) s"
exit "$code"
