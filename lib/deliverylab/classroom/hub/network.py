"""A network of their own for each student on the local path (issue 40, item 1): one
Linux network namespace per student, so no student can reach another's brokers,
Connect workers, Spark or services, whatever port they type.

Why namespaces rather than firewall rules matched on the owner's uid: a student's
stack listens on ports picked at run time (brokers, proxies, Connect, the Spark driver,
py4j, the kernel's ZMQ sockets), so a rule per port cannot be written ahead, and
``iptables -m owner`` matches only the *sending* socket's uid in OUTPUT (a SYN-ACK from a
listener carries no full socket), so "B's listener refuses A" cannot be said with it.
In a namespace of its own a student's ``127.0.0.1`` is their own loopback: another
student's connection to any port there finds nothing listening.

Each student's namespace ``<prefix><name>`` gets a veth pair: ``<net>.<4i+1>`` on the
host's side, ``<net>.<4i+2>`` (``/30``) inside, where the student's server listens for
the hub's proxy. The hub listens on one more address, :attr:`ClassNetwork.hub_address`,
put on the host's loopback, which every namespace reaches through its default route
(the server calls the hub's API there). ``<net>`` is ``10.<200-249>``, picked from the
class's prefix so two classes on a host differ; ``FORWARD`` drops traffic between the
class's addresses, so one namespace cannot be routed to another through the host.
Everything is made with ``ip`` and ``iptables`` as root and removed with the class.
"""

from __future__ import annotations

import ctypes
import hashlib
import ipaddress
import os
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...errors import LabError

NETNS_DIR = Path("/var/run/netns")
CLONE_NEWNET = 0x40000000
#: How each student's server is networked: ``isolated`` (a namespace each, this
#: module) or ``shared`` (the host's network: students reach each other's ports).
NETWORKS = ("isolated", "shared")


def _run(argv: Sequence[str], ok: tuple[int, ...] = (0,)) -> str:
    try:
        proc = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    except OSError as exc:
        raise LabError(f"{argv[0]} cannot run ({exc}): per-student networks need "
                       "iproute2 and iptables, as root") from exc
    if proc.returncode not in ok:
        raise LabError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


@dataclass(frozen=True)
class StudentNetwork:
    """One student's namespace and the veth pair into it."""

    namespace: str
    host_if: str
    host_address: str
    address: str  # the student's side: where their server listens

    def join_fn(self) -> Callable[[], None]:
        """For a ``preexec_fn`` (as root, before the switch to the student's uid): move
        the forked process into the namespace; its children inherit it."""
        path = str(NETNS_DIR / self.namespace)

        def join() -> None:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(path, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({path}): {os.strerror(err)}")
            finally:
                os.close(fd)
        return join

    def exists(self) -> bool:
        return (NETNS_DIR / self.namespace).exists()


class ClassNetwork:
    """The class's addresses and namespaces: :meth:`student` for one, :meth:`open` and
    :meth:`close` for the host's parts (the hub's address, the FORWARD rules)."""

    def __init__(self, prefix: str, students: Sequence[str]) -> None:
        digest = hashlib.sha1(prefix.encode()).digest()
        self.prefix, self.students = prefix, list(students)
        self.net = ipaddress.ip_network(f"10.{200 + digest[0] % 50}.0.0/16")
        if len(self.students) > 16_000:
            raise LabError(f"{len(self.students)} students: per-student networks hold "
                           "16000 at most")
        self.hub_address = str(self.net.network_address + 0xFFFE)  # 10.x.255.254

    def student(self, name: str) -> StudentNetwork:
        i = self.students.index(name)
        base = self.net.network_address + 4 * i
        tag = hashlib.sha1(f"{self.prefix}{name}".encode()).hexdigest()[:10]
        return StudentNetwork(f"{self.prefix}{name}", f"dlv{tag}", str(base + 1),
                              str(base + 2))

    def _rules(self) -> list[list[str]]:
        return [["FORWARD", "-s", str(self.net), "-j", "DROP"],
                ["FORWARD", "-d", str(self.net), "-j", "DROP"]]

    def open(self) -> None:
        """The hub's address on the host's loopback and the rules that keep one
        namespace from being routed to another. Raises one line if the class's
        addresses are another's on this host."""
        taken = _run(["ip", "-o", "-4", "addr", "show"])
        if f" {self.hub_address}/" in taken:
            raise LabError(f"{self.hub_address} is already an address of this host: "
                           f"another class (prefix {self.prefix!r} hashes to {self.net}) "
                           "runs here; choose another prefix")
        _run(["ip", "addr", "add", f"{self.hub_address}/32", "dev", "lo"])
        for rule in self._rules():
            _run(["iptables", "-I", *rule])

    def close(self) -> None:
        """Undo :meth:`open` and remove every student's namespace (after the sweep)."""
        for name in self.students:
            remove(self.student(name))
        _run(["ip", "addr", "del", f"{self.hub_address}/32", "dev", "lo"], ok=(0, 2))
        for rule in self._rules():
            while subprocess.run(["iptables", "-C", *rule], capture_output=True,
                                 timeout=30).returncode == 0:
                _run(["iptables", "-D", *rule])


def create(net: StudentNetwork, hub_address: str) -> StudentNetwork:
    """The student's namespace with its veth pair, loopback up and a default route to
    the host (where the hub listens on ``hub_address``); made again from scratch if a
    previous one was left."""
    remove(net)
    _run(["ip", "netns", "add", net.namespace])
    try:
        _run(["ip", "link", "add", net.host_if, "type", "veth", "peer", "name", "eth0",
              "netns", net.namespace])
        _run(["ip", "addr", "add", f"{net.host_address}/30", "dev", net.host_if])
        _run(["ip", "link", "set", net.host_if, "up"])
        inside = ["ip", "-n", net.namespace]
        _run([*inside, "addr", "add", f"{net.address}/30", "dev", "eth0"])
        _run([*inside, "link", "set", "eth0", "up"])
        _run([*inside, "link", "set", "lo", "up"])
        _run([*inside, "route", "add", "default", "via", net.host_address])
    except LabError:
        remove(net)
        raise
    return net


def remove(net: StudentNetwork) -> None:
    """The veth pair (both ends go together) and the namespace, if there."""
    _run(["ip", "link", "del", net.host_if], ok=(0, 1))
    if net.exists():
        _run(["ip", "netns", "del", net.namespace], ok=(0, 1))
