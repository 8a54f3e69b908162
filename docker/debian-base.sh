#!/usr/bin/env bash
# Make a local Debian base image by debootstrap, for the images built with no registry.
#
# Why one script: the broker image (broker-image.sh) and the lab image (lab-image.sh) both
# start from a Debian root filesystem when python:/apache/kafka images cannot be pulled;
# both take it from the mirror this machine's apt already uses, and both cache it as a
# tarball (the slow part: minutes, once per machine).
#
#   docker/debian-base.sh NAME IMAGE PACKAGES
#     NAME      names the cached tarball: ~/.cache/deliverylab/docker/rootfs-bookworm-NAME-ARCH.tar.gz
#     IMAGE     the base image to make (nothing happens if the engine has it)
#     PACKAGES  comma-separated, installed by debootstrap (--include)
#   DEBIAN_MIRROR=http://... docker/debian-base.sh ...     use another mirror
# Needs root (debootstrap) when neither the image nor the tarball exists.
set -euo pipefail

[ $# = 3 ] || { echo "usage: $0 NAME IMAGE PACKAGES" >&2; exit 2; }
NAME="$1"
IMAGE="$2"
PACKAGES="$3"
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
SUITE=bookworm
ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m)"
CACHE="${DELIVERYLAB_CACHE:-$HOME/.cache/deliverylab}/docker"
ROOTFS="$CACHE/rootfs-$SUITE-$NAME-$ARCH.tar.gz"
LOG="$CACHE/debootstrap-$NAME.log"

say() { echo "debian base: $*" >&2; }
fail() { echo "debian base: $*" >&2; exit 1; }

docker image inspect "$IMAGE" >/dev/null 2>&1 && exit 0
mkdir -p "$CACHE"

# The mirror apt is configured with (one-line or deb822 sources), unless told otherwise.
mirror() {
    "$PY" - "$SUITE" <<'PYEOF'
import glob, re, sys
suite = sys.argv[1]
files = ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list")),
         *sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))]
for path in files:
    try:
        text = open(path).read()
    except OSError:
        continue
    if path.endswith(".sources"):  # deb822 stanzas
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^(\w[\w-]*):[ \t]*(.*)$", stanza, re.M))
            if "deb" in fields.get("Types", "").split() and suite in fields.get("Suites", "").split():
                print(fields["URIs"].split()[0])
                sys.exit()
    for line in text.splitlines():
        words = re.sub(r"\[[^]]*\]", "", line).split()
        if len(words) >= 3 and words[0] == "deb" and words[2] == suite:
            print(words[1])
            sys.exit()
PYEOF
}

if [ ! -s "$ROOTFS" ]; then
    [ "$(id -u)" = 0 ] || fail "making $IMAGE needs root (debootstrap); run once as root"
    command -v debootstrap >/dev/null 2>&1 || {
        say "installing debootstrap (apt-get)..."
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
            || fail "'apt-get install debootstrap' failed"
    }
    MIRROR="${DEBIAN_MIRROR:-$(mirror)}"
    [ -n "$MIRROR" ] || fail "no Debian $SUITE mirror in /etc/apt/sources.list(.d); set DEBIAN_MIRROR"
    work="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
    trap 'rm -rf "$work"' EXIT
    say "debootstrap $SUITE ($ARCH) with $PACKAGES from $MIRROR (minutes, once)..."
    debootstrap --variant=minbase --arch="$ARCH" --include="$PACKAGES" \
        "$SUITE" "$work/root" "$MIRROR" >"$LOG" 2>&1 \
        || fail "debootstrap failed (log: $LOG): $(tail -1 "$LOG")"
    # What a container never needs: package lists, docs, caches.
    rm -rf "$work"/root/var/lib/apt/lists/* "$work"/root/var/cache/apt/*.bin \
        "$work"/root/var/cache/apt/archives/*.deb "$work"/root/usr/share/doc/* \
        "$work"/root/usr/share/man/* "$work"/root/usr/share/locale/*
    tar --numeric-owner -C "$work/root" -czf "$ROOTFS.partial" .
    mv "$ROOTFS.partial" "$ROOTFS"
    rm -rf "$work"
    trap - EXIT
fi
say "importing $ROOTFS as $IMAGE"
docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    "$ROOTFS" "$IMAGE" >/dev/null
