#!/bin/sh
# Entry of the lab image: run the command as the `lab` user (uid 1000), in the group that
# owns the mounted Docker engine socket, so that chapters can start their brokers as
# sibling containers. The socket's group id differs between machines (docker on Debian,
# 0 on Docker Desktop), hence at start rather than at build. No socket: no extra group,
# and the chapters run their brokers as local processes (backend "auto").
set -eu
groups=1000
sock="${DOCKER_HOST:-unix:///var/run/docker.sock}"
sock="${sock#unix://}"
if [ -S "$sock" ]; then
    groups="$groups,$(stat -c %g "$sock")"
fi
if [ "$(id -u)" = 0 ]; then
    exec setpriv --reuid=1000 --regid=1000 --groups="$groups" -- "$@"
fi
exec "$@"
