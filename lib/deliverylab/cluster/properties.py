"""The broker configuration, generated once for every backend.

Three listeners per node, so that faults can be aimed at clients only:

* ``CLIENT``   — what producers, consumers and admin clients use. It may *advertise*
  another address (the fault proxy's), so every client byte passes through the proxy.
* ``INTERNAL`` — replication between brokers; never proxied.
* ``CONTROLLER`` — the KRaft quorum; never proxied. Only voters listen on it; every
  node names it, since brokers reach the quorum through it.
* ``DIRECT``   — only with a proxy: a client listener that bypasses it, for the lab's
  own admin calls and read-backs.

Not every node is a voter (see :mod:`.quorum`): ``process.roles`` is ``broker,controller``
for a voter that is also a broker, ``broker`` for a broker-only node and ``controller``
for a controller-only node, which has only the CONTROLLER listener.

Always ``127.0.0.1``, never ``localhost``: the latter may resolve to ``::1``.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass, field


def new_kafka_id() -> str:
    """A random id as Kafka writes cluster and directory ids: URL-safe base64 of 16
    bytes, no padding, never starting with ``-`` (the storage tool would read it as an
    option)."""
    while True:
        value = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not value.startswith("-"):
            return value


@dataclass(frozen=True)
class NodePorts:
    """Ports of one node. ``advertised`` equals ``client`` unless a proxy stands in front."""

    node_id: int
    client: int
    internal: int
    controller: int
    advertised: int
    host: str = "127.0.0.1"
    advertised_host: str = "127.0.0.1"
    # Containers only: listen on every interface, and let peers reach INTERNAL and
    # CONTROLLER by the container's name. None means ``host`` (the local backend).
    bind_host: str | None = None
    internal_host: str | None = None
    # With a fault proxy: a second client listener, advertised as itself, for the lab's
    # own control traffic and evidence (leaders, read-backs), which must not be
    # disturbed by the faults it observes. None without a proxy.
    direct: int | None = None

    @property
    def bind(self) -> str:
        return self.bind_host or self.host

    @property
    def peer_host(self) -> str:
        return self.internal_host or self.host


@dataclass(frozen=True)
class ClusterSpec:
    """What every node of one cluster agrees on.

    ``nodes`` are the brokers (what clients bootstrap on); ``controllers`` the
    controller-only nodes (client ports unused); ``voter_ids`` the quorum's voters,
    every broker when empty.
    """

    nodes: tuple[NodePorts, ...]
    cluster_id: str
    overrides: dict[str, str] = field(default_factory=dict)
    controllers: tuple[NodePorts, ...] = ()
    voter_ids: tuple[int, ...] = ()

    @property
    def all_nodes(self) -> tuple[NodePorts, ...]:
        """Every node that runs a process, brokers first."""
        return self.nodes + self.controllers

    @property
    def voter_nodes(self) -> tuple[NodePorts, ...]:
        ids = self.voter_ids or tuple(n.node_id for n in self.all_nodes)
        return tuple(n for n in self.all_nodes if n.node_id in ids)

    def roles(self, node_id: int) -> str:
        """``process.roles`` of one node."""
        roles = [r for r, member in (
            ("broker", any(n.node_id == node_id for n in self.nodes)),
            ("controller", any(n.node_id == node_id for n in self.voter_nodes))) if member]
        return ",".join(roles)

    @property
    def brokers(self) -> int:
        return len(self.nodes)

    @property
    def replication(self) -> int:
        return min(3, self.brokers)


def voters(spec: ClusterSpec) -> str:
    return ",".join(f"{n.node_id}@{n.peer_host}:{n.controller}" for n in spec.voter_nodes)


def _advertised_controller(node: NodePorts) -> str:
    """``,CONTROLLER://kafka-N:port`` for a container voter, else nothing.

    Left out, a container's controller advertises its hostname (the container id),
    which the engine resolves on *every* network it is on: a voter cut off from its
    peers' network would still be reached through the clients' network, and the
    majority would never elect a new controller.
    """
    return f",CONTROLLER://{node.peer_host}:{node.controller}" if node.internal_host else ""


#: The active controller appends a no-op record to the metadata log every 500 ms by
#: default (``metadata.max.idle.interval.ms``, KIP-835: it lets monitoring see a broker's
#: metadata fall behind). Each one is replicated to every voter and applied by every
#: broker: an idle 3-broker cluster spent 12.1 CPU-s a minute, a fifth of a core, and 9.6
#: without them (medians of three alternated 60 s idles, 2 cores, docs/measurements.md).
#: The lab's clusters idle most of their lives (a test suite keeps one per worker), and
#: nothing in the lab reads that lag; 0 turns the no-ops off (Kafka's documented value).
IDLE_NO_OPS = {"metadata.max.idle.interval.ms": "0"}


def controller_properties(spec: ClusterSpec, node: NodePorts, log_dir: str) -> dict[str, str]:
    """A controller-only node: the quorum's metadata log and nothing else, so it stays
    small (no client, replication or group work)."""
    props = {
        "process.roles": "controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters(spec),
        "listeners": f"CONTROLLER://{node.bind}:{node.controller}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": log_dir,
        "num.network.threads": "1",
        "num.io.threads": "1",
        "background.threads": "1",
        **IDLE_NO_OPS,
    }
    if node.internal_host:  # containers: see _advertised_controller
        props["advertised.listeners"] = _advertised_controller(node).lstrip(",")
    props.update(spec.overrides)
    return props


def server_properties(spec: ClusterSpec, node: NodePorts, log_dir: str) -> dict[str, str]:
    """``server.properties`` of one node as a dict (backends write it their own way)."""
    roles = spec.roles(node.node_id)
    if roles == "controller":
        return controller_properties(spec, node, log_dir)
    voter = "controller" in roles
    controller = f",CONTROLLER://{node.bind}:{node.controller}" if voter else ""
    advertised_controller = _advertised_controller(node) if voter else ""
    rf = spec.replication
    direct = (f",DIRECT://{node.bind}:{node.direct}", f",DIRECT://{node.advertised_host}:"
              f"{node.direct}", ",DIRECT:PLAINTEXT") if node.direct else ("", "", "")
    props = {
        "process.roles": roles,
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters(spec),
        "listeners": (f"CLIENT://{node.bind}:{node.client},INTERNAL://{node.bind}:{node.internal}"
                      f"{controller}{direct[0]}"),
        "advertised.listeners": (f"CLIENT://{node.advertised_host}:{node.advertised},"
                                 f"INTERNAL://{node.peer_host}:{node.internal}{direct[1]}"
                                 f"{advertised_controller}"),
        "listener.security.protocol.map": (
            f"CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT{direct[2]}"),
        "inter.broker.listener.name": "INTERNAL",
        "controller.listener.names": "CONTROLLER",
        "log.dirs": log_dir,
        # Internal topics replicated like user topics; small partition counts start fast.
        "offsets.topic.replication.factor": str(rf),
        "offsets.topic.num.partitions": "6",
        "transaction.state.log.replication.factor": str(rf),
        "transaction.state.log.min.isr": str(min(2, rf)),
        "transaction.state.log.num.partitions": "6",
        "default.replication.factor": str(rf),
        "num.partitions": "3",
        "group.initial.rebalance.delay.ms": "0",
        # Notice a dead or paused broker in ~3 s rather than 9 s, so a button press has
        # a visible effect while the student is still looking.
        "broker.session.timeout.ms": "3000",
        "broker.heartbeat.interval.ms": "500",
        # A 2-core laptop runs three of these: few threads, a small cleaner buffer.
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.replica.fetchers": "1",
        "background.threads": "2",
        "log.cleaner.threads": "1",
        "log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024),
        "auto.create.topics.enable": "true",
        **IDLE_NO_OPS,
    }
    props.update(spec.overrides)
    return props


def render(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())
