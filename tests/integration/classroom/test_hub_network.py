"""Per-student network namespaces (``classroom/hub/network.py``), without a hub: student A's
listeners -- on A's ``127.0.0.1`` as brokers bind, and on A's own address as the server
does -- are reached by no process of student B, whatever address or port B tries, while
the host (the hub's proxy) reaches A's server address and both reach the hub's."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from deliverylab.classroom.hub import network as netns
from deliverylab.classroom.hub.network import ClassNetwork

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="namespaces need root")

LISTEN = r"""
import json, socket, sys, time
socks = []
for host in ("127.0.0.1", sys.argv[1]):
    s = socket.socket(); s.bind((host, 0)); s.listen(); socks.append(s)
print(json.dumps([s.getsockname() for s in socks]), flush=True)
time.sleep(120)
"""

PROBE = r"""
import json, socket, sys
out = {}
for host, port in json.loads(sys.argv[1]):
    s = socket.socket(); s.settimeout(1.0)
    try:
        s.connect((host, port)); out[f"{host}:{port}"] = "connected"
    except OSError as exc:
        out[f"{host}:{port}"] = type(exc).__name__
    finally:
        s.close()
print(json.dumps(out))
"""


@pytest.fixture
def network() -> Iterator[ClassNetwork]:
    net = ClassNetwork(f"dlnt{secrets.token_hex(2)}-", ["ann", "ben"])
    net.open()
    try:
        for name in net.students:
            netns.create(net.student(name), net.hub_address)
        yield net
    finally:
        net.close()


def in_ns(net: ClassNetwork, name: str, code: str, *args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE,
                            text=True, preexec_fn=net.student(name).join_fn(), **kw)


def test_a_student_reaches_none_of_anothers_ports_the_hosts_proxy_reaches_the_server(
        network: ClassNetwork):
    ann, ben = network.student("ann"), network.student("ben")
    listener = in_ns(network, "ann", LISTEN, ann.address)
    hub = socket.socket()
    hub.bind((network.hub_address, 0))
    hub.listen()
    try:
        (lo_host, lo_port), (addr_host, addr_port) = json.loads(listener.stdout.readline())
        assert (lo_host, addr_host) == ("127.0.0.1", ann.address)
        targets = [["127.0.0.1", lo_port], ["127.0.0.1", addr_port], [ann.address, lo_port],
                   [ann.address, addr_port], [ann.host_address, addr_port],
                   [network.hub_address, hub.getsockname()[1]]]
        probe = in_ns(network, "ben", PROBE, json.dumps(targets))
        got = json.loads(probe.communicate(timeout=60)[0])
        hub_key = f"{network.hub_address}:{hub.getsockname()[1]}"
        assert got.pop(hub_key) == "connected", "ben cannot reach the hub's address"
        assert "connected" not in got.values(), f"ben reached ann: {got}"
        # the host (where the hub's proxy runs) reaches ann's server address
        with socket.create_connection((ann.address, addr_port), timeout=5):
            pass
        # and ann's own processes reach ann's own loopback listeners
        mine = in_ns(network, "ann", PROBE, json.dumps([["127.0.0.1", lo_port]]))
        assert json.loads(mine.communicate(timeout=60)[0]) == {
            f"127.0.0.1:{lo_port}": "connected"}
        assert ben.address != ann.address
    finally:
        listener.kill()
        listener.wait(10)
        hub.close()


def test_closing_the_class_network_leaves_no_namespace_link_address_or_rule():
    net = ClassNetwork(f"dlnt{secrets.token_hex(2)}-", ["cat"])
    net.open()
    netns.create(net.student("cat"), net.hub_address)
    assert net.student("cat").exists()
    net.close()
    assert not net.student("cat").exists()
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert net.student("cat").host_if not in links
    addrs = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
    assert net.hub_address not in addrs
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True,
                           text=True).stdout
    assert str(net.net) not in rules
