"""Free ports on 127.0.0.1 for what the lab starts (brokers, proxies, Connect workers, a
Spark standalone cluster): asked of the kernel, so two chapters never collide."""

from __future__ import annotations

import socket
from contextlib import ExitStack

from ..errors import PortTaken


def free_ports(count: int) -> list[int]:
    """Ask the kernel for ``count`` distinct free ports on 127.0.0.1."""
    with ExitStack() as stack:
        socks = []
        for _ in range(count):
            s = stack.enter_context(socket.socket())
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]


def check_port(port: int) -> None:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise PortTaken(f"port {port} on 127.0.0.1 is taken by another process; "
                            "pass base_port=None to pick free ports, or another base_port"
                            ) from exc
