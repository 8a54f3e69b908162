#!/usr/bin/env bash
# Build a local Kafka broker image when no image registry is reachable.
#
# Why: the docker path normally pulls apache/kafka, but classrooms behind a proxy and CI
# machines often reach only a Debian mirror. This builds an image with the same layout
# as apache/kafka (/opt/kafka/libs, `java` on PATH, user 1000) from:
#   * a Debian root filesystem made by debootstrap with a Java 17 runtime, from the
#     mirror this machine's apt already uses (docker/debian-base.sh: one base shared
#     with the lab image; cached as a tarball: the slow part), and
#   * the very Kafka jars the local backend runs (the lab's cache, `make setup`).
# A second run finds the image (its label records the inputs: the jars' contents and
# modes, the scripts, the JVM options) and does nothing.
#
#   docker/broker-image.sh            build if needed; prints the image name last
#   DEBIAN_MIRROR=http://... docker/broker-image.sh     use another mirror
#   DELIVERYLAB_IMAGE_SUFFIX=-x ...    tag this image and its base ...:<tag>-x (a CI run
#                                      builds its own from nothing, then removes them)
# Needs root (debootstrap) the first time, a running engine (docker/engine.sh).
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(dirname "$HERE")"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"
KAFKA_VERSION="$("$PY" -c 'from deliverylab.runtime import jars; print(jars.KAFKA_VERSION)')"
LIBS="$("$PY" -c 'from deliverylab.runtime import classpaths; print(classpaths.kafka_libs())')"
LOG4J="$("$PY" -c 'from deliverylab.runtime import jars; print(jars.log4j_config())')"
SUFFIX="${DELIVERYLAB_IMAGE_SUFFIX:-}"
IMAGE="${DELIVERYLAB_BUILD_IMAGE:-deliverylab/kafka:$KAFKA_VERSION$SUFFIX}"
SUITE=bookworm
ARCH="$(dpkg --print-architecture 2>/dev/null || uname -m)"
CACHE="${DELIVERYLAB_CACHE:-$HOME/.cache/deliverylab}/docker"
BASE="deliverylab/debian:$SUITE$SUFFIX"  # shared with the lab image (debian-base.sh)

mkdir -p "$CACHE"
say() { echo "broker image: $*" >&2; }
fail() { echo "broker image: $*" >&2; exit 1; }

# What the image is made of; the image carries it as a label, so a change rebuilds: the
# jars' contents and modes (names alone let an image built from unreadable 0600 jars
# live on), the scripts, and the broker's JVM options (the class archive is recorded
# with them, and a JVM started with other GC options cannot map it). The entry script
# and the configuration are not in the image: docker.py copies them into each container.
OPTS="$("$PY" -c 'from deliverylab.cluster.local import BROKER_JVM_OPTS as o; print(" ".join(o))')"
jars="$(cd "$LIBS" && sha256sum ./*.jar && stat -c '%n %a' ./*.jar)"
inputs="$(echo "$jars" | sha256sum | cut -c1-16)-$( (cat "$LOG4J" "$0" "$HERE/debian-base.sh"; echo "$OPTS") | sha256sum | cut -c1-16)"
have="$(docker image inspect -f '{{index .Config.Labels "deliverylab.inputs"}}' "$IMAGE" 2>/dev/null || true)"
if [ "$have" = "$inputs" ]; then
    say "$IMAGE is up to date"
    echo "$IMAGE"
    exit 0
fi

bash "$HERE/debian-base.sh" "$BASE" \
    || fail "no base image $BASE (the line above says why)"

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
cp -r "$LIBS" "$ctx/libs"
rm -f "$ctx/libs/.complete" "$ctx"/libs/.*.part
cp "$LOG4J" "$ctx/log4j2.properties"
# The broker runs as uid 1000 and the files are root's in the image: whatever modes the
# cache gave them (an earlier set-up wrote 0600 jars), everyone may read them there.
chmod -R a+rX "$ctx"
# A one-node configuration from the lab's generator, to record the class archive with.
"$PY" - "$ctx" <<'PYEOF'
import sys
from pathlib import Path
from deliverylab.cluster.local import BROKER_JVM_OPTS
from deliverylab.cluster.properties import ClusterSpec, NodePorts, render, server_properties
ctx = Path(sys.argv[1])
node = NodePorts(1, 19092, 19093, 19094, 19092)
spec = ClusterSpec((node,), "ZGVsaXZlcnlsYWItY29tcA")
(ctx / "archive.properties").write_text(render(server_properties(spec, node, "/tmp/archive-data")))
(ctx / "broker.opts").write_text(" ".join(BROKER_JVM_OPTS))
PYEOF
# Record the classes a broker loads into a CDS archive (as `make setup` does locally):
# three JVMs loading ~10,000 classes each is most of a cluster's start on two cores.
cat >"$ctx/record-archive.sh" <<'SHEOF'
#!/bin/sh
set -eu
CP="/opt/kafka/libs/*"
L="-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties"
java "$L" -cp "$CP" kafka.tools.StorageTool format -t ZGVsaXZlcnlsYWItY29tcA -c /tmp/archive.properties >/dev/null
# shellcheck disable=SC2046
java $(cat /tmp/broker.opts) -XX:ArchiveClassesAtExit=/opt/kafka/broker.jsa "$L" -cp "$CP" \
    kafka.Kafka /tmp/archive.properties >/tmp/archive.log 2>&1 &
pid=$!
i=0
until grep -q "Kafka Server started" /tmp/archive.log; do
    i=$((i + 1)); [ $i -lt 480 ] || { tail -5 /tmp/archive.log; exit 1; }; sleep 0.5
done
sleep 2
kill -TERM $pid
wait $pid || true
rm -rf /tmp/archive-data /tmp/archive.log /tmp/archive.properties /tmp/broker.opts
test -s /opt/kafka/broker.jsa
SHEOF
cat >"$ctx/Dockerfile" <<EOF
FROM $BASE
# Same layout as apache/kafka, so the compose file and the lab run either image.
COPY libs /opt/kafka/libs
COPY log4j2.properties /opt/kafka/config/log4j2.properties
COPY archive.properties broker.opts /tmp/
COPY record-archive.sh /opt/kafka/record-archive.sh
ENV PATH=/usr/lib/jvm/java-17-openjdk-$ARCH/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    LANG=C.UTF-8
RUN useradd --uid 1000 --user-group --no-create-home --home-dir /opt/kafka appuser \\
 && sh /opt/kafka/record-archive.sh && rm /opt/kafka/record-archive.sh \\
 && chmod -R a+rX /opt/kafka
USER 1000
WORKDIR /opt/kafka
LABEL deliverylab.inputs="$inputs" deliverylab.kafka-version="$KAFKA_VERSION"
EOF
say "building $IMAGE from $BASE and the lab's Kafka $KAFKA_VERSION jars"
old="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
# The classic builder works with every engine and needs no buildx plugin.
DOCKER_BUILDKIT=0 docker build -q -t "$IMAGE" "$ctx" >/dev/null 2>"$CACHE/build.log" \
    || fail "docker build failed: $(tail -1 "$CACHE/build.log")"
# The image this one replaces, if no tag names it any more. Never one another tag still
# names (an identical build under another tag shares its id), nor one a container uses.
new="$(docker image inspect -f '{{.Id}}' "$IMAGE")"
if [ -n "$old" ] && [ "$old" != "$new" ] \
        && [ "$(docker image inspect -f '{{len .RepoTags}}' "$old" 2>/dev/null)" = 0 ]; then
    docker image rm "$old" >/dev/null 2>&1 || true
fi
echo "$IMAGE"
