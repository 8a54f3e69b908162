#!/bin/sh
# Entry of the lab image: run the command as the `lab` user (uid 1000), in the group that
# owns the mounted Docker engine socket, so that chapters can start their brokers as
# sibling containers. The socket's group id differs between machines (docker on Debian,
# 0 on Docker Desktop), hence at start rather than at build. No socket: no extra group,
# and the chapters run their brokers as local processes (backend "auto"). That is how
# `make classroom SPAWNER=docker` runs it: the command is jupyterhub-singleuser, its
# JUPYTERHUB_* settings in the environment (kept by setpriv).
#
# As the container's first process it also stays until the chapters' clusters are gone:
# when PID 1 exits the kernel kills every process of the container at once, and the
# watchdogs (deliverylab/process/reaper.py) that remove a chapter's broker containers
# would die with it, leaving those siblings running. So on `docker stop` / `compose down`
# it stops the command, then every other process but the watchdogs and their children,
# then waits for the watchdogs to finish their `docker rm`. (`docker kill` allows none
# of this.)
set -u
groups=1000
sock="${DOCKER_HOST:-unix:///var/run/docker.sock}"
sock="${sock#unix://}"
if [ -S "$sock" ]; then
    groups="$groups,$(stat -c %g "$sock")"
fi
if [ "$(id -u)" != 0 ]; then
    exec "$@"
fi
if [ "$$" != 1 ]; then
    exec setpriv --reuid=1000 --regid=1000 --groups="$groups" -- "$@"
fi

setpriv --reuid=1000 --regid=1000 --groups="$groups" -- "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT
status=0
while kill -0 "$child" 2>/dev/null; do
    wait "$child"
    status=$?
done
# Owners of clusters still running (a kernel Jupyter did not stop, a `docker exec`):
# their end closes their watchdog's pipe, which is what makes it clean up. Spared: the
# watchdogs' sessions (each runs in its own), so that a `docker rm` a watchdog already
# runs for an owner that died earlier is not cut short, leaving its brokers behind.
spare=" "
for pid in $(pgrep -f 'process/reaper\.py'); do
    spare="$spare$(ps -o sid= -p "$pid" | tr -d ' ') "
done
# Listed first, then signalled from this shell (a pipe's subshell would be on the list).
procs="$(ps -e -o pid=,sid=)"
while read -r pid sid; do
    case "$spare" in *" $sid "*) continue ;; esac
    [ "$pid" -gt 1 ] && kill -TERM "$pid" 2>/dev/null
done <<EOF
$procs
EOF
i=0
while pgrep -f 'process/reaper\.py' >/dev/null && [ "$i" -lt 100 ]; do
    sleep 0.5
    i=$((i + 1))
done
exit "$status"
