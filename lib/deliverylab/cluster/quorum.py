"""The KRaft controller quorum: where its voters go, and whether it has a leader now.

Every metadata change — a new partition leader, an ISR shrink, a fenced broker — is
committed by the active controller, which a *majority* of the voters must elect and
keep following. Two voters need both; so a 2-node cluster of combined broker+controller
nodes cannot elect anyone once either node dies, and a "kill the leader" fault would
wait forever. The lab therefore places the voters for the faults it injects (one
broker killed or paused at a time), never by accident:

* 1 broker: node 1 is the only voter. Nothing can fail over: no other replica, no other
  controller.
* 2 brokers: nodes 1 and 2 are combined broker+controller nodes and a small
  controller-only process, node 3, is the third voter. Either broker may die: the
  other and node 3 are a majority.
* 3 brokers: nodes 1-3, each broker and controller (as before: no extra process).
* 4 or 5 brokers: nodes 1-3 are the voters; the others are brokers only. Three voters
  survive any one fault; broker-only nodes are cheaper to run than a fourth or fifth
  voter, and an even count of voters would survive no more faults than one fewer.

So, from 2 brokers on, exactly three voters: any one node may be killed or paused and
a controller is still elected. Two voters down (e.g. both followers paused on 3 nodes)
take the quorum away: no elections, no new leaders, no ISR change, until one is back.

:func:`probe_leader` asks the voters who leads with Kafka's own DescribeQuorum request
(confluent-kafka's AdminClient has no call for it, and a JVM tool per status refresh
would cost seconds of CPU): a voter that leads answers with its id, the others answer
NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import html
import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: Voters when a failover is possible at all (sizes 2-5).
VOTERS = 3
#: The KRaft metadata log: the only partition DescribeQuorum knows.
METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_QUORUM = 55  # API key


@dataclass(frozen=True)
class QuorumPlan:
    """Which node ids run, and in which role, for a cluster of ``len(brokers)`` brokers."""

    brokers: tuple[int, ...]
    voters: tuple[int, ...]
    controller_only: tuple[int, ...]

    @property
    def processes(self) -> tuple[int, ...]:
        """Every node id that runs a process: brokers and controller-only nodes."""
        return tuple(sorted({*self.brokers, *self.controller_only}))

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    @property
    def tolerates(self) -> int:
        """How many voters may be down at once while a controller can still be elected."""
        return len(self.voters) - self.majority

    def roles(self, node_id: int) -> str:
        """``process.roles`` of one node."""
        roles = [r for r, member in (("broker", node_id in self.brokers),
                                     ("controller", node_id in self.voters)) if member]
        if not roles:
            raise ValueError(f"node {node_id} is not part of this cluster")
        return ",".join(roles)

    def describe(self) -> str:
        """One line for people: who votes and why (README and ``Cluster.status()``)."""
        voters = ",".join(map(str, self.voters))
        if len(self.brokers) == 1:
            return "voter 1 (the only node: no failover possible)"
        extra = [f"{n} controller-only" for n in self.controller_only]
        extra += [f"{n} broker-only" for n in self.brokers if n not in self.voters]
        detail = f" ({', '.join(extra)})" if extra else ""
        return (f"voters {voters}{detail}: any {self.tolerates} of them may be down, "
                f"a controller needs {self.majority}")


def plan(size: int) -> QuorumPlan:
    """Voters for ``size`` brokers (1-5): see the module docstring for why."""
    if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= 5:
        raise ValueError(f"size={size!r} is not accepted; expected a whole number from 1 to 5")
    brokers = tuple(range(1, size + 1))
    if size == 1:
        return QuorumPlan(brokers, (1,), ())
    controller_only = tuple(range(size + 1, VOTERS + 1))  # (3,) for 2 brokers, else ()
    return QuorumPlan(brokers, tuple(range(1, VOTERS + 1)), controller_only)


def lost_by(plan_: QuorumPlan, down: Iterable[int]) -> bool:
    """Whether the voters in ``down`` leave no majority."""
    down = set(down)
    return sum(v not in down for v in plan_.voters) < plan_.majority


@dataclass(frozen=True)
class QuorumState:
    """The quorum as seen now: voter states and the active controller (None: none)."""

    plan: QuorumPlan
    states: Mapping[int, str]  # voter -> up/paused/dead/stopped/cut off
    leader: int | None
    note: str = ""  # why the leader is unknown although a majority runs

    @property
    def down(self) -> dict[int, str]:
        return {v: s for v, s in self.states.items() if s != "up"}

    @property
    def has_majority(self) -> bool:
        return not lost_by(self.plan, self.down)

    def _down_text(self) -> str:
        down = self.down
        return (f"{len(down)} of them {'is' if len(down) == 1 else 'are'} down ("
                + ", ".join(f"{v} {s}" for v, s in sorted(down.items())) + ")")

    def line(self) -> str:
        """The status line's quorum part, e.g. ``controller quorum: voters 1,2,3,
        active controller 2``."""
        voters = ",".join(map(str, self.plan.voters))
        if self.leader is not None:
            return f"controller quorum: voters {voters}, active controller {self.leader}"
        return "controller quorum: NO LEADER" + self.explain(prefix=" -")

    def explain(self, prefix: str = ";") -> str:
        """Why nothing can be elected, or ``""`` while a controller leads.

        Appended to timeouts of leader and ISR waits, so a stuck failover names its
        cause instead of leaving the student to suspect memory or CPU.
        """
        if self.leader is not None:
            return ""
        voters = ",".join(map(str, self.plan.voters))
        if len(self.plan.brokers) == 1:
            if self.down:
                return (f"{prefix} the only node (1) is {self.states[1]}: a 1-broker cluster "
                        "has no other replica or controller to fail over to; restart it, "
                        "or start with brokers>=2 for failover")
            return f"{prefix} the only controller (node 1) has not elected itself yet"
        if not self.has_majority:
            return (f"{prefix} the controller quorum has no leader: voters {voters} and "
                    f"{self._down_text()}; a controller needs {self.plan.majority} of "
                    f"{len(self.plan.voters)}, so no elections, no new leaders, no ISR "
                    "changes until one is back (heal)")
        why = f" ({self.note})" if self.note else ""
        return (f"{prefix} the controller quorum (voters {voters}) has no leader yet{why}; "
                "an election is under way")


# ------------------------------------------------------------------- the probe
def _request(correlation_id: int) -> bytes:
    """DescribeQuorum v0 for ``__cluster_metadata``/0 (flexible: request header v2)."""
    topic = METADATA_TOPIC.encode()
    body = (struct.pack(">hhih", DESCRIBE_QUORUM, 0, correlation_id, len(b"lab"))
            + b"lab" + b"\x00"                      # client id, header tagged fields
            + b"\x02"                               # topics: compact array of 1
            + bytes([len(topic) + 1]) + topic       # topic name: compact string
            + b"\x02" + struct.pack(">i", 0) + b"\x00"  # partitions: [0], tagged fields
            + b"\x00" + b"\x00")                    # topic tagged fields, body tagged
    return struct.pack(">i", len(body)) + body


def _read_exact(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("connection closed by the controller")
        out += chunk
    return out


def _leader_from(body: bytes) -> int | None:
    """The leader id a DescribeQuorum v0 response names, or None on an error."""
    from ..proxy.framing import _uvarint  # the one varint decoder of the package

    i = 4  # correlation id
    _tags, i = _uvarint(body, i)
    (error,) = struct.unpack_from(">h", body, i)
    i += 2
    if error:
        return None
    topics, i = _uvarint(body, i)
    if topics < 2:
        return None
    name_len, i = _uvarint(body, i)
    i += name_len - 1
    parts, i = _uvarint(body, i)
    if parts < 2:
        return None
    _index, error, leader = struct.unpack_from(">ihi", body, i)
    return leader if error == 0 and leader >= 0 else None


def ask_leader(host: str, port: int, timeout: float = 1.0) -> int | None:
    """Ask one controller who leads the quorum; None if it does not lead or answer."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.settimeout(timeout)
            sock.sendall(_request(1))
            (size,) = struct.unpack(">i", _read_exact(sock, 4))
            return _leader_from(_read_exact(sock, size))
    except (OSError, struct.error, IndexError):
        return None


def probe_leader(addresses: Mapping[int, tuple[str, int]], timeout: float = 1.0) -> int | None:
    """The active controller, asked of each running voter in turn (only the leader
    answers with its own id); None when no voter says it leads."""
    for _voter, (host, port) in sorted(addresses.items()):
        leader = ask_leader(host, port, timeout)
        if leader is not None:
            return leader
    return None


def with_quorum(cluster: object, text: str, html_text: str) -> tuple[str, str]:
    """A status line (plain and HTML) with the cluster's quorum part appended.

    For :class:`~deliverylab.notebook.widgets.FaultPanel`, in one call: the wording lives here
    beside the quorum logic. Unchanged for anything without a running quorum (a
    stopped cluster, a test double); never raises, as a status refresh must not.
    """
    try:
        line = cluster.quorum().line()  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - no quorum to show: the line stays as it was
        return text, html_text
    colour = "#009E73" if " active controller " in line else "#D55E00"
    part = (f"<span class='dl-quorum' style='color:{colour}'>"
            f"{html.escape(line)}</span>")
    cut = html_text.rfind("</div>")
    html_out = (html_text[:cut] + " &nbsp;|&nbsp; " + part + html_text[cut:] if cut >= 0
                else html_text + part)
    return f"{text} | {line}", html_out
