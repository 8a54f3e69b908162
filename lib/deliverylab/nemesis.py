"""The Nemesis: the cluster faults of the registry, one door for every caller.

A fault button in a chapter and a papermill parameter must do *the same thing*, so both
go through one door: a :class:`Nemesis` method (``nemesis.kill_leader("orders")``) or,
for names coming from parameters, ``nemesis.apply("kill_leader", topic="orders")``,
which validates the name against :data:`deliverylab.faults.FAULTS` and calls that same
method. Every fault is appended to the History as a ``fault`` op (process
``"nemesis"``, outcome ``info``), so one timeline holds what the clients were told and
what was done to them; the method also returns a :class:`FaultRecord` with the live
handle of a fault that completes later (an :class:`AckLoss`).

A Schedule (:mod:`deliverylab.schedule`) fires these faults without a person, through
the same door: at a time offset, after a number of messages sent, or at seeded random
points, so a headless run reproduces a classroom run exactly.
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .cluster import ready
from .errors import ClusterNotReady, LabError, QuorumWarning, TimedOut, bad_value
from .faults import FAULTS, fault
from .history import History, Op
from .process.lablog import warnings_to_log
from .proxy.framing import api_key
from .proxy.proxy import AckLoss, Hold
from .waiting import wait_until

if TYPE_CHECKING:
    from .cluster import Cluster

#: The registry's faults the Nemesis does itself (each is a method of the same name).
CLUSTER_FAULTS: tuple[str, ...] = tuple(n for n, f in FAULTS.items() if f.kind == "cluster")
#: Appended to a fault's line when it took the controller quorum away on purpose (the
#: cluster's QuorumWarning itself goes to the lab's log: process/lablog.py).
QUORUM_GONE = ("; on purpose, the controller quorum is gone until a voter is back "
               "(heal): no elections, no ISR changes")
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


#: A follower's fetch can wait this long in the leader's purgatory
#: (``replica.fetch.wait.max.ms``, Kafka's default 500 ms): see
#: :meth:`Nemesis.pause_followers`.
FETCH_WAIT_S = 0.5


def fetch_wait_s(cluster: Any) -> float:
    """The cluster's ``replica.fetch.wait.max.ms`` in seconds (brokers' default 0.5 s)."""
    raw = getattr(cluster, "overrides", {}).get("replica.fetch.wait.max.ms")
    return int(raw) / 1000 if raw is not None else FETCH_WAIT_S


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
        :class:`~deliverylab.proxy.proxy.Hold`: ``record.handle.wait(10)`` returns once held.
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
        frozen, asking the cluster "who leads?" may wait on a paused broker. That kill
        is the second step of the isolation, and allowed even where it leaves fewer than
        a majority of the controller voters running until the followers resume (the
        leader and a paused follower both voters: on 2 brokers always, on 4-5 when the
        replicas fall so); any other kill that would is refused as usual.
        """
        with self._lock:
            t = self.now()
            isolated = self._isolated.pop((topic, partition), None)
            allow = None
            if isolated is not None and self.cluster.status().get(isolated[0]) == "up":
                leader, allow = isolated[0], True
                self.windows.append((isolated[1], t, topic))
            else:
                leader = self._leader(topic, partition)
            # The isolation's kill (the docstring says why): a deliberate quorum loss is
            # said in the fault's own line; the cluster's warning goes to the lab's log.
            with warnings_to_log(QuorumWarning, __name__) as quorum:
                self.cluster.kill(leader, allow_quorum_loss=allow)
            return self._record("kill_leader", {"topic": topic, "partition": partition}, t,
                                f"killed broker {leader}, leader of {topic}/{partition}"
                                + (QUORUM_GONE if quorum else ""), leader)

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
            # Deliberate (the docstring says why): said in the fault's own line; the
            # cluster's warning goes to the lab's log, not into the student's cell.
            with warnings_to_log(QuorumWarning, __name__) as quorum:
                for node in followers:
                    self.cluster.pause(node, allow_quorum_loss=True)
            # A follower's fetch sent just before its pause may be parked in the leader's
            # purgatory for up to replica.fetch.wait.max.ms: the first write after the
            # pause would answer it, land in the paused follower's socket buffer and be
            # copied on resume -- not a write only the leader has (a cold CI run lost
            # chapter 01's claim so: the writes after the pause came in one burst, in
            # that one answer). Twice that bound and no fetch is parked; the fault's op
            # is recorded after it, so a producer waiting for the op writes only then.
            time.sleep(2 * fetch_wait_s(self.cluster))
            # The window of writes only the leader has opens now (``t`` is when the
            # fault began, before the metadata round trip and the pauses).
            self._isolated[(topic, partition)] = (leader, self.now(), followers)
            return self._record(
                "pause_followers", {"topic": topic, "partition": partition}, t,
                f"paused brokers {followers} (followers of {topic}/{partition}); broker "
                f"{leader} now acknowledges writes nobody copies"
                + (QUORUM_GONE if quorum else ""), leader)

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
        if self.cluster.brokers < 3:
            return (f"{name} needs a leader with followers to cut it off from: this "
                    f"cluster has {self.cluster.brokers} broker(s), start it with brokers=3")
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

    def isolate_leader(self, topic: str, partition: int = 0, hold: float = 1.5,
                       only_leader: Callable[[Op], bool] | None = None,
                       require: bool = False) -> FaultRecord:
        """Pause the followers, let the leader acknowledge writes only it has, kill it,
        resume the followers; returns once a follower leads instead.

        The loss of ``acks=1`` on demand: the kill waits (up to ``hold`` seconds) until
        a write to a partition that leader leads was acknowledged after the pause.
        An acknowledgement recorded after the pause may still be of a write sent before
        it, which the followers copied (its delivery report came late: the client was
        busy). A caller that knows which writes were sent after the pause says so with
        ``only_leader`` (an acknowledged send op -> True if only the leader can have
        it), and the kill waits for one of those: on a loaded host the late reports
        came first and the kill, 0.2 s later, caught no write only the leader had.
        ``require``: a run whose lesson is that loss (acks=1) raises :class:`TimedOut`
        when no such write came within ``hold`` (the followers are resumed, nothing is
        killed): a kill without one would show no loss, and a claim is not taught from
        a fault that did not bite. Without it the kill comes anyway, and its line says
        no write was acknowledged by the leader alone.

        The kill may leave fewer than a majority of the controller voters running for
        the moment until the followers resume (see :meth:`kill_leader`): the resume
        follows at once, and only the killed leader stays down -- which any cluster of
        2 brokers or more survives.
        """
        with self._lock:
            # Ask for leaders now: with the followers paused, metadata requests may hang.
            leader = self._leader(topic, partition)
            led = {p for p in range(self._partition_count(topic))
                   if self.cluster.leader(topic, p) == leader}
            self.pause_followers(topic, partition)
            _, since, followers = self._isolated[(topic, partition)]
            alone = f"; no write was acknowledged by it alone within {hold:g} s"
            try:
                wait_until(f"a write to {topic} acknowledged by the isolated leader {leader}",
                           lambda: any(op.topic == topic for op in self.history
                                       if op.kind == "send" and op.outcome == "ok"
                                       and op.time >= since and op.partition in led
                                       and (only_leader is None or only_leader(op))),
                           hold, interval=0.05)
                alone = ""
            except TimedOut:  # "up to hold": the kill comes then, acknowledged write or not
                if require:
                    for node in followers:
                        self.cluster.resume(node)
                    raise
            time.sleep(0.2)
            try:
                killed = self.kill_leader(topic, partition)
            finally:
                for node in followers:
                    self.cluster.resume(node)
            self.cluster.wait_leader(topic, partition, exclude=(leader,), timeout=60)
            return self._record("isolate_leader", {"topic": topic, "partition": partition},
                                killed.time, f"isolated and killed broker {leader}; "
                                f"followers {followers} resumed and took over{alone}", leader)

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
        without exactly-once support, one with); the live one started last if None."""
        if connector is not None:
            for connect in reversed(self.cluster.connects):
                if connector in connect.connectors:
                    return connect
        live = [c for c in self.cluster.connects
                if any(w.state != "stopped" for w in c.workers)]
        if not live:
            raise ClusterNotReady("no Connect cluster is running: start one with "
                                  "dl.Connect(cluster, workers=2).start()")
        return live[-1]

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
            raise bad_value("node", node, f"a node number from 1 to {self.cluster.brokers}")
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
                ready.wait_whole(self.cluster, sorted(self._topics))
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
