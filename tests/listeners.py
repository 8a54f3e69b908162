"""Whose processes hold what on the host: a container's processes as the host numbers
them, and the addresses given processes listen on at a port.

The solo part runs two lanes side by side (tests/lanes.py): a test that asks "what
listens on port P" by port alone also sees the other lane's sockets that happen to use
the same number on another address (stop 51's CI: a JVM of the host lane on
``[::ffff:127.0.0.1]:P`` while the Docker hub had ``172.30.0.1:P``). So a test names the
processes whose sockets it judges (a process tree: ``classroom.sizing.measure.tree``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Collection

import psutil


def host_pids(container: str) -> dict[int, str]:
    """The container's processes as the host numbers them: pid -> command name."""
    out = subprocess.run(["docker", "top", container, "-eo", "pid,comm"], capture_output=True,
                         text=True, timeout=30, check=True).stdout.splitlines()[1:]
    return {int(pid): comm for pid, comm in (line.split(None, 1) for line in out)}


def listening(port: int, pids: Collection[int]) -> list[str]:
    """The local addresses (``ip:port``, ``[ipv6]:port`` as ``ss`` prints them) that the
    processes ``pids`` listen on at ``port``. Needs to see every process's sockets (root,
    as the solo part runs)."""
    found = set()
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid in pids:
            ip = conn.laddr.ip
            found.add(f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
    return sorted(found)
