"""``Cluster``: a running Kafka cluster a notebook can start, break and stop.

Backends only run processes; this class owns what a cluster *means*: ports and
listeners, readiness, leaders, topics, node states, clean-up. Node numbers are Kafka's
``node.id`` (1..N), so ``cluster.kill(cluster.leader("t", 0))`` reads as it should.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from ..clients import config
from ..errors import BrokerExited, ClusterNotReady, PortTaken, QuorumLost, QuorumWarning, bad_value
from ..process import lablog
from ..process.children import start_reaper, tail
from ..process.ports import check_port, free_ports
from ..runtime import jars
from . import quorum as kraft
from . import ready, restart
from .local import LocalBackend
from .properties import ClusterSpec, NodePorts, new_kafka_id

BACKENDS = ("local", "docker", "auto")
_LIVE: weakref.WeakSet[Cluster] = weakref.WeakSet()
_log = lablog.logger(__name__)


class Stops(Protocol):
    """What the cluster needs of a group of processes started on it from above (a
    Connect cluster): to stop it with the cluster."""

    def stop(self) -> None: ...


class _StartMethod:
    """``Cluster.start(brokers=3)`` builds and starts; ``cluster.start()`` starts."""

    def __get__(self, obj: Cluster | None, cls: type[Cluster]):
        if obj is None:
            return lambda **kwargs: cls(**kwargs).start()
        return obj._start


class ClusterStatus(dict):
    """Node -> state, as before, plus the controller quorum (``.quorum``, read lazily:
    it asks the voters) which its repr shows, so ``cluster.status()`` in a notebook
    says which nodes vote and which one is the active controller."""

    def __init__(self, states: dict[int, str], quorum_state: Any) -> None:
        super().__init__(states)
        self._quorum = quorum_state  # a QuorumState, or a callable returning one

    @property
    def quorum(self) -> kraft.QuorumState | None:
        if callable(self._quorum):
            self._quorum = self._quorum()
        return self._quorum

    def __repr__(self) -> str:
        q = self.quorum
        return super().__repr__() + (f" | {q.line()}" if q is not None else "")


class Cluster:
    """N Kafka brokers on 127.0.0.1, with a KRaft controller quorum sized for failover.

    The voters (see :mod:`.quorum`): node 1 alone for 1 broker; nodes 1-3 from 2 brokers
    on, where node 3 is a small controller-only process when there are 2 brokers, and
    nodes 4-5 are brokers only. So killing or pausing any one broker leaves a majority
    of voters, and a new partition leader is always elected.

    Args:
        brokers: number of brokers, 1 to 5 (1 works, transactions included).
        backend: ``"local"`` (JVM processes), ``"docker"`` (one container per node,
            adds :meth:`partition`) or ``"auto"`` (docker when an engine answers and the
            broker image is there, else local). The image: ``$DELIVERYLAB_KAFKA_IMAGE``,
            else ``apache/kafka:<kafka_version>``, else the lab's own offline build
            (``docker/broker-image.sh``) if only that is there.
        proxy: put a fault proxy in front of each broker's client listener; brokers
            advertise the proxy's address so every client byte passes through it.
        base_port: first of a block of consecutive ports; default: free ports.
        data_dir: where node directories go; default: a fresh temporary directory.
        keep_data: keep the data directory after ``stop()`` (for post-mortems).
        overrides: extra broker properties, e.g. ``{"min.insync.replicas": "2"}``.
        ready_timeout: seconds to wait for the readiness conditions.
        jvm_opts: extra JVM options for every broker.
        allow_quorum_loss: what :meth:`kill` and :meth:`pause` do when asked for a fault
            that leaves brokers running without a controller majority: False (default)
            refuses with one line (:class:`~deliverylab.errors.QuorumLost`); True does it
            and warns (:class:`~deliverylab.errors.QuorumWarning`). Each call may
            override it: the registry's ``pause_followers`` does so deliberately, since
            on 3 nodes losing the quorum is its lesson.
    """

    start = _StartMethod()

    def __init__(self, brokers: int = 3, backend: str = "local", proxy: bool = False,
                 base_port: int | None = None, data_dir: str | Path | None = None,
                 keep_data: bool = False, overrides: dict[str, Any] | None = None,
                 ready_timeout: float = 90.0, kafka_version: str = jars.KAFKA_VERSION,
                 jvm_opts: list[str] | None = None, allow_quorum_loss: bool = False) -> None:
        if not isinstance(brokers, int) or not 1 <= brokers <= 5:
            raise bad_value("brokers", brokers, "a whole number from 1 to 5")
        if backend not in BACKENDS:
            raise bad_value("backend", backend, " or ".join(map(repr, BACKENDS)))
        if base_port is not None and not (1024 <= base_port <= 65000):
            raise bad_value("base_port", base_port, "None or a port from 1024 to 65000")
        self.brokers = brokers
        self.quorum_plan = kraft.plan(brokers)
        self.allow_quorum_loss = allow_quorum_loss
        self.backend_name = backend
        #: Why this backend, once started: the line a chapter prints ("Docker engine
        #: found, image ... present → containers").
        self.backend_reason = ""
        self.use_proxy = proxy
        self.base_port = base_port
        self.keep_data = keep_data
        self.overrides = {k: str(v) for k, v in (overrides or {}).items()}
        self.ready_timeout = ready_timeout
        self.kafka_version = kafka_version
        self.jvm_opts = list(jvm_opts or [])
        self._own_dir = data_dir is None
        self.workdir = Path(data_dir) if data_dir else Path(
            tempfile.mkdtemp(prefix="deliverylab-cluster-"))
        self.spec: ClusterSpec | None = None
        self.backend: Any = None  # LocalBackend or DockerBackend: the same verbs
        self.proxies: dict[int, Any] = {}
        self.states: dict[int, str] = {}
        self._reaper = None
        self._admin: AdminClient | None = None
        self._lock = threading.RLock()
        #: Connect clusters started on this one, stopped with it: ``Connect.start``
        #: adds itself (the cluster never imports Connect, which sits above it).
        self.connects: list[Stops] = []
        #: Seconds spent in each phase of the last start, in order (bench/cluster_start.py
        #: prints them): where a slow start goes.
        self.start_phases: dict[str, float] = {}

    # ----------------------------------------------------------------- lifecycle
    @property
    def nodes(self) -> list[int]:
        """The brokers (what faults aim at and clients use)."""
        return list(range(1, self.brokers + 1))

    @property
    def processes(self) -> list[int]:
        """Every node that runs a process: the brokers and any controller-only node."""
        return list(self.quorum_plan.processes)

    def _ports(self) -> list[int]:
        per_node = 5 if self.use_proxy else 3
        count = per_node * self.brokers + len(self.quorum_plan.controller_only)
        if self.base_port is None:
            return free_ports(count)
        ports = list(range(self.base_port, self.base_port + count))
        for port in ports:
            check_port(port)
        return ports

    def _make_spec(self) -> ClusterSpec:
        ports = iter(self._ports())
        nodes = []
        for node_id in self.nodes:
            client, internal, controller = next(ports), next(ports), next(ports)
            advertised = next(ports) if self.use_proxy else client
            direct = next(ports) if self.use_proxy else None
            nodes.append(NodePorts(node_id, client, internal, controller, advertised,
                                   direct=direct))
        # A controller-only node listens on CONTROLLER only: no client ports.
        controllers = tuple(NodePorts(node_id, 0, 0, next(ports), 0)
                            for node_id in self.quorum_plan.controller_only)
        return ClusterSpec(tuple(nodes), new_kafka_id(), self.overrides, controllers,
                           self.quorum_plan.voters)

    #: Starts tried with ports the kernel picked (:func:`free_ports`) before a
    #: :class:`PortTaken` is raised: a port free when picked can be taken before the
    #: broker binds it (another process's outgoing connection gets an ephemeral port
    #: from the same range; seen once in CI with two test workers).
    PORT_ATTEMPTS = 3

    def _start(self) -> Cluster:
        """Start every node and wait until the cluster can really serve; on a port
        taken in between, start again on other ports (only with picked ports and a
        data folder of its own: given ports or a given folder are the caller's)."""
        for attempt in range(1, self.PORT_ATTEMPTS + 1):
            try:
                return self._start_once()
            except PortTaken as exc:
                if (self.base_port is not None or not self._own_dir or self.keep_data
                        or attempt == self.PORT_ATTEMPTS):
                    raise
                _log.warning("%s; starting again on other ports (attempt %d of %d)",
                             exc, attempt + 1, self.PORT_ATTEMPTS)
                # _start_once stopped everything and removed the folder: begin afresh.
                self.spec, self.states, self.start_phases = None, {}, {}
                self.workdir = Path(tempfile.mkdtemp(prefix="deliverylab-cluster-"))
        raise AssertionError("unreachable")  # the loop returns or raises

    def _start_once(self) -> Cluster:
        if self.spec is not None:
            return self
        t0 = time.monotonic()
        try:
            self.backend = self._make_backend()
            self._reaper = start_reaper()
            self.backend.on_launch = lambda pid: self._tell_reaper(f"watch {pid}")
            self.backend.tell_reaper = self._tell_reaper  # docker: `exec docker rm ...`
            if self._own_dir and not self.keep_data:
                self._tell_reaper(f"cleanup {self.workdir}")
            self.spec = self._make_spec()
            _LIVE.add(self)
            if self.use_proxy:
                self._start_proxies()
            phase = time.monotonic()
            self.backend.prepare(self.spec)
            self.start_phases["prepare (properties, storage format)"] = time.monotonic() - phase
            phase = time.monotonic()
            for node_id in self.processes:
                self.backend.launch(node_id)
                self.states[node_id] = "up"
            self.start_phases["launch (spawn every node)"] = time.monotonic() - phase
            ready.wait_ready(self.bootstrap_servers, self.brokers,
                             ready.Deadline(self.ready_timeout), self._check_alive,
                             explain=self._why_stuck, phases=self.start_phases)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _make_backend(self) -> Any:
        """The backend named at construction; ``auto`` is decided here, once, and the
        reason kept in :attr:`backend_reason`."""
        from .docker import choose

        self.backend_name, self.backend_reason = choose(self.backend_name, self.kafka_version)
        if self.backend_name == "docker":
            from .docker import DockerBackend

            return DockerBackend(self.workdir, self.kafka_version, self.jvm_opts)
        return LocalBackend(self.workdir, self.kafka_version, self.jvm_opts)

    def _start_proxies(self) -> None:
        from ..proxy.proxy import Proxy  # the fault proxy is optional for a plain cluster

        for node in self.spec.nodes:
            proxy = Proxy(listen_port=node.advertised, target_port=node.client,
                          name=f"proxy-{node.node_id}")
            proxy.start()
            self.proxies[node.node_id] = proxy

    def _tell_reaper(self, line: str) -> None:
        if self._reaper is not None and self._reaper.poll() is None:
            self._reaper.stdin.write(line + "\n")
            self._reaper.stdin.flush()

    def _check_alive(self) -> None:
        """Raise with the log tail if a node that should be running has exited."""
        for node_id, state in self.states.items():
            if state in ("up", "paused"):
                code = self.backend.exit_code(node_id)
                if code is not None:
                    self.states[node_id] = "dead"
                    log = self.backend.log_path(node_id)
                    text = tail(log, 25)
                    # The bind error heads a stack trace of 30+ lines and the shutdown
                    # that follows it: looked for further up than the tail shown.
                    if "Address already in use" in tail(log, 400):
                        raise PortTaken(
                            f"node {node_id} could not bind its port (taken by another "
                            "process); start again to pick other ports", log=log,
                            log_tail=text)
                    raise BrokerExited(f"node {node_id} exited with code {code}",
                                       log=log, log_tail=text)

    def stop(self) -> None:
        """Stop every node and proxy, and remove the data directory (unless kept).

        Brokers are killed, not shut down gracefully: the data is thrown away anyway,
        and a controlled shutdown of the last nodes of a quorum can take a long time.
        With ``keep_data`` they get a SIGTERM and a few seconds first.
        """
        with self._lock:
            for connect in self.connects:
                connect.stop()
            self.connects.clear()
            if self.backend is not None:
                if self.keep_data:
                    for node_id in self.processes:
                        self.backend.signal(node_id, "resume")
                        self.backend.signal(node_id, "term")
                    for node_id in self.processes:
                        self.backend.wait_exit(node_id, 10)
                self.backend.close()
                self.backend = None
            for proxy in self.proxies.values():
                proxy.stop()
            self.proxies.clear()
            self.states = {n: "stopped" for n in self.states}
            if self._reaper is not None:
                self._tell_reaper("release")
                try:
                    self._reaper.stdin.close()
                except OSError:
                    pass
                self._reaper.wait(timeout=10)
                self._reaper = None
            if self._own_dir and not self.keep_data:
                shutil.rmtree(self.workdir, ignore_errors=True)
            self._admin = None
            _LIVE.discard(self)

    def __enter__(self) -> Cluster:
        return self._start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        states = ", ".join(f"{n}:{s}" for n, s in self.status().items())
        return f"<Cluster {self.brokers} node(s) {self.backend_name} [{states}]>"

    # --------------------------------------------------------------- addresses
    @property
    def bootstrap_servers(self) -> str:
        """What clients connect to (the proxies' addresses when proxies are on)."""
        self._require_started()
        return ",".join(f"{n.advertised_host}:{n.advertised}" for n in self.spec.nodes)

    @property
    def direct_bootstrap_servers(self) -> str:
        """Client listeners that bypass any proxy: the lab's own control and evidence.

        With a proxy, brokers advertise the proxy on CLIENT, so bootstrapping on the
        broker's CLIENT port would still lead clients back to the proxies; the DIRECT
        listener advertises itself instead.
        """
        self._require_started()
        return ",".join(f"{n.advertised_host}:{n.direct or n.client}" for n in self.spec.nodes)

    def _require_started(self) -> None:
        if self.spec is None or self.backend is None:
            raise ClusterNotReady("the cluster is not running: call start() first "
                                  "(or use `with Cluster.start(...) as cluster:`)")

    def _node(self, node: int) -> int:
        if node not in self.nodes:
            raise bad_value("node", node, f"a node number from 1 to {self.brokers}")
        self._require_started()
        return node

    # ------------------------------------------------------------------ faults
    def kill(self, node: int, allow_quorum_loss: bool | None = None) -> None:
        """SIGKILL one node: no shutdown, no flush, as when a machine loses power.

        ``allow_quorum_loss``: see the class; None means the cluster's setting.
        """
        node = self._node(node)
        self._quorum_check("killing", node, allow_quorum_loss)
        self.backend.signal(node, "resume")
        self.backend.signal(node, "kill")
        self.backend.wait_exit(node, 10)
        self.states[node] = "dead"

    def pause(self, node: int, allow_quorum_loss: bool | None = None) -> None:
        """SIGSTOP one node: alive but silent, like a long GC pause or a frozen VM.

        ``allow_quorum_loss``: see the class; None means the cluster's setting.
        """
        node = self._node(node)
        if self.states.get(node) == "up":
            self._quorum_check("pausing", node, allow_quorum_loss)
            self.backend.signal(node, "pause")
            if not self.backend.wait_stopped(node, True):  # a fault that did not happen
                code = self.backend.exit_code(node)  # is no fault: say so, never go on
                raise ClusterNotReady(f"node {node} did not stop when paused (" + (
                    "it still runs)" if code is None else f"it exited with {code})"))
            self.states[node] = "paused"

    def _quorum_check(self, verb: str, node: int, allow: bool | None) -> None:
        """Refuse or warn when this fault takes the controller majority away.

        Not for 1 broker: its only node is the quorum, and losing it is the fault
        itself (the timeouts that follow say there is nothing to fail over to). Why
        here and not in the Nemesis or the panel: every caller of ``kill`` and
        ``pause`` gets the same rule and the same sentence.
        """
        plan = self.quorum_plan
        down = {v for v in plan.voters if self.status_of(v) != "up"} | self.partitioned
        after = down | {node}
        if self.brokers == 1 or kraft.lost_by(plan, down) or not kraft.lost_by(plan, after):
            return  # nothing to fail over to, the quorum was already gone, or it survives
        voters = ",".join(map(str, plan.voters))
        gone = ",".join(map(str, sorted(after & set(plan.voters))))
        what = (f"{verb} node {node} leaves the controller quorum (voters {voters}) with "
                f"only {len(plan.voters) - len(after & set(plan.voters))} of "
                f"{len(plan.voters)} running ({gone} down): no controller, so no elections, "
                "no new leaders and no ISR changes until a voter is back")
        if not (self.allow_quorum_loss if allow is None else allow):
            raise QuorumLost(f"refused: {what}; pass allow_quorum_loss=True to do it anyway")
        warnings.warn(QuorumWarning(what), stacklevel=3)

    def status_of(self, node: int) -> str:
        """One node's state, controller-only nodes included (``stopped`` if unknown)."""
        self.status()  # refreshes crashed nodes to dead
        return self.states.get(node, "stopped")

    def resume(self, node: int) -> None:
        node = self._node(node)
        if self.states.get(node) == "paused":
            self.backend.signal(node, "resume")
            if not self.backend.wait_stopped(node, False) and self.backend.exit_code(node) is None:
                raise ClusterNotReady(f"node {node} is still stopped after its resume")
            self.states[node] = "up"

    def restart(self, node: int, timeout: float = 60.0) -> None:
        """Stop a node (gracefully if it is running) and start it again.

        Returns once the node is back in the cluster metadata; a start-up that stalls
        is dumped, killed and started once more (:mod:`.restart` says why).
        """
        restart.restart(self, self._node(node), timeout)

    def partition(self, node: int) -> None:
        """Cut one node off from the other nodes: a real network partition (docker only).

        Replication and the KRaft quorum to and from the node stop; clients still reach
        it, so a leader on the wrong side keeps accepting what it can no longer replicate.
        """
        node = self._node(node)
        if not hasattr(self.backend, "partition"):
            raise bad_value("backend", self.backend_name,
                            "'docker' for partitions (Cluster.start(backend='docker'))")
        self.backend.partition(node)

    def heal_partition(self, node: int) -> None:
        """Reconnect a partitioned node to the other nodes (no-op if it is not cut off)."""
        node = self._node(node)
        if hasattr(self.backend, "heal_partition"):
            self.backend.heal_partition(node)

    @property
    def partitioned(self) -> set[int]:
        """Nodes currently cut off by :meth:`partition`."""
        return set(getattr(self.backend, "partitioned", ()))

    def status(self) -> ClusterStatus:
        """Broker -> ``up``/``paused``/``dead``/``stopped`` (a crashed node shows ``dead``).

        A dict as always; its ``.quorum`` (and its repr) add the controller quorum:
        the voters, their states and the active controller.
        """
        if self.backend is not None:
            for node_id, state in self.states.items():
                if state in ("up", "paused") and self.backend.exit_code(node_id) is not None:
                    self.states[node_id] = "dead"
        brokers = {n: s for n, s in self.states.items() if n in self.nodes}
        return ClusterStatus(brokers, self.quorum if self.spec is not None else None)

    def quorum(self, timeout: float = 1.0) -> kraft.QuorumState:
        """The controller quorum now: each voter's state and the active controller.

        Only running voters are asked (a paused one would not answer), each with Kafka's
        DescribeQuorum on its CONTROLLER listener; without a majority running nobody is
        asked: no controller can lead.
        """
        self._require_started()
        plan = self.quorum_plan
        states = {v: self.status_of(v) for v in plan.voters}
        for v in self.partitioned & set(plan.voters):
            states[v] = "cut off"
        leader, note = None, ""
        if not kraft.lost_by(plan, {v for v, s in states.items() if s != "up"}):
            by_id = {n.node_id: n for n in self.spec.all_nodes}
            leader = kraft.probe_leader(
                {v: (by_id[v].host, by_id[v].controller) for v, s in states.items()
                 if s == "up"}, timeout)
            note = "" if leader is not None else "no running voter says it leads"
        return kraft.QuorumState(plan, states, leader, note)

    def _why_stuck(self) -> str:
        """What a timed-out wait appends: the quorum's state when it has no leader."""
        try:
            return self.quorum().explain()
        except Exception as exc:  # noqa: BLE001 - an explanation must never hide the timeout
            return f"; (the controller quorum could not be asked: {exc})"

    # -------------------------------------------------------------- metadata
    def admin(self) -> AdminClient:
        """A shared admin client on the direct listeners (a blackholed proxy must not
        blind the lab to the cluster it is breaking)."""
        self._require_started()
        if self._admin is None:
            self._admin = AdminClient(config(self.direct_bootstrap_servers))
        return self._admin

    def live_brokers(self, timeout: float = 5.0) -> set[int]:
        """Node ids the controller currently lists as registered and unfenced."""
        return set(self.admin().list_topics(timeout=timeout).brokers)

    def _partition(self, topic: str, partition: int, timeout: float = 5.0) -> Any:
        """Partition metadata, or None while the answering broker does not know it yet."""
        meta = self.admin().list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None:
            return None
        return meta.partitions.get(partition)

    def _known_partition(self, topic: str, partition: int, timeout: float) -> Any:
        """Its metadata, waiting for a lagging broker (after ``create_topic`` saw one
        know it, another may not yet); still unknown after ``timeout``: a bad name."""
        try:
            return self.wait_partition(topic, partition, timeout)
        except ClusterNotReady:
            raise bad_value("topic/partition", f"{topic}/{partition}",
                            "an existing topic and partition (create_topic first)") from None

    def leader(self, topic: str, partition: int = 0, timeout: float = 5.0) -> int:
        """The node that leads ``topic``/``partition`` now (-1 while there is none)."""
        return self._known_partition(topic, partition, timeout).leader

    def isr(self, topic: str, partition: int = 0, timeout: float = 5.0) -> list[int]:
        """The in-sync replicas of ``topic``/``partition`` now."""
        return list(self._known_partition(topic, partition, timeout).isrs)

    def wait_partition(self, topic: str, partition: int = 0, timeout: float = 30.0) -> Any:
        """The partition's metadata once the answering broker knows it (right after a
        topic is created, or a broker restarted, one broker may not yet)."""
        return ready.wait_until(f"metadata of {topic}/{partition}",
                                lambda: self._partition(topic, partition), timeout,
                                explain=self._why_stuck)

    def wait_leader(self, topic: str, partition: int = 0, exclude: tuple[int, ...] = (),
                    timeout: float = 30.0) -> int:
        """Wait for a leader that is not in ``exclude`` (e.g. after killing the old one)."""
        def probe() -> int | None:
            meta = self._partition(topic, partition)
            ok = meta is not None and meta.leader >= 0 and meta.leader not in exclude
            return meta.leader if ok else None

        not_ = f" other than {', '.join(map(str, exclude))}" if exclude else ""
        return ready.wait_until(f"a leader of {topic}/{partition}{not_}", probe, timeout,
                                explain=self._why_stuck)

    def wait_isr(self, topic: str, partition: int, size: int, timeout: float = 60.0) -> list:
        """Wait until ``size`` replicas are in sync again (e.g. after a restart)."""
        def probe() -> list[int] | None:
            meta = self._partition(topic, partition)
            return list(meta.isrs) if meta is not None and len(meta.isrs) >= size else None

        return ready.wait_until(f"{size} replicas in the ISR of {topic}/{partition}",
                                probe, timeout, explain=self._why_stuck)

    def create_topic(self, name: str, partitions: int = 3, replication_factor: int | None = None,
                     config: dict[str, Any] | None = None, timeout: float = 30.0) -> str:
        """Create a topic and wait until every partition has a leader; returns its name."""
        if not isinstance(partitions, int) or partitions < 1:
            raise bad_value("partitions", partitions, "a whole number >= 1")
        rf = self.spec.replication if replication_factor is None else replication_factor
        if not isinstance(rf, int) or not 1 <= rf <= self.brokers:
            raise bad_value("replication_factor", replication_factor,
                            f"None or a whole number from 1 to {self.brokers}")
        topic = NewTopic(name, partitions, rf,
                         config={k: str(v) for k, v in (config or {}).items()})
        try:
            self.admin().create_topics([topic])[name].result(timeout=timeout)
        except KafkaException as exc:
            raise ClusterNotReady(f"could not create topic {name!r}: {exc.args[0].str()}"
                                  ) from exc

        def has_leaders() -> bool:
            meta = self.admin().list_topics(name, timeout=5).topics.get(name)
            return (meta is not None and len(meta.partitions) == partitions
                    and all(p.leader >= 0 for p in meta.partitions.values()))

        ready.wait_until(f"topic {name!r} with a leader on each of its {partitions} "
                         "partitions", has_leaders, timeout, explain=self._why_stuck)
        return name

    def delete_topics(self, names: list[str], timeout: float = 30.0) -> None:
        """Delete topics no longer needed (one already gone is no error): a node restarted
        after a kill loads every log it holds before it starts, a calibration's hundreds."""
        for name, future in self.admin().delete_topics(list(names)).items():
            try:
                future.result(timeout=timeout)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise ClusterNotReady(f"could not delete topic {name!r}: "
                                          f"{exc.args[0].str()}") from exc

    # -------------------------------------------------------------------- logs
    def log_path(self, node: int) -> Path:
        return self.backend.log_path(self._node(node))  # docker refreshes it first

    def logs(self, node: int, lines: int = 50) -> str:
        """The last ``lines`` lines of a node's broker log."""
        return tail(self.log_path(node), lines)

    # ------------------------------------------------------------- Kafka's tools
    def tool_command(self, name: str, *args: str) -> str:
        """The shell line to run Kafka's tool ``name`` (e.g. ``"kafka-topics"``) against
        this cluster, to paste in a terminal; on the direct listeners, so fault proxies
        never hide the answer. ``cluster.tool(...)`` runs it (see deliverylab.cluster.tools)."""
        from .tools import command_line

        return command_line(name, *args, bootstrap=self.direct_bootstrap_servers)

    def tool(self, name: str, *args: str, timeout: float = 120.0) -> str:
        """Run :meth:`tool_command` and return the tool's standard output."""
        from .tools import run

        return run(name, *args, bootstrap=self.direct_bootstrap_servers, timeout=timeout)


@atexit.register
def _stop_all() -> None:
    for cluster in list(_LIVE):
        cluster.stop()
