"""Who listens on a TCP port of the host, by owner.

The solo part runs two lanes side by side (tests/lanes.py): a test that asks "what
listens on port P" by port alone also sees the other lane's sockets that happen to use
the same number on another address (stop 51's CI: a JVM of the host lane on
``[::ffff:127.0.0.1]:P`` while the Docker hub had ``172.30.0.1:P``). So a test names the
processes whose sockets it judges.
"""

from __future__ import annotations

from collections.abc import Callable

import psutil


def tree(pid: int) -> set[int]:
    """``pid`` and every process below it."""
    top = psutil.Process(pid)
    return {top.pid, *(c.pid for c in top.children(recursive=True))}


def listening(port: int, owner: Callable[[psutil.Process], bool]) -> list[str]:
    """The local addresses (``ip:port``, ``[ipv6]:port`` as ``ss`` prints them) that
    processes for which ``owner`` holds listen on at ``port``. Needs to see every
    process's sockets (root, as the solo part runs)."""
    found = set()
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status != psutil.CONN_LISTEN or conn.laddr.port != port or conn.pid is None:
            continue
        try:
            if not owner(psutil.Process(conn.pid)):
                continue
        except psutil.NoSuchProcess:
            continue
        ip = conn.laddr.ip
        found.add(f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}")
    return sorted(found)
