"""Chapter 01's recipes: an acknowledged write lost in a failover, one call each.

A lab claim that appears only sometimes is worse than none, so each recipe removes the
luck: it arranges the cluster so that the anomaly *must* happen (or, with the safe
setting, *cannot*), then reads the partition back and returns the evidence. Each
recipe restores the cluster before it returns (resumes, restarts, heals), so a chapter
can run it again, and with the other setting, to show the contrast.

- :func:`acked_then_lost` -- a write acknowledged by a leader its followers never
  copied, then the leader dies: gone with ``acks=1``, kept with ``acks=all``.
- :func:`partitioned_leader` -- the same broken promise from a real network partition
  (containers only): a leader cut off from its peers acknowledges alone.

The helpers every recipe shares (:class:`Send`, :func:`ensure_topic`, :func:`evidence`,
:class:`RecipeFailed`) are public: chapter 01 introduces the recipes, and chapter 02's
lost-ack recipe (:mod:`deliverylab.chapters.at_least_once.lost_ack`) is written on them.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from ... import values
from ...clients import config
from ...cluster import ready
from ...cluster.ready import wait_whole
from ...errors import ClusterNotReady, LabError, bad_value
from ...history import History, Read
from ...nemesis import Nemesis
from ...readers import read_back
from ...waiting import verdict_within

if TYPE_CHECKING:
    from ...cluster import Cluster


class RecipeFailed(LabError):
    """A recipe could not set up its fault (the message says which step and why)."""


# --- small helpers shared by the recipes ---------------------------------------------


class Send:
    """One produce and its delivery report, waited for by polling the producer."""

    def __init__(self, producer: Producer, topic: str, value: bytes, key: bytes) -> None:
        self.producer = producer
        self.value = value
        self.done = threading.Event()
        self.error: KafkaError | None = None
        self.offset: int | None = None
        producer.produce(topic, value, key=key, partition=0, on_delivery=self._report)

    def _report(self, err: KafkaError | None, msg: Any) -> None:
        self.error = err
        self.offset = None if err is not None else msg.offset()
        self.done.set()

    def wait(self, timeout: float) -> bool:
        """Poll until the delivery report came; False if it did not within ``timeout``
        (the recipe then names the write that got no answer)."""
        def reported() -> bool:
            if not self.done.is_set():
                self.producer.poll(0.1)  # the delivery callback runs inside this poll
            return self.done.is_set()

        return verdict_within("a delivery report", reported, timeout, interval=0)

    @property
    def ok(self) -> bool:
        return self.done.is_set() and self.error is None

    @property
    def error_name(self) -> str | None:
        return None if self.error is None else self.error.name()


class _Phases:
    """Durations of a recipe's steps, so a chapter can say "the failover took 4 s"."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._phases: dict[str, float] = {}

    def mark(self, name: str) -> None:
        now = time.monotonic()
        self._phases[name] = round(now - self._last, 3)
        self._last = now

    def done(self) -> dict[str, float]:
        return dict(self._phases)


def ensure_topic(cluster: Cluster, topic: str, config_: dict[str, Any]) -> None:
    """Create a one-partition topic replicated on up to three brokers, if it is missing."""
    if not isinstance(topic, str) or not topic:
        raise bad_value("topic", topic, "a topic name")
    md = cluster.admin().list_topics(timeout=10)
    if topic not in md.topics:
        cluster.create_topic(topic, partitions=1, replication_factor=min(3, cluster.brokers),
                             config=config_)


def _wait_isr_full(cluster: Cluster, topic: str, partition: int,
                   timeout: float) -> tuple[int, list[int]]:
    """Wait until the partition is whole (:func:`~deliverylab.cluster.ready.wait_whole`);
    returns (leader, replicas) as the metadata that showed it whole said."""
    partitions = wait_whole(cluster, [topic], timeout, steady=0.0)[topic].partitions
    if partition not in partitions:
        raise bad_value("partition", partition, f"a partition of {topic}: 0 to "
                        f"{len(partitions) - 1}")
    return partitions[partition].leader, list(partitions[partition].replicas)


def evidence(cluster: Cluster, topic: str, timeout: float) -> list[Read]:
    """Every record of the recipe's one partition, start to end (:func:`read_back`):
    on the brokers' own ports, which no fault touches, at read_uncommitted, by
    assignment, so the evidence depends on no consumer-group state. Raises
    ``ReadTimeout`` rather than hand a partial partition on."""
    return read_back(cluster.direct_bootstrap_servers, [topic], "read_uncommitted", timeout,
                     partition=0)


def _wait_high_watermark(bootstrap: str, topic: str, partition: int, above: int,
                         timeout: float) -> None:
    """Wait until the high watermark passes ``above``: every in-sync replica has it."""
    consumer = Consumer(config(bootstrap, **{"group.id": "deliverylab-recipe-hw"}))
    tp = TopicPartition(topic, partition)
    try:  # a KafkaException is a leader still catching up ("not caught up"): ask again
        ready.wait_until(f"offset {above} of {topic}/{partition} replicated to the whole ISR",
                         lambda: consumer.get_watermark_offsets(tp, timeout=5)[1] > above,
                         timeout, interval=0.05)
    except ClusterNotReady as exc:
        raise RecipeFailed(str(exc)) from None
    finally:
        consumer.close()


# --- acknowledged, then lost -----------------------------------------------------------


@dataclass(frozen=True)
class AckedThenLostResult:
    """Evidence of one leader-failover run.

    ``acked_before_kill`` says whether the client had its acknowledgement while the old
    leader was alive; ``acked`` whether it got one at all (with ``acks=all`` it comes
    after the failover, from the new leader). ``lost`` is the anomaly: acknowledged and
    absent. ``before``/``after`` are values written around the fault, as controls.
    """

    topic: str
    partition: int
    acks: str
    value: str
    acked: bool
    acked_before_kill: bool
    acked_offset: int | None
    copies: int
    offsets: tuple[int, ...]
    old_leader: int
    new_leader: int
    paused_followers: tuple[int, ...]
    error: str | None
    before: str
    after: str
    records: tuple[tuple[int, str | None], ...] = field(repr=False)
    #: Seconds each step took (e.g. how long the failover left the partition leaderless).
    phases: dict[str, float] = field(default_factory=dict, repr=False)
    #: The fault ops the Nemesis recorded (pause_followers, kill_leader, resume_broker).
    history: History = field(default_factory=History, repr=False, compare=False)

    @property
    def present(self) -> bool:
        return self.copies > 0

    @property
    def lost(self) -> bool:
        """Acknowledged, yet not in the partition: the broken promise."""
        return self.acked and not self.present

    def __str__(self) -> str:
        told = (f"acked at offset {self.acked_offset}"
                + (" before the leader died" if self.acked_before_kill else
                   " only after the failover") if self.acked else
                f"not acked ({self.error})")
        where = (f"present at offsets {list(self.offsets)}" if self.present
                 else "absent from the partition")
        return (f"acks={self.acks}: value {self.value} {told}; leader {self.old_leader} "
                f"killed, {self.new_leader} took over; the value is {where}")


def _control_write(cluster: Cluster, topic: str, prefix: str, acks_text: str,
                   timeout: float, request_timeout_ms: int,
                   retry_backoff_ms: int) -> tuple[Producer, str, bytes]:
    """The failover recipes' producer (no idempotence: the lesson is about ``acks``), and
    its ``before`` value (sequence 0) written and replicated to the whole ISR, as a
    control before any fault. Returns (producer, producer id, key)."""
    producer_id = f"{prefix}-{uuid.uuid4().hex[:8]}"
    key = values.key(producer_id)
    producer = Producer(config(cluster.bootstrap_servers, **{
        "enable.idempotence": False, "acks": acks_text, "linger.ms": 0,
        "retries": 1000, "retry.backoff.ms": retry_backoff_ms,
        "request.timeout.ms": request_timeout_ms,
        "message.timeout.ms": int(timeout * 1000),
        "topic.metadata.refresh.interval.ms": 1000}))
    before = Send(producer, topic, values.encode(producer_id, 0), key)
    if not before.wait(timeout) or not before.ok:
        raise RecipeFailed(f"the control write to {topic!r} failed ({before.error_name}) "
                           "before any fault: is the cluster healthy?")
    _wait_high_watermark(cluster.direct_bootstrap_servers, topic, 0, before.offset, timeout)
    return producer, producer_id, key


def _acks_setting(acks: int | str) -> str:
    text = str(acks).strip().lower()
    if text in ("1",):
        return "1"
    if text in ("all", "-1"):
        return "all"
    raise bad_value("acks", acks, "1 or 'all' (acks=0 needs no failover to lose data)")


def acked_then_lost(cluster: Cluster, topic: str, acks: int | str = 1,
                    timeout: float = 60.0, history: History | None = None,
                    ) -> AckedThenLostResult:
    """Acknowledge a write its followers never copied, kill the leader, look for it.

    The sequence, on a partition with three replicas (``min.insync.replicas=2``):

    1. A ``before`` value is written and replicated to the whole ISR (control).
    2. Both followers are paused (SIGSTOP). They stay in the ISR: the leader only
       drops a follower after ``replica.lag.time.max.ms`` (30 s), and the controller
       only fences a broker after ``broker.session.timeout.ms`` (3 s) -- and with two
       of the three KRaft voters paused it cannot commit a fencing at all.
    3. (The Nemesis' ``pause_followers`` does it.) Wait a little over
       ``replica.fetch.wait.max.ms``: a follower's fetch request sent
       just before the pause may be parked in the leader's purgatory, and would carry
       the new value into the paused follower's socket buffer, to be read on resume.
       After the wait no fetch is parked, so nothing can carry the value out.
    4. The value under test is produced. With ``acks=1`` the leader acknowledges it at
       once. With ``acks=all`` the leader appends it but waits for the followers: no
       acknowledgement can come.
    5. The leader is killed (SIGKILL) and the followers resumed, within about a
       second, long before anyone is fenced. Their fetches now find no leader. Once the
       controller fences the dead broker, it elects one of the followers -- a *clean*
       election, from the ISR -- whose log ends before the value.
    6. An ``after`` value is written (control), the old leader is restarted (it
       truncates its log to the new leader's: the value is gone for good there too),
       and the partition is read back.

    With ``acks=1`` the client was told "written at offset N" and offset N now holds
    the ``after`` value: acknowledged, then lost. With ``acks=all`` the client was never
    told anything by the old leader; it retried on the new one after the failover and
    that write is acknowledged and present: nothing acknowledged is lost.

    The pause, the kill and the resumes are the Nemesis' (``pause_followers``,
    ``kill_leader``, ``resume_broker``), as in ``isolate_leader``, so ``history`` (or
    the result's own) holds them like any other run's faults.
    """
    acks_text = _acks_setting(acks)
    if cluster.brokers < 3:
        raise bad_value("cluster", f"{cluster.brokers} broker(s)",
                        "a cluster of at least 3 brokers (a leader and two followers)")
    ensure_topic(cluster, topic, {"min.insync.replicas": 2})
    old_leader, replicas = _wait_isr_full(cluster, topic, 0, timeout)
    if len(replicas) < 3:
        raise bad_value("topic", topic, "a topic whose partition 0 has 3 replicas")
    followers = tuple(r for r in replicas if r != old_leader)
    producer, producer_id, key = _control_write(cluster, topic, f"acked-{acks_text}",
                                                acks_text, timeout, request_timeout_ms=15000,
                                                retry_backoff_ms=100)

    proxy = cluster.proxies.get(old_leader)
    produce_seen = proxy.requests("Produce") if proxy is not None else 0
    phases = _Phases()
    nemesis = Nemesis(cluster, history)
    try:
        try:
            nemesis.pause_followers(topic, 0)  # the lesson, see above (drains parked fetches)
            phases.mark("followers paused, parked fetches drained")
            victim = Send(producer, topic, values.encode(producer_id, 1), key)
            if acks_text == "1":
                if not victim.wait(5.0) or not victim.ok:
                    raise RecipeFailed(f"the leader did not acknowledge the acks=1 write "
                                       f"({victim.error_name})")
            else:
                # The request must have reached the leader, so that it is appended there.
                if proxy is not None:
                    proxy.wait_requests("Produce", produce_seen + 1, timeout=5.0)
                victim.wait(0.3)  # it cannot be acked; give it the chance to prove it
            acked_before_kill = victim.ok
            phases.mark("value produced")
            nemesis.kill_leader(topic, 0)
            phases.mark("leader killed")
        finally:
            for node in followers:
                if cluster.status().get(node) == "paused":
                    nemesis.resume_broker(node)
        new_leader = _leader_beyond(cluster, topic, old_leader, timeout)
        phases.mark("new leader elected")
        victim.wait(timeout)  # acks=all: the retry, answered by the new leader
        after = Send(producer, topic, values.encode(producer_id, 2), key)
        after.wait(timeout)
        producer.flush(5)
        phases.mark("control value written")
    finally:
        # Whatever happened, leave a whole cluster behind: the recipe must run again.
        if cluster.status().get(old_leader) == "dead":
            cluster.restart(old_leader, timeout=timeout)
    _wait_isr_full(cluster, topic, 0, timeout)  # the old leader caught up: whole again
    phases.mark("old leader restarted and back in the ISR")
    if not after.ok:
        raise RecipeFailed(f"the control write after the failover failed "
                           f"({after.error_name})")

    labels = tuple((r.offset, r.value) for r in evidence(cluster, topic, timeout))
    name = str(values.ValueId(producer_id, 1))
    offsets = tuple(offset for offset, label in labels if label == name)
    return AckedThenLostResult(
        topic=topic, partition=0, acks=acks_text, value=name, acked=victim.ok,
        acked_before_kill=acked_before_kill, acked_offset=victim.offset,
        copies=len(offsets), offsets=offsets, old_leader=old_leader, new_leader=new_leader,
        paused_followers=followers, error=victim.error_name,
        before=str(values.ValueId(producer_id, 0)),
        after=str(values.ValueId(producer_id, 2)), records=labels, phases=phases.done(),
        history=nemesis.history)


__all__ = [
    "AckedThenLostResult",
    "PartitionedLeaderResult",
    "RecipeFailed",
    "Send",
    "acked_then_lost",
    "ensure_topic",
    "evidence",
    "partitioned_leader",
]


# --- a partitioned leader (containers) ---------------------------------------------------


@dataclass(frozen=True)
class PartitionedLeaderResult:
    """Evidence of one network-partition run: what the cut-off leader was sent, what the
    producer was told, and what the partition holds once the cluster is whole again.

    ``acked`` counts the values the producer was told were written; ``lost`` those of
    them the healed partition does not hold. With ``acks=1`` the old leader acknowledges
    alone, and its log is truncated when it rejoins: ``lost == acked``. With ``acks=all``
    (``min.insync.replicas=2``) it cannot, the producer retries on the new leader, and
    nothing acknowledged is lost.
    """

    topic: str
    acks: str
    sent: tuple[str, ...]
    #: Acknowledged before the partition healed: by the cut-off leader alone (acks=1),
    #: or by the new leader if the producer found it in time (acks=all).
    acked_while_cut: int
    acked: tuple[str, ...]
    lost: tuple[str, ...]
    copies: dict[str, int]
    old_leader: int
    new_leader: int
    errors: tuple[str, ...]
    phases: dict[str, float] = field(default_factory=dict, repr=False)
    #: The fault ops the Nemesis recorded (partition_leader, heal).
    history: History = field(default_factory=History, repr=False, compare=False)

    def __str__(self) -> str:
        return (f"acks={self.acks}: {len(self.sent)} value(s) sent to broker "
                f"{self.old_leader}, cut off from its peers; {self.acked_while_cut} "
                f"acknowledged while it was cut off, {len(self.acked)} in the end; broker "
                f"{self.new_leader} took over; after the heal {len(self.lost)} acknowledged "
                "value(s) are missing from the partition")


def _leader_beyond(cluster: Cluster, topic: str, cut: int, timeout: float) -> int:
    """The leader the brokers on the far side of a partition from ``cut`` elected.

    Asked of them alone, with a fresh client each time: the cut-off broker still names
    itself leader, and a long-lived client (the cluster's own admin) may keep asking it
    and never hear of the election.
    """
    far = ",".join(f"{n.advertised_host}:{n.direct or n.client}" for n in cluster.spec.nodes
                   if n.node_id != cut)

    def elected() -> int | None:
        meta = AdminClient(config(far)).list_topics(topic, timeout=5).topics.get(topic)
        part = meta.partitions.get(0) if meta is not None else None  # none: in flux
        return part.leader if part is not None and part.leader not in (cut, -1) else None

    return ready.wait_until(f"a leader of {topic}/0 elected without broker {cut}", elected,
                            timeout, interval=0.3)


def partitioned_leader(cluster: Cluster, topic: str, acks: int | str = 1, count: int = 5,
                       timeout: float = 90.0, history: History | None = None,
                       ) -> PartitionedLeaderResult:
    """Cut a partition's leader off from the other brokers, write to it, heal, look.

    Only containers can do this (:meth:`~deliverylab.cluster.Cluster.partition`: the
    engine drops the node's packets to its peers, while clients still reach it):

    1. A ``before`` value is written and replicated to the whole ISR (control).
    2. The leader is cut off. Nothing can copy from it now, and it cannot reach the
       controller quorum either, so it can neither shrink the ISR nor learn that it was
       replaced: it still believes it leads.
    3. ``count`` values are produced at once, through it (the producer's metadata
       still names it). With ``acks=1`` it acknowledges each alone. With ``acks=all``
       it waits for followers that cannot fetch: no acknowledgement, and the producer
       retries -- on the new leader once its metadata names it, at the latest once
       the partition heals.
    4. On the majority side the controller fences the silent broker and elects a
       follower -- whose log ends at ``before``.
    5. The partition heals, the old leader learns the new epoch and truncates its log
       to the new leader's: what it alone acknowledged is gone.

    The cut and the heal are the Nemesis' (``partition_leader``, ``heal``), so
    ``history`` (or the result's own) holds them.
    """
    acks_text = _acks_setting(acks)
    if cluster.brokers < 3:
        raise bad_value("cluster", f"{cluster.brokers} broker(s)",
                        "a cluster of at least 3 brokers (a leader and two followers)")
    if not isinstance(count, int) or not 1 <= count <= 1000:
        raise bad_value("count", count, "a whole number from 1 to 1000")
    if not hasattr(cluster.backend, "partition"):
        raise bad_value("backend", cluster.backend_name,
                        "'docker': a network partition needs containers")
    ensure_topic(cluster, topic, {"min.insync.replicas": 2})
    old_leader, _ = _wait_isr_full(cluster, topic, 0, timeout)
    producer, producer_id, key = _control_write(cluster, topic, f"cut-{acks_text}", acks_text,
                                                timeout, request_timeout_ms=5000,
                                                retry_backoff_ms=200)

    phases = _Phases()
    nemesis = Nemesis(cluster, history)
    try:
        nemesis.partition_leader(topic, 0)
        phases.mark("leader cut off")
        sends = [Send(producer, topic, values.encode(producer_id, i), key)
                 for i in range(1, count + 1)]
        if acks_text == "1":
            for send in sends:
                if not send.wait(10.0) or not send.ok:
                    raise RecipeFailed(f"the cut-off leader did not acknowledge an acks=1 "
                                       f"write ({send.error_name})")
        phases.mark("values sent")

        new_leader = _leader_beyond(cluster, topic, old_leader, timeout)
        phases.mark("new leader elected")
        acked_while_cut = sum(send.ok for send in sends)
    finally:
        nemesis.heal()  # whatever happened: leave a whole cluster
    # acks=all: the retries land now, at the latest -- the healed broker answers "not
    # the leader" and the producer's next metadata names the new one.
    for send in sends:
        send.wait(timeout)
    producer.flush(5)
    phases.mark("every send answered")
    _wait_isr_full(cluster, topic, 0, timeout)
    phases.mark("healed, old leader back in the ISR")
    labels = [r.value for r in evidence(cluster, topic, timeout)]
    sent = tuple(str(values.ValueId(producer_id, i)) for i in range(1, count + 1))
    copies = {name: labels.count(name) for name in sent}
    acked = tuple(name for name, send in zip(sent, sends, strict=True) if send.ok)
    return PartitionedLeaderResult(
        topic=topic, acks=acks_text, sent=sent, acked_while_cut=acked_while_cut, acked=acked,
        lost=tuple(name for name in acked if copies[name] == 0), copies=copies,
        old_leader=old_leader, new_leader=new_leader,
        errors=tuple(s.error_name for s in sends if s.error_name), phases=phases.done(),
        history=nemesis.history)
