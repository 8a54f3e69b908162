#!/usr/bin/env bash
# Build the JupyterLab image (docker/lab.Dockerfile) with or without a registry.
#
# Why: `docker compose up` builds it from python:3.11-slim-bookworm and PyPI. Where no
# image registry is reachable (CI here, classrooms behind a proxy) this builds the same
# Dockerfile on a local base and an offline bundle instead:
#   * deliverylab/debian:bookworm, a Debian root filesystem made by debootstrap from
#     the mirror apt uses (docker/debian-base.sh, the broker image's base too), with Java 17,
#     Python 3.11 and venv, the docker CLI (docker.io), make and ps (cached as a tarball:
#     the slow part, once);
#   * docker/lab-bundle/, filled by `python -m deliverylab.classroom.setup.bundle make` (wheels and jars,
#     from this machine's caches), so pip inside the build needs no network.
# A second run finds the image (its label records the inputs) and does nothing.
#
#   docker/lab-image.sh        build if needed; prints the image name last
#   docker/lab-image.sh --base only the local Debian base it would build on (needs no
#                              .venv and no jars: the test suite starts it before set-up)
# DELIVERYLAB_LAB_BASE=<image> builds on that base with PyPI (what compose does).
# DELIVERYLAB_IMAGE_SUFFIX=-x tags this image and its local base ...:<tag>-x (a CI run
# builds its own from nothing, then removes them).
# Needs root (debootstrap) the first time without a base, and a running engine.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
SUFFIX="${DELIVERYLAB_IMAGE_SUFFIX:-}"
IMAGE="${DELIVERYLAB_LAB_IMAGE:-deliverylab/lab:latest$SUFFIX}"
SUITE=bookworm
CACHE="${DELIVERYLAB_CACHE:-$HOME/.cache/deliverylab}/docker"
LOCAL_BASE="deliverylab/debian:$SUITE$SUFFIX"  # shared with the broker image

mkdir -p "$CACHE"
say() { echo "lab image: $*" >&2; }
fail() { echo "lab image: $*" >&2; exit 1; }

BASE="${DELIVERYLAB_LAB_BASE:-}"
if [ -z "$BASE" ] && docker image inspect python:3.11-slim-bookworm >/dev/null 2>&1; then
    BASE=python:3.11-slim-bookworm
fi
OFFLINE=0
[ -n "$BASE" ] || { BASE="$LOCAL_BASE"; OFFLINE=1; }

if [ "${1:-}" = --base ]; then
    [ "$OFFLINE" = 0 ] || bash "$HERE/debian-base.sh" "$LOCAL_BASE"
    exit
fi

# What the image is made of: the course's files (contents and modes), the Dockerfile,
# the scripts that build it (this one included: a change to how it builds rebuilds it),
# the base.
sources() {
    find pyproject.toml README.md lib labs docker/lab.Dockerfile docker/lab-entry.sh \
        docker/lab-image.sh docker/debian-base.sh -type f -not -path '*/__pycache__/*' \
        -not -path '*.egg-info/*' -not -path '*/.ipynb_checkpoints/*' -print0 | sort -z
}
inputs="$(cd "$ROOT" && { sources | xargs -0 sha256sum; sources | xargs -0 stat -c '%n %a'; } \
    | sha256sum | cut -c1-16)-$(echo "$BASE $OFFLINE" | sha256sum | cut -c1-8)"
have="$(docker image inspect -f '{{index .Config.Labels "deliverylab.inputs"}}' "$IMAGE" 2>/dev/null || true)"
if [ "$have" = "$inputs" ]; then
    say "$IMAGE is up to date"
    echo "$IMAGE"
    exit 0
fi

if [ "$OFFLINE" = 1 ]; then
    bash "$HERE/debian-base.sh" "$LOCAL_BASE" \
        || fail "no python:3.11-slim-bookworm image, and no $LOCAL_BASE (the line above" \
                "says why); or set DELIVERYLAB_LAB_BASE"
fi

# The build context: only what lab.Dockerfile copies (the classic builder ignores
# lab.Dockerfile.dockerignore), plus the offline bundle when there is no PyPI.
ctx="$(mktemp -d "${TMPDIR:-/tmp}/lab-image.XXXXXX")"
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/docker/lab-bundle"
(cd "$ROOT" && tar -c --exclude=__pycache__ --exclude='*.egg-info' --exclude=.ipynb_checkpoints \
    pyproject.toml README.md lib labs docker/lab.Dockerfile docker/lab-entry.sh) | tar -x -C "$ctx"
if [ "$OFFLINE" = 1 ]; then
    say "offline bundle (wheels and jars from this machine's caches)..."
    (cd "$ROOT" && PYTHONPATH="$ROOT/lib" "$PY" -m deliverylab.classroom.setup.bundle make "$ctx/docker/lab-bundle" \
        >"$CACHE/lab-bundle.log" 2>&1) || fail "the offline bundle failed (log: $CACHE/lab-bundle.log)"
    # The base's Python is Debian's (3.11.2), maybe older than this machine's: the newest
    # release of a package can require a later 3.11.x. Add the wheels pip would pick for
    # the base's exact version and glibc (bookworm: 2.36 and the manylinux tags below it).
    pyv="$(docker run --rm --entrypoint python3 "$BASE" -c 'import platform; print(platform.python_version())')"
    m="$(uname -m)"
    tags=()
    for t in manylinux_2_36 manylinux_2_35 manylinux_2_34 manylinux_2_31 manylinux_2_28 \
             manylinux_2_27 manylinux_2_24 manylinux_2_17 manylinux2014 linux; do
        tags+=(--platform "${t}_$m")
    done
    "$PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from deliverylab.classroom.setup.bundle import requirements, TOOLING; print("\n".join(requirements(extras=("singleuser",)) + TOOLING))' \
        "$ROOT/lib" >"$ctx/requirements.txt"
    "$PY" -m pip download --quiet --only-binary=:all: "${tags[@]}" --python-version "$pyv" \
        --implementation cp --find-links "$ctx/docker/lab-bundle/wheels" \
        --dest "$ctx/docker/lab-bundle/wheels" -r "$ctx/requirements.txt" >>"$CACHE/lab-bundle.log" 2>&1 \
        || fail "wheels for the base's Python $pyv failed (log: $CACHE/lab-bundle.log)"
fi
say "building $IMAGE on $BASE"
# Two tags: the install stage (the bundle and the venv it made; a cache, never shipped:
# the next build after an edit to labs/ only reuses it) and the image itself, which
# copies the venv and jars out of it. Earlier builds' images of both, untagged now, go.
repo="$IMAGE"
case "${IMAGE##*/}" in *:*) repo="${IMAGE%:*}" ;; esac
build() {
    # The classic builder works with every engine and needs no buildx plugin.
    DOCKER_BUILDKIT=0 docker build -q --force-rm -f "$ctx/docker/lab.Dockerfile" \
        --build-arg BASE="$BASE" "$@" "$ctx" >/dev/null 2>"$CACHE/lab-build.log" \
        || fail "docker build failed (log: $CACHE/lab-build.log): $(tail -1 "$CACHE/lab-build.log")"
}
old="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
build --target install -t "$repo:install$SUFFIX"
build -t "$IMAGE" --label "deliverylab.inputs=$inputs"
# Only if no tag names it any more: never one another tag still names (an identical
# build under another tag shares its id), nor one a container uses.
new="$(docker image inspect -f '{{.Id}}' "$IMAGE")"
if [ -n "$old" ] && [ "$old" != "$new" ] \
        && [ "$(docker image inspect -f '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
    docker image rm "$old" >/dev/null 2>&1 || true
fi
docker image prune -f --filter label=deliverylab.image=lab >/dev/null 2>&1 || true
echo "$IMAGE"
