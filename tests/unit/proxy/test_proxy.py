"""The fault proxy's process: handles kept current across the pipe, and the process's
lifetime (it ends with the last proxy, and with its owner however the owner dies).

The faults themselves on the fake broker (``broker`` and ``proxy``, from
tests/unit/conftest.py) are in test_framing.py; what a lost ack or a late request *does*
to Kafka is checked on real brokers in tests/integration.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from deliverylab.cluster import free_ports
from deliverylab.errors import LabError
from deliverylab.proxy.proxy import AckLoss, Proxy
from deliverylab.waiting import wait_until

END_TXN = 26
LIB = str(Path(__file__).resolve().parents[3] / "lib")


def request(cid: int, key: int = END_TXN, client: str = "c1", payload: bytes = b"") -> bytes:
    name = client.encode()
    body = struct.pack(">hhih", key, 0, cid, len(name)) + name + payload
    return struct.pack(">i", len(body)) + body


def connect(p: Proxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", p.listen_port), timeout=5)


def test_cancelling_a_handle_reaches_the_proxy_process(proxy: Proxy, broker):
    loss = proxy.lose_acks(1, "EndTxn")
    hold = proxy.hold("EndTxn")
    assert proxy.faults() == ["lose_acks", "hold"]
    loss.cancel()
    hold.cancel()
    assert proxy.faults() == []
    with connect(proxy) as conn:
        conn.sendall(request(1))
        assert broker.responses(conn, 1) == [1]
    assert loss.dropped == 0 and not hold.held and broker.cids() == [1]
    early = AckLoss(1, "EndTxn")
    early.cancel()  # cancelled before it was armed: it never fires either
    proxy.arm(early)
    assert proxy.faults() == []


def test_a_stopped_proxy_says_so(broker):
    stopped = Proxy(free_ports(1)[0], broker.port)
    with pytest.raises(LabError, match="not running"):
        stopped.stats()
    with pytest.raises(LabError, match="not running"):
        stopped.arm(AckLoss(1))
    assert stopped.faults() == [] and "stopped" in repr(stopped)
    stopped.heal()  # nothing to heal: not an error


OWNER = """
import sys, time
sys.path.insert(0, sys.argv[1])
from deliverylab.proxy.proxy import Proxy, _Child
p = Proxy(int(sys.argv[2]), int(sys.argv[3])).start()
print(_Child._instance.proc.pid, flush=True)
time.sleep(60)
"""


def gone(pid: int) -> bool:
    """No process ``pid`` any more: signal 0 finds none."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_proxy_process_dies_with_its_owner(broker, tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", OWNER, LIB, str(free_ports(1)[0]),
                              str(broker.port)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        child = int(owner.stdout.readline())
        assert [p.name for p in tmp_path.iterdir()] == [f"deliverylab-proxy-{owner.pid}.log"]
        os.kill(owner.pid, signal.SIGKILL)  # a kernel restart: no cleanup code runs
        owner.wait(5)
        wait_until(f"proxy process {child} to end with its owner", lambda: gone(child), 5,
                   interval=0.05)
        assert list(tmp_path.iterdir()) == [], "the proxy process left its empty log"
    finally:
        owner.kill()
        owner.wait(5)


LAST = """
import sys
sys.path.insert(0, sys.argv[1])
from deliverylab.proxy.proxy import Proxy, _Child
with Proxy(int(sys.argv[2]), int(sys.argv[3])):
    child = _Child._instance
    assert child is not None and child.proc.poll() is None
print(child.proc.pid, child.proc.poll() is not None and _Child._instance is None, flush=True)
"""


def test_the_proxy_process_ends_with_the_last_proxy(broker, tmp_path):
    # In a Python process of its own: in this one, proxies of other tests' clusters
    # (session fixtures) may still be users of the shared child.
    out = subprocess.run([sys.executable, "-c", LAST, LIB, str(free_ports(1)[0]), str(broker.port)],
                         capture_output=True, text=True, timeout=30,
                         env={**os.environ, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    pid, ended = out.stdout.split()
    assert ended == "True"
    wait_until(f"proxy process {pid} to end with the last proxy", lambda: gone(int(pid)), 5,
               interval=0.05)
    assert list(tmp_path.iterdir()) == [], "the proxy process left its empty log"


def test_the_proxy_process_imports_the_wire_format_not_its_owner(unneeded_imports):
    # python -m deliverylab.proxy.engine runs proxy/__init__.py first: Proxy loads on use.
    assert unneeded_imports("deliverylab.proxy.engine", (
        "deliverylab.proxy.proxy", "deliverylab.proxy.handles", "deliverylab.process.children",
        "deliverylab.cluster", "confluent_kafka")) == []
