"""The Nemesis: the cluster faults of the registry, and Schedules of faults.

A fault button in a chapter and a papermill parameter must do *the same thing*, so both
go through one door: a :class:`Nemesis` method (``nemesis.kill_leader("orders")``) or,
for names coming from parameters, ``nemesis.apply("kill_leader", topic="orders")``,
which validates the name against :data:`deliverylab.faults.FAULTS` and calls that same
method. Every fault is appended to the History as a ``fault`` op (process
``"nemesis"``, outcome ``info``), so one timeline holds what the clients were told and
what was done to them; the method also returns a :class:`FaultRecord` with the live
handle of a fault that completes later (an :class:`AckLoss`).

A :class:`Schedule` fires faults without a person: at a time offset, after a number of
messages sent (the workload calls ``schedule.tick(sent)``), or at seeded random points
(:meth:`Schedule.random`), so a headless run reproduces a classroom run exactly.
"""

from __future__ import annotations

import inspect
import random
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaException

from .cluster import ready
from .errors import LabError, QuorumWarning, bad_value
from .faults import FAULTS, fault
from .framing import api_key
from .history import History
from .proxy import AckLoss, Hold

if TYPE_CHECKING:
    from .cluster import Cluster

#: The registry's faults the Nemesis does itself (each is a method of the same name).
CLUSTER_FAULTS: tuple[str, ...] = tuple(n for n, f in FAULTS.items() if f.kind == "cluster")
#: Faults that need a node number; ``Schedule.random`` draws one for them.
NODE_FAULTS = frozenset({"kill_broker", "pause_broker", "resume_broker", "restart_broker",
                         "partition_client", "delay_client"})


class NemesisError(LabError):
    """A fault could not be applied (no proxy, no leader...); the message says why."""


@dataclass(frozen=True)
class FaultRecord:
    """One fault as it happened: what was asked, when, what it did, to which node.

    ``time`` is seconds on the History's clock; ``wall`` is Unix time, for logs.
    ``handle`` is the live object behind a fault that completes later (an
    :class:`AckLoss` for ``lose_ack``: ``record.handle.wait(10)``).
    """

    name: str
    args: dict[str, Any]
    time: float
    wall: float
    did: str
    node: int | None = None
    handle: Any = field(default=None, repr=False, compare=False)


def validate(name: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Check a fault name and its arguments (as given by a papermill parameter).

    Raises ``BadValue`` naming the accepted faults, or the accepted arguments of that
    fault. Returns the arguments as a plain dict.
    """
    fault(name)  # a name outside the registry: one line listing the registry
    if name not in CLUSTER_FAULTS:
        raise bad_value("fault", name, "a cluster fault the Nemesis does: "
                        + ", ".join(CLUSTER_FAULTS) + f" ({name} is a client fault: "
                        "the client does it, e.g. Scenario(mode, fault=...))")
    args = dict(args or {})
    params = [p for p in inspect.signature(getattr(Nemesis, name)).parameters.values()
              if p.name != "self"]
    accepted = {p.name for p in params}
    for key in args:
        if key not in accepted:
            raise bad_value(f"{name} argument", key,
                            "one of " + ", ".join(sorted(accepted)) if accepted
                            else "no arguments")
    missing = [p.name for p in params
               if p.default is inspect.Parameter.empty and p.name not in args]
    if missing:
        raise bad_value(f"{name} arguments", args, "values for " + ", ".join(missing))
    return args


def wait_whole(cluster: Cluster, topics: Iterable[str], timeout: float = 120.0,
               steady: float = 4.0) -> dict[str, Any]:
    """Wait until every broker is registered and every partition of ``topics`` has a
    leader and all its replicas in sync -- and has stayed so for ``steady`` seconds.
    Returns the metadata that showed it whole (topic name -> ``TopicMetadata``): a
    second metadata request may reach a broker that does not know the topic yet, so
    callers read leaders and replicas from this, never from a new request.

    Why steady: right after a broker is killed and restarted, the metadata may still
    show the old registration (the controller fences a dead broker only after
    ``broker.session.timeout.ms``, 3 s here); "whole" must outlast that.
    """
    nodes = set(cluster.nodes)
    topics = list(topics)
    since: list[float] = []

    def whole_now() -> dict[str, Any] | None:
        md = cluster.admin().list_topics(timeout=5)
        if set(md.brokers) != nodes:
            return None
        seen = {}
        for name in topics:
            meta = md.topics.get(name)
            if meta is None or meta.error is not None or not meta.partitions:
                return None
            for p in meta.partitions.values():
                if p.leader < 0 or sorted(p.isrs) != sorted(p.replicas):
                    return None
            seen[name] = meta
        return seen

    def whole() -> dict[str, Any] | None:
        try:
            now = whole_now()
        except KafkaException:
            now = None
        if now is None:
            since.clear()
            return None
        if not since:
            since.append(time.monotonic())
        # a truthy value even for no topics: "every broker up" held
        return (now or {"": None}) if time.monotonic() - since[0] >= steady else None

    seen = ready.wait_until(f"every broker up and every replica of {', '.join(topics) or '-'} "
                     f"in sync for {steady:g} s", whole, ready.Deadline(timeout),
                     explain=getattr(cluster, "_why_stuck", None))
    return {name: meta for name, meta in seen.items() if name}


class Nemesis:
    """The registry's cluster faults over one cluster, each a ``fault`` op in the History.

    Args:
        cluster: the running :class:`~deliverylab.cluster.Cluster`.
        history: where fault ops go (a new History if omitted), so faults share the
            clients' clock and timeline.
    """

    def __init__(self, cluster: Cluster, history: History | None = None) -> None:
        self.cluster = cluster
        self.history = history if history is not None else History()
        self.records: list[FaultRecord] = []
        #: (followers paused, leader killed) times per isolation: while both held, the
        #: leader alone acknowledged writes.
        self.windows: list[tuple[float, float, str]] = []
        self._isolated: dict[tuple[str, int], tuple[int, float, list[int]]] = {}
        self._topics: set[str] = set()  # topics faults touched: heal waits for them
        self._holds: list[Hold] = []  # holds armed, until released or injected
        self._lock = threading.RLock()  # a button and a schedule may fire together

    def now(self) -> float:
        """Seconds on the History's clock."""
        return self.history.now()

    def _record(self, name: str, args: dict[str, Any], t: float, did: str,
                node: int | None = None, handle: Any = None) -> FaultRecord:
        record = FaultRecord(name, args, round(t, 6), time.time(), did, node, handle)
        self.records.append(record)
        self.history.record("nemesis", "fault", "info", detail=did, time=record.time,
                            fault=name, partition=args.get("partition") if args.get(
                                "topic") else None, topic=args.get("topic"))
        return record

    def apply(self, name: str, **args: Any) -> FaultRecord:
        """Apply a fault given by name: the door for schedules and parameters."""
        args = validate(name, args)
        return getattr(self, name)(**args)

    def _proxy(self, node: int, name: str) -> Any:
        if not self.cluster.proxies:
            raise NemesisError(f"{name} needs the fault proxy: start the cluster with "
                               "Cluster.start(..., proxy=True)")
        if node not in self.cluster.proxies:
            raise bad_value("node", node, "a node number from "
                            f"{min(self.cluster.proxies)} to {max(self.cluster.proxies)}")
        return self.cluster.proxies[node]

    def _leader(self, topic: str, partition: int) -> int:
        self._topics.add(topic)
        return self.cluster.wait_leader(topic, partition, timeout=10)

    # ------------------------------------------------------------------ faults
    def lose_ack(self, node: int | None = None, count: int = 1, topic: str | None = None,
                 partition: int = 0, api: str = "Produce",
                 client_id: str | None = None) -> FaultRecord:
        """Lose the next ``count`` acks (responses) of ``api``; the broker did the work.

        Aimed at ``node``'s proxy; or, with ``topic``, at the proxy of that partition's
        leader now; or, with neither, at every proxy sharing one budget (the first
        ``count`` acks anywhere). ``client_id`` limits it to one client's requests.
        ``record.handle`` is the :class:`AckLoss`:
        ``record.handle.wait(10)`` returns once the acks were really dropped.
        """
        key = api_key(api)
        with self._lock:
            t = self.now()
            loss = AckLoss(count, key, client_id)
            args = {"node": node, "count": count, "topic": topic, "partition": partition,
                    "api": api, "client_id": client_id}
            if node is None and topic is not None:
                node = self._leader(topic, partition)
            if node is not None:
                self._proxy(node, "lose_ack").arm(loss)
                did = f"will drop the next {count} {loss.api} response(s) of broker {node}"
            else:
                for n in sorted(self.cluster.proxies) or [0]:
                    self._proxy(n, "lose_ack").arm(loss)
                did = f"will drop the next {count} {loss.api} response(s) of any broker"
            return self._record("lose_ack", args, t, did, node, loss)

    def hold_request(self, api: str = "Produce", count: int = 1, skip: int = 0,
                     client_id: str | None = None, node: int | None = None) -> FaultRecord:
        """Keep the next ``count`` requests of ``api`` (after ``skip``) from the broker.

        Armed on ``node``'s proxy, or on every proxy with one shared budget. The client
        hears nothing and gives up after its own timeout; :meth:`release_held` or
        :meth:`inject_held` delivers the request late. ``record.handle`` is the
        :class:`~deliverylab.proxy.Hold`: ``record.handle.wait(10)`` returns once held.
        """
        with self._lock:
            t = self.now()
            hold = Hold(api, count, skip, client_id)
            nodes = [node] if node is not None else sorted(self.cluster.proxies) or [0]
            for n in nodes:
                self._proxy(n, "hold_request").arm_hold(hold)
            self._holds.append(hold)
            args = {"api": api, "count": count, "skip": skip, "client_id": client_id,
                    "node": node}
            who = f" of client {client_id}" if client_id else ""
            did = (f"will hold the next {count} {hold.api} request(s){who}"
                   + (f" after letting {skip} through" if skip else ""))
            return self._record("hold_request", args, t, did, node, hold)

    def _deliver_held(self, name: str, how: str, timeout: float) -> FaultRecord:
        with self._lock:
            t = self.now()
            holds, self._holds = [h for h in self._holds if h.held], [
                h for h in self._holds if not h.held]
            if not holds:
                raise NemesisError(f"{name}: no request is held (call hold_request first "
                                   "and wait until its handle says it holds one)")
            errors: list[str | None] = []
            for hold in holds:
                errors += hold.release(timeout) if how == "released" else hold.inject(timeout)
            apis = sorted({h.api for h in holds})
            did = (f"{how} {len(errors)} held {'/'.join(apis)} request(s); the broker "
                   f"answered {', '.join(str(e) for e in errors)}")
            return self._record(name, {}, t, did, None, holds)

    def release_held(self, timeout: float = 10.0) -> FaultRecord:
        """Send the held requests on on their clients' connections (a late retry); the
        broker's answers land in the fault op's detail."""
        return self._deliver_held("release_held", "released", timeout)

    def inject_held(self, timeout: float = 10.0) -> FaultRecord:
        """Send the held requests to the broker on the proxy's own connection, after
        their clients gave up (a stale request surfacing); the broker's answers land in
        the fault op's detail (``NONE``: the stale request took effect)."""
        return self._deliver_held("inject_held", "injected", timeout)

    def kill_leader(self, topic: str, partition: int = 0) -> FaultRecord:
        """SIGKILL the broker leading ``topic``/``partition`` now.

        After :meth:`pause_followers`, the leader remembered then: with its followers
        frozen, asking the cluster "who leads?" may wait on a paused broker.
        """
        return self._kill_leader(topic, partition)

    def _kill_leader(self, topic: str, partition: int,
                     allow_quorum_loss: bool | None = None) -> FaultRecord:
        with self._lock:
            t = self.now()
            isolated = self._isolated.pop((topic, partition), None)
            if isolated is not None and self.cluster.status().get(isolated[0]) == "up":
                leader = isolated[0]
                self.windows.append((isolated[1], t, topic))
            else:
                leader = self._leader(topic, partition)
            with warnings.catch_warnings():  # only isolate_leader allows it: it says why
                warnings.simplefilter("ignore", QuorumWarning)
                self.cluster.kill(leader, allow_quorum_loss=allow_quorum_loss)
            return self._record("kill_leader", {"topic": topic, "partition": partition}, t,
                                f"killed broker {leader}, leader of {topic}/{partition}",
                                leader)

    def pause_followers(self, topic: str, partition: int = 0) -> FaultRecord:
        """SIGSTOP the brokers that copy ``topic``/``partition``: the leader alone now
        acknowledges writes (with ``acks=1``) that no follower has.

        Followers copy within milliseconds, so a kill alone rarely catches a write only
        the leader has; paused, they stay in the ISR for ``replica.lag.time.max.ms`` and
        every write acknowledged in between is one only the leader holds. On 3 nodes
        the two followers are two of the three controller voters: the quorum is gone
        until heal, so no controller fences them or shrinks the ISR, and the lesson
        holds -- this fault takes the quorum away on purpose (every other pause or kill
        that would is refused, see ``Cluster(allow_quorum_loss=...)``).
        """
        with self._lock:
            t = self.now()
            leader = self._leader(topic, partition)
            meta = self.cluster.wait_partition(topic, partition)
            followers = [n for n in meta.replicas if n != leader]
            if not followers:
                raise NemesisError(f"{topic}/{partition} has no follower to pause: this "
                                   "needs a replicated topic on 3 brokers")
            with warnings.catch_warnings():  # deliberate: the docstring says why
                warnings.simplefilter("ignore", QuorumWarning)
                for node in followers:
                    self.cluster.pause(node, allow_quorum_loss=True)
            self._isolated[(topic, partition)] = (leader, t, followers)
            return self._record(
                "pause_followers", {"topic": topic, "partition": partition}, t,
                f"paused brokers {followers} (followers of {topic}/{partition}); broker "
                f"{leader} now acknowledges writes nobody copies", leader)

    def unavailable(self, name: str) -> str | None:
        """Why fault ``name`` cannot run on this cluster, or None when it can: the
        reason a button shows instead of pretending to work."""
        if fault(name).needs != "docker":
            return None
        if not hasattr(self.cluster.backend, "partition"):
            return (f"{name} needs containers: a network partition cuts one broker's "
                    "network, and local brokers share the host's loopback (this cluster "
                    f"is backend={self.cluster.backend_name!r}; start it with "
                    "backend='docker')")
        if self.cluster.size < 3:
            return (f"{name} needs a leader with followers to cut it off from: this "
                    f"cluster has {self.cluster.size} broker(s), start it with brokers=3")
        return None

    def partition_leader(self, topic: str, partition: int = 0) -> FaultRecord:
        """Cut the broker leading ``topic``/``partition`` off from the other brokers.

        A real partition (containers): replication and the controller quorum lose it,
        clients do not. It keeps believing it leads until the partition heals, so with
        ``acks=1`` it acknowledges writes the new leader never gets.
        """
        with self._lock:
            why = self.unavailable("partition_leader")
            if why:
                raise NemesisError(why)
            t = self.now()
            leader = self._leader(topic, partition)
            self.cluster.partition(leader)
            return self._record("partition_leader", {"topic": topic, "partition": partition},
                                t, f"cut broker {leader}, leader of {topic}/{partition}, off "
                                "from the other brokers (clients still reach it)", node=leader)

    def isolate_leader(self, topic: str, partition: int = 0,
                       hold: float = 1.5) -> FaultRecord:
        """Pause the followers, let the leader acknowledge writes only it has, kill it,
        resume the followers; returns once a follower leads instead.

        The loss of ``acks=1`` on demand: the kill waits (up to ``hold`` seconds) until
        a write to a partition that leader leads was acknowledged after the pause.

        The kill may leave fewer than a majority of the controller voters running for
        the moment until the followers resume (the leader and a paused follower are both
        voters: on 2 brokers always, on 4-5 when the replicas fall so): allowed here,
        since the resume follows at once and only the killed leader stays down -- which
        any cluster of 2 brokers or more survives.
        """
        with self._lock:
            # Ask for leaders now: with the followers paused, metadata requests may hang.
            leader = self._leader(topic, partition)
            led = {p for p in range(self._partition_count(topic))
                   if self.cluster.leader(topic, p) == leader}
            paused = self.pause_followers(topic, partition)
            since = paused.time
            followers = self._isolated[(topic, partition)][2]
            end = time.monotonic() + hold
            while time.monotonic() < end and not any(
                    op.topic == topic for op in self.history
                    if op.kind == "send" and op.outcome == "ok" and op.time >= since
                    and op.partition in led):
                time.sleep(0.05)
            time.sleep(0.2)
            try:
                killed = self._kill_leader(topic, partition, allow_quorum_loss=True)
            finally:
                for node in followers:
                    self.cluster.resume(node)
            self.cluster.wait_leader(topic, partition, exclude=(leader,), timeout=60)
            return self._record("isolate_leader", {"topic": topic, "partition": partition},
                                killed.time, f"isolated and killed broker {leader}; "
                                f"followers {followers} resumed and took over", leader)

    def _partition_count(self, topic: str) -> int:
        meta = self.cluster.admin().list_topics(topic, timeout=5).topics.get(topic)
        return len(meta.partitions) if meta is not None else 1

    def exposed(self) -> list[str]:
        """Values acknowledged while a leader's followers were paused and it was not yet
        killed: the writes only the doomed leader had."""
        return [v for start, end, topic in self.windows
                for v in self.history.acked_between(start, end, topic)]

    def kill_broker(self, node: int) -> FaultRecord:
        """SIGKILL one broker: no shutdown, no flush."""
        return self._node_fault("kill_broker", node, self.cluster.kill, "killed broker")

    def pause_broker(self, node: int) -> FaultRecord:
        """SIGSTOP one broker: alive but silent (fenced after broker.session.timeout.ms)."""
        return self._node_fault("pause_broker", node, self.cluster.pause, "paused broker")

    def resume_broker(self, node: int) -> FaultRecord:
        """SIGCONT a paused broker."""
        return self._node_fault("resume_broker", node, self.cluster.resume, "resumed broker")

    def restart_broker(self, node: int) -> FaultRecord:
        """Stop one broker (gracefully if it runs) and start it again."""
        return self._node_fault("restart_broker", node, self.cluster.restart,
                                "restarted broker")

    # ------------------------------------------------------ Connect workers
    def _worker_fault(self, name: str, worker: int | None, connector: str | None,
                      act: Callable[[Any, int], str], which: str = "task") -> FaultRecord:
        """A fault done to a worker of the cluster's Connect cluster (chapter 07).

        ``worker`` None means the worker that runs ``connector``'s task 0 now (the
        connector created last if None) for ``which="task"``, or every worker in the
        state ``which`` (``"paused"``, ``"dead"``).
        """
        with self._lock:
            t = self.now()
            connect = self._connect_for(connector)
            if worker is not None:
                targets = [connect.worker(worker).index]
            elif which == "task":
                name_ = connector or connect.last_connector()
                owner = connect.task_worker(name_)
                if owner is None:
                    raise NemesisError(f"{name}: no worker runs a task of {name_!r} now "
                                       "(is the connector created, its task assigned?)")
                targets = [owner]
            else:
                targets = [w.index for w in connect.workers
                           if connect.status_of(w.index) == which]
            did = "; ".join(act(connect, i) for i in targets) or f"no {which} worker"
            args = {"worker": targets[0]} if len(targets) == 1 else {}
            return self._record(name, args, t, did, targets[0] if len(targets) == 1
                                else None)

    def _connect_for(self, connector: str | None) -> Any:
        """The Connect cluster that holds ``connector`` (a chapter may run two: one
        without exactly-once support, one with); the one started last if None."""
        if connector is not None:
            for connect in reversed(self.cluster.connects):
                if connector in connect.connectors:
                    return connect
        return self.cluster.connected

    def kill_worker(self, worker: int | None = None,
                    connector: str | None = None) -> FaultRecord:
        """SIGKILL the Connect worker running the task: no offset commit."""
        return self._worker_fault("kill_worker", worker, connector,
                                  lambda c, i: c.kill(i))

    def stop_worker(self, worker: int | None = None,
                    connector: str | None = None) -> FaultRecord:
        """SIGTERM the Connect worker running the task: a graceful stop."""
        return self._worker_fault("stop_worker", worker, connector,
                                  lambda c, i: c.terminate(i))

    def pause_worker(self, worker: int | None = None,
                     connector: str | None = None) -> FaultRecord:
        """SIGSTOP the Connect worker running the task."""
        return self._worker_fault("pause_worker", worker, connector,
                                  lambda c, i: c.pause(i))

    def resume_worker(self, worker: int | None = None,
                      connector: str | None = None) -> FaultRecord:
        """SIGCONT a paused Connect worker (every paused one by default) of the Connect
        cluster that holds ``connector``."""
        return self._worker_fault("resume_worker", worker, connector,
                                  lambda c, i: c.resume(i), which="paused")

    def restart_worker(self, worker: int | None = None,
                       connector: str | None = None) -> FaultRecord:
        """Start a dead Connect worker again (every dead one by default) of the Connect
        cluster that holds ``connector``."""
        return self._worker_fault("restart_worker", worker, connector,
                                  lambda c, i: c.restart(i), which="dead")

    def restart_task(self, connector: str | None = None, task: int = 0) -> FaultRecord:
        """Restart a connector's task through Connect's REST API."""
        with self._lock:
            t = self.now()
            connect = self._connect_for(connector)
            did = connect.restart_task(connector or connect.last_connector(), task)
            return self._record("restart_task", {"task": task}, t, did)

    def partition_client(self, node: int) -> FaultRecord:
        """Cut every client off one broker (its proxy lets nothing through).

        Replication and the controllers do not pass through the proxy, so the broker
        stays in the cluster: only clients see silence, then their own timeouts.
        """
        proxy = self._proxy(node, "partition_client")
        return self._node_fault("partition_client", node, lambda n: proxy.blackhole(),
                                "cut clients off broker")

    def delay_client(self, node: int, ms: float = 200.0) -> FaultRecord:
        """Delay every byte between clients and one broker by ``ms`` each way."""
        proxy = self._proxy(node, "delay_client")
        with self._lock:
            t = self.now()
            proxy.delay(ms)
            return self._record("delay_client", {"node": node, "ms": ms}, t,
                                f"delayed client traffic of broker {node} by {ms:g} ms", node)

    def _node_fault(self, name: str, node: int, action: Callable[[int], Any],
                    verb: str) -> FaultRecord:
        if node not in self.cluster.nodes:
            raise bad_value("node", node, f"a node number from 1 to {self.cluster.size}")
        with self._lock:
            t = self.now()
            action(node)
            return self._record(name, {"node": node}, t, f"{verb} {node}", node)

    def heal(self) -> FaultRecord:
        """Undo everything, then wait until the cluster is whole again.

        Network partitions (docker backend) and proxies first: the cluster's own admin
        client must not stall on a blackholed proxy. Then paused brokers resume and dead
        ones restart, and the call returns once every broker is registered and every
        replica of the topics the faults touched is in sync (a client asking right after
        a restart may otherwise meet a broker not yet back). Connect workers last: paused
        ones resume, dead ones restart and answer ``/health``.
        """
        with self._lock:
            t = self.now()
            rejoined = sorted(getattr(self.cluster, "partitioned", ()))
            for node in rejoined:
                self.cluster.heal_partition(node)
            for proxy in self.cluster.proxies.values():
                proxy.heal()
            resumed, restarted = [], []
            for node, state in sorted(self.cluster.status().items()):
                if state == "paused":
                    self.cluster.resume(node)
                    resumed.append(node)
            for node, state in sorted(self.cluster.status().items()):
                if state == "dead":
                    self.cluster.restart(node)
                    restarted.append(node)
            self._isolated.clear()
            if resumed or restarted or rejoined:
                wait_whole(self.cluster, sorted(self._topics))
            # Connect workers (chapter 07) after the brokers they need: resumed, restarted.
            workers = [line for connect in getattr(self.cluster, "connects", ())
                       for line in connect.heal()]
            parts = [f"reconnected {rejoined}"] if rejoined else []
            if resumed:
                parts.append(f"resumed {resumed}")
            if restarted:
                parts.append(f"restarted {restarted}")
            parts += workers
            parts.append("healed the proxies" if self.cluster.proxies else "no proxies")
            return self._record("heal", {}, t, "; ".join(parts))


# --- schedules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class At:
    """Trigger: ``seconds`` after the schedule started."""

    seconds: float


@dataclass(frozen=True)
class Sent:
    """Trigger: once the workload reports ``count`` messages sent."""

    count: int


Trigger = At | Sent


@dataclass(frozen=True)
class Step:
    """One scheduled fault: its trigger, its name, its arguments."""

    trigger: Trigger
    fault: str
    args: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.trigger, At):
            s = self.trigger.seconds
            if not isinstance(s, (int, float)) or isinstance(s, bool) or s < 0:
                raise bad_value("at", s, "a number of seconds >= 0")
        elif isinstance(self.trigger, Sent):
            c = self.trigger.count
            if not isinstance(c, int) or isinstance(c, bool) or c < 0:
                raise bad_value("sent", c, "a whole number of messages >= 0")
        else:
            raise bad_value("trigger", self.trigger, "At(seconds) or Sent(count)")
        fault(self.fault)  # a name outside the registry fails here, before any run
        object.__setattr__(self, "args", dict(self.args))

    def to_param(self) -> dict[str, Any]:
        """The papermill form: ``{"sent": 500, "fault": "kill_leader", "topic": "t"}``."""
        when = ({"at": self.trigger.seconds} if isinstance(self.trigger, At)
                else {"sent": self.trigger.count})
        return {**when, "fault": self.fault, **self.args}


def _step(item: Step | Mapping[str, Any] | Sequence[Any]) -> Step:
    """A Step from a Step, a papermill dict, or a ``(trigger, fault[, args])`` tuple."""
    if isinstance(item, Step):
        return item
    if isinstance(item, Mapping):
        rest = dict(item)
        if ("at" in rest) == ("sent" in rest):
            raise bad_value("schedule step", item, "a dict with exactly one of 'at' "
                            "(seconds) or 'sent' (messages), and 'fault'")
        trigger: Trigger = At(rest.pop("at")) if "at" in rest else Sent(rest.pop("sent"))
        if "fault" not in rest:
            raise bad_value("schedule step", item, "a dict with a 'fault' name")
        fault = rest.pop("fault")
        args = rest.pop("args", {})
        return Step(trigger, fault, {**args, **rest})
    if isinstance(item, Sequence) and not isinstance(item, str) and len(item) in (2, 3):
        trigger, fault = item[0], item[1]
        if isinstance(trigger, (int, float)) and not isinstance(trigger, bool):
            trigger = At(float(trigger))  # a bare number is a time offset
        args = dict(item[2]) if len(item) == 3 else {}
        return Step(trigger, fault, args)
    raise bad_value("schedule step", item,
                    "a Step, a dict like {'sent': 500, 'fault': 'kill_leader', 'topic': 't'}"
                    ", or a tuple (At(5) or Sent(500), 'fault name', {args})")


class Schedule:
    """Faults fired by triggers: time offsets and message counts.

    The workload calls :meth:`tick` with its count of messages sent (as often as it
    likes); each due step fires once, in list order, through ``nemesis.apply`` -- the
    same door a button uses. Count triggers are exactly reproducible; time triggers are
    as precise as the ticks.

    >>> s = Schedule([(Sent(500), "kill_leader", {"topic": "t"}), (Sent(900), "heal")])
    >>> s = Schedule([{"sent": 500, "fault": "kill_leader", "topic": "t"}])  # papermill
    """

    def __init__(self, steps: Iterable[Step | Mapping[str, Any] | Sequence[Any]] = (),
                 seed: int | None = None) -> None:
        self.steps: tuple[Step, ...] = tuple(_step(s) for s in steps)
        self.seed = seed
        self.fired: list[tuple[Step, FaultRecord]] = []
        self._next = 0  # steps are fired in order; index of the first not fired
        self._nemesis: Any = None
        self._t0: float | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ constructors
    @classmethod
    def random(cls, seed: int, faults: Sequence[str] = ("lose_ack", "kill_leader",
                                                        "pause_broker", "partition_client"),
               steps: int = 3, sent: tuple[int, int] | None = (100, 1000),
               seconds: tuple[float, float] | None = None, topic: str | None = None,
               nodes: Sequence[int] = (1, 2, 3), heal: bool = True) -> Schedule:
        """A seeded random schedule: the same seed gives the same faults, always.

        The trigger range (``sent`` messages, or ``seconds`` if given) is cut into
        ``steps`` equal slots; each slot gets one fault drawn from ``faults`` at a
        random point of its first half, and (with ``heal``) a ``heal`` at three
        quarters, so faults never overlap and the run ends healed. Faults needing a
        node get one drawn from ``nodes``; ``kill_leader`` needs ``topic``;
        ``lose_ack`` aims at ``topic``'s leader if given, else at any broker.
        """
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise bad_value("seed", seed, "a whole number")
        names = [faults] if isinstance(faults, str) else list(faults)
        if not names:
            raise bad_value("faults", faults, "at least one of " + ", ".join(CLUSTER_FAULTS))
        for name in names:
            validate(name, _random_args(name, random.Random(0), topic or "t", (1,)))
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise bad_value("steps", steps, "a whole number >= 1")
        if "kill_leader" in names and topic is None:
            raise bad_value("topic", topic, "a topic name (kill_leader needs one)")
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise bad_value("steps", steps, "a whole number >= 1")
        if seconds is not None:
            lo, hi = seconds
        elif sent is not None:
            lo, hi = sent
        else:
            raise bad_value("sent/seconds", None, "a (low, high) range for one of them")
        if not 0 <= lo < hi:
            raise bad_value("range", (lo, hi), "(low, high) with 0 <= low < high")

        def make(x: float) -> Trigger:
            return At(round(x, 3)) if seconds is not None else Sent(int(x))

        rng = random.Random(seed)
        slot = (hi - lo) / steps
        out: list[Step] = []
        for i in range(steps):
            name = rng.choice(names)
            start = lo + i * slot
            out.append(Step(make(start + rng.uniform(0, slot / 2)), name,
                            _random_args(name, rng, topic, nodes)))
            if heal and name != "heal":
                out.append(Step(make(start + slot * 3 / 4), "heal"))
        return cls(out, seed=seed)

    @classmethod
    def spread(cls, items: Iterable[str | Mapping[str, Any]], count: int) -> Schedule:
        """A chapter's papermill ``faults``: fault names spread evenly over a stream of
        ``count`` values (with two, after 1/3 and 2/3 of it), or dicts
        ``{"fault": name, "sent": n}`` to fire after exactly ``n`` values."""
        items = list(items or ())
        bare = sum(isinstance(item, str) for item in items)
        steps: list[Step] = []
        k = 0
        for item in items:
            if isinstance(item, str):
                k += 1
                steps.append(Step(Sent(max(1, round(count * k / (bare + 1)))), item))
            elif isinstance(item, Mapping) and "sent" in item:
                sent = item["sent"]
                if not isinstance(sent, int) or isinstance(sent, bool) or not 0 <= sent <= count:
                    raise bad_value("sent", sent, f"a whole number from 0 to {count}")
                steps.append(_step(item))
            else:
                raise bad_value("fault", item, "a fault name, or {'fault': name, 'sent': n}")
        return cls(sorted(steps, key=lambda step: step.trigger.count))

    @classmethod
    def from_params(cls, params: Iterable[Mapping[str, Any]] | None) -> Schedule:
        """From a papermill parameter: a list of dicts (see :meth:`Step.to_param`)."""
        return cls(params or ())

    def to_params(self) -> list[dict[str, Any]]:
        return [s.to_param() for s in self.steps]

    # ------------------------------------------------------------------ running
    def start(self, nemesis: Any) -> Schedule:
        """Bind to a Nemesis, or a FaultPanel (anything with ``apply`` and ``now``: a
        panel presses its button of that name), and start the clock."""
        if isinstance(nemesis, Nemesis):
            for step in self.steps:
                validate(step.fault, step.args)
        with self._lock:
            self._nemesis = nemesis
            self._t0 = nemesis.now()
            self._next = 0
            self.fired.clear()
        return self

    def elapsed(self) -> float:
        if self._t0 is None:
            return 0.0
        return self._nemesis.now() - self._t0

    def due(self, step: Step, sent: int | None) -> bool:
        if isinstance(step.trigger, At):
            return self.elapsed() >= step.trigger.seconds
        return sent is not None and sent >= step.trigger.count

    def tick(self, sent: int | None = None) -> list[FaultRecord]:
        """Fire the due steps (in order; a step waits for the ones before it).

        ``sent`` is the workload's count of messages sent so far. Returns the records
        of the faults fired by this call (usually none).
        """
        if self._nemesis is None:
            raise LabError("call schedule.start(nemesis) before tick()")
        fired: list[FaultRecord] = []
        with self._lock:
            while self._next < len(self.steps) and self.due(self.steps[self._next], sent):
                step = self.steps[self._next]
                self._next += 1  # fired, even if it raises: never fire it twice
                record = self._nemesis.apply(step.fault, **step.args)
                self.fired.append((step, record))
                fired.append(record)
        return fired

    @property
    def done(self) -> bool:
        return self._next >= len(self.steps)

    @property
    def pending(self) -> tuple[Step, ...]:
        return self.steps[self._next:]

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self):
        return iter(self.steps)

    def __repr__(self) -> str:
        seed = f" seed={self.seed}" if self.seed is not None else ""
        body = "; ".join(_describe(s) for s in self.steps)
        return f"<Schedule{seed} {len(self.steps)} step(s): {body}>"


def _describe(step: Step) -> str:
    when = (f"at {step.trigger.seconds:g}s" if isinstance(step.trigger, At)
            else f"sent {step.trigger.count}")
    args = ", ".join(f"{k}={v!r}" for k, v in step.args.items())
    return f"{when} {step.fault}({args})"


def _random_args(name: str, rng: random.Random, topic: str | None,
                 nodes: Sequence[int]) -> dict[str, Any]:
    if name in NODE_FAULTS:
        return {"node": rng.choice(list(nodes))}
    if name == "kill_leader":
        return {"topic": topic}
    if name == "lose_ack":
        return {"topic": topic} if topic is not None else {}
    return {}
