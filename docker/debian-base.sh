#!/usr/bin/env bash
# Make a local Debian base image by debootstrap, for the images built with no registry.
#
# Why one script and one base: the broker image (broker-image.sh) and the lab image
# (lab-image.sh) both start from a Debian root filesystem when python:/apache/kafka
# images cannot be pulled. They share one: the union of what each needs (the broker only
# Java; the lab Java, Python, the docker CLI), so a cold machine runs one debootstrap,
# not two (measured: a second one cost ~50 s of CPU on a 2-core machine, in the middle
# of the test suite's parallel part). It comes from the mirror this machine's apt already
# uses, cached as a tarball (the slow part: a minute or more, once per machine).
#
#   docker/debian-base.sh IMAGE
#     IMAGE     the base image to make (nothing happens if the engine has it)
#   DEBIAN_MIRROR=http://... docker/debian-base.sh ...     use another mirror
# Needs root (debootstrap) when neither the image nor the tarball exists. Two builds may
# ask for it at once (the test suite builds the lab image beside the broker image's
# tests): a lock makes the second wait for the first's tarball and image.
set -euo pipefail

[ $# = 1 ] || { echo "usage: $0 IMAGE" >&2; exit 2; }
IMAGE="$1"
# The broker needs only the JRE; the lab image also runs Python, the docker CLI and make.
PACKAGES=openjdk-17-jre-headless,python3,python3-venv,docker.io,make,procps,ca-certificates
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
SUITE=bookworm
ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m)"
CACHE="${DELIVERYLAB_CACHE:-$HOME/.cache/deliverylab}/docker"
ROOTFS="$CACHE/rootfs-$SUITE-base-$ARCH.tar.gz"
LOG="$CACHE/debootstrap-base.log"

say() { echo "debian base: $*" >&2; }
fail() { echo "debian base: $*" >&2; exit 1; }

docker image inspect "$IMAGE" >/dev/null 2>&1 && exit 0
mkdir -p "$CACHE"
exec 9>"$CACHE/debian-base.lock"
flock 9
docker image inspect "$IMAGE" >/dev/null 2>&1 && exit 0  # made while we waited

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
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq debootstrap >/dev/null \
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
    # gzip -1: the tarball is a local cache; the default level cost ~3x the CPU.
    tar --numeric-owner -C "$work/root" -cf - . | gzip -1 >"$ROOTFS.partial"
    mv "$ROOTFS.partial" "$ROOTFS"
    rm -rf "$work"
    trap - EXIT
fi
say "importing $ROOTFS as $IMAGE"
docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
    "$ROOTFS" "$IMAGE" >/dev/null
