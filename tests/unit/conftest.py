"""Fixtures of the unit tests: a fake Kafka broker, and a fault proxy in front of it; and
``unneeded_imports``, what a child process's module loads that it must not.

Why a fake broker here (the suite's rule is real brokers): the proxy's unit tests
(test_framing.py, test_proxy.py) check what the proxy forwards, holds and drops byte for
byte, in milliseconds, and make no delivery claim; what a lost ack or a late request does
to Kafka is checked on real brokers in tests/integration. One fake serves both files, so
they cannot drift apart on what a "broker" answers. (bench/proxy_overhead.py keeps a fake
of its own: it streams requests without parsing them, so the proxy, not the fake, is
what it measures.)

``unneeded_imports`` serves the guards of the child processes (``python -m deliverylab.X``;
the grader's child alone runs hundreds of times a test run, each time paying for every
module it imports): each child's test names what that child must not load, its package's
re-exports and its owner's side above all (:mod:`deliverylab.process.lazy`). Modules, not
times: a time would be the machine's.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import pytest

import deliverylab
from deliverylab.cluster import free_ports
from deliverylab.proxy.framing import parse_request_header, parse_response_correlation
from deliverylab.proxy.proxy import Proxy

#: The folder of the package under test: a child interpreter imports this one, not
#: whichever the virtual environment installed.
LIB = str(Path(deliverylab.__file__).resolve().parents[1])


def recv_exact(conn: socket.socket, n: int) -> bytes | None:
    """``n`` bytes from ``conn``; None if it closed (or failed) first."""
    buf = b""
    while len(buf) < n:
        try:
            part = conn.recv(n - len(buf))
        except OSError:
            return None
        if not part:
            return None
        buf += part
    return buf


class FakeBroker:
    """Speaks just enough Kafka framing: answers each request with a frame of its
    correlation id and ``answers[api key]`` (``b"r" * 10`` unless set; no answer to a
    Produce with acks=0), and records the (api, correlation id) of what reached it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        self.received: list[tuple[str, int]] = []
        self.payload_bytes = 0
        self.answers: dict[int, bytes] = {}  # api key -> response payload after the cid
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            while True:
                size_raw = recv_exact(conn, 4)
                if size_raw is None:
                    return
                body = recv_exact(conn, struct.unpack(">i", size_raw)[0])
                if body is None:
                    return
                head = parse_request_header(body)
                with self.lock:
                    self.received.append((head.api, head.correlation_id))
                    self.payload_bytes += len(body)
                if head.expects_response:
                    payload = self.answers.get(head.api_key, b"r" * 10)
                    answer = struct.pack(">i", head.correlation_id) + payload
                    try:
                        conn.sendall(struct.pack(">i", len(answer)) + answer)
                    except OSError:
                        return

    def cids(self) -> list[int]:
        """Correlation ids of the requests that reached this broker, in order."""
        with self.lock:
            return [cid for _, cid in self.received]

    @staticmethod
    def responses(conn: socket.socket, count: int, timeout: float = 2.0) -> list[int] | None:
        """Correlation ids of the next ``count`` responses a client reads on ``conn``
        (through the proxy); None if the connection closed first."""
        conn.settimeout(timeout)
        cids = []
        for _ in range(count):
            raw = recv_exact(conn, 4)
            if raw is None:
                return None
            body = recv_exact(conn, struct.unpack(">i", raw)[0])
            if body is None:
                return None
            cids.append(parse_response_correlation(body))
        return cids

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def broker() -> Iterator[FakeBroker]:
    fake = FakeBroker()
    yield fake
    fake.close()


@pytest.fixture
def proxy(broker: FakeBroker) -> Iterator[Proxy]:
    """A started fault proxy in front of ``broker``, stopped after the test."""
    with Proxy(free_ports(1)[0], broker.port, name="proxy-test") as p:
        yield p


@pytest.fixture
def unneeded_imports() -> Callable[[str, Iterable[str]], list[str]]:
    """``unneeded_imports(module, packages)``: those of ``packages`` (a package or module
    with everything inside it) that a fresh interpreter loaded importing ``module``, as
    ``python -m`` does before running it. A name that is no module fails: a misspelt one
    would pass unseen."""
    def unneeded(module: str, packages: Iterable[str]) -> list[str]:
        packages = tuple(packages)
        unknown = [p for p in packages if importlib.util.find_spec(p) is None]
        assert not unknown, f"no such module: {unknown}"
        paths = [LIB, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        done = subprocess.run(
            [sys.executable, "-c", f"import sys, {module}; print(*sorted(sys.modules))"],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)})
        assert done.returncode == 0, done.stderr
        return [m for m in done.stdout.split()
                if any(m == p or m.startswith(p + ".") for p in packages)]

    return unneeded
