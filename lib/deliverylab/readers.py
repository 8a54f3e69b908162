"""Readers: what a topic, a group or a partition holds now, read the way the Checker needs.

Clients record, checkers judge, and a checker only ever judges a *complete* read: every
reader here either reaches the end it set out for or raises :class:`ReadTimeout`,
naming what it waited for. A partial read would turn every value not yet read into a
"lost" value, an anomaly nobody saw. (:func:`peek` is the one deliberate exception: it
shows what a reader gets within a few seconds, and is never handed to a checker.)

Reading a topic back is written once, here: :func:`read_back` gives the Checker's
``Read`` values, :func:`read_records` the same read with each record's key, raw value
and timestamp (Connect's offsets topic, a test's bytes). Both take one ``partition``
(a recipe's evidence), and ``expect``: a count that must arrive, read again until a
complete read holds it (a transaction's markers land after its commit returns).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

from . import values as V
from .clients import bootstrap_of, config
from .cluster import ready
from .cluster.ready import wait_whole
from .errors import LabError, TimedOut, bad_value
from .history import Read
from .waiting import Deadline, wait_until

ISOLATIONS = ("read_committed", "read_uncommitted")
#: Records taken from the consumer's queue at once: a million-record read-back (the
#: inspector bench) is paced by librdkafka, not by one Python call per record.
BATCH = 10_000
T = TypeVar("T")


class ReadTimeout(TimedOut):
    """A read did not reach the end of its topics in time.

    Raised, never swallowed: a partial read handed to a checker would turn every value
    not yet read into a "lost" one, an anomaly nobody saw. A :class:`TimedOut`, so it
    names what was awaited, what the last look saw and how long it waited.
    """


@dataclass(frozen=True)
class Record:
    """One record as the log holds it, for a reader that needs more than the value:
    the raw bytes, the key and the producer's timestamp (ms since the epoch)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


def _isolation(isolation: str) -> str:
    if isolation not in ISOLATIONS:
        raise bad_value("isolation", isolation, "'read_committed' or 'read_uncommitted'")
    return isolation


def read_back(target: object, topics: Iterable[str], isolation: str = "read_committed",
              timeout: float = 30.0, *, partition: int | None = None,
              expect: int = 0) -> list[Read]:
    """Drain whole topics, from their start to their end, as the Checker's reads.

    Reads by assignment (no group), up to the end offsets taken at the start, so the
    result is exactly "what the log holds now" for this isolation level. Raises
    :class:`ReadTimeout` if the end is not reached within ``timeout`` seconds: a
    partial read is never returned. ``partition`` reads that one partition of a single
    topic; ``expect`` reads again until a complete read holds at least that many
    records (see :func:`read_records`).
    """
    def read(msg: Message) -> Read:
        try:
            value = str(V.decode(msg.value()))
        except ValueError:
            value = None
        return Read(msg.topic(), msg.partition(), msg.offset(), value, isolation)

    return _read(target, topics, isolation, timeout, partition, expect, read)


def read_records(target: object, topics: Iterable[str], isolation: str = "read_committed",
                 timeout: float = 30.0, *, partition: int | None = None,
                 expect: int = 0) -> list[Record]:
    """The read of :func:`read_back`, each record as the log holds it (:class:`Record`).

    ``expect`` is a count that must arrive: when a complete read holds fewer records,
    the topics are read again (new end offsets) until one holds at least ``expect``,
    within ``timeout`` in all; then :class:`ReadTimeout` names the count and what the
    last read held. Why: a transaction's commit returns before its markers land, so a
    read_committed read right after it can end short of records that are coming.
    """
    def record(msg: Message) -> Record:
        return Record(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(),
                      msg.timestamp()[1])

    return _read(target, topics, isolation, timeout, partition, expect, record)


def _read(target: object, topics: Iterable[str], isolation: str, timeout: float,
          partition: int | None, expect: int, make: Callable[[Message], T]) -> list[T]:
    """The one read-back: arguments checked, then one drain, or drains until ``expect``."""
    _isolation(isolation)
    topics = list(topics)
    if partition is not None and (len(topics) != 1 or not isinstance(partition, int)
                                  or isinstance(partition, bool) or partition < 0):
        raise bad_value("partition", partition, "None, or a partition number (0 or more) "
                        "of a single topic")
    if not isinstance(expect, int) or isinstance(expect, bool) or expect < 0:
        raise bad_value("expect", expect, "a whole number of records, 0 or more")
    bootstrap = bootstrap_of(target)
    if not expect:
        return _drain(bootstrap, topics, isolation, timeout, partition, make)
    deadline = Deadline(timeout)
    last: list[T] = []

    def enough() -> tuple[list[T]] | None:
        last[:] = _drain(bootstrap, topics, isolation, deadline.left(timeout), partition,
                         make)
        return (list(last),) if len(last) >= expect else None

    return wait_until(f"{expect} records in {', '.join(topics)} ({isolation})", enough,
                      deadline, interval=0.5, error=ReadTimeout,
                      explain=lambda: f"; the last complete read held {len(last)}")[0]


def _ends(consumer: Consumer, topics: list[str], partition: int | None,
          timeout: float) -> dict[tuple[str, int], tuple[int, int]]:
    """(topic, partition) -> (log start, end) of every partition that holds records.

    The watermarks are asked until a leader can give them: right after a failover the
    new leader answers OFFSET_NOT_AVAILABLE until its high watermark has caught up (it
    happened after a healed partition, on containers); the timeout is ClusterNotReady.
    """
    ends: dict[tuple[str, int], tuple[int, int]] = {}
    for topic in topics:
        parts = ([partition] if partition is not None
                 else sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions))
        for p in parts:
            tp = TopicPartition(topic, p)
            low, high = ready.wait_until(  # a KafkaException is "ask again", until timeout
                f"the watermarks of {topic}/{p}",
                lambda tp=tp: consumer.get_watermark_offsets(tp, timeout=10), timeout)
            if high > low:
                ends[(topic, p)] = (low, high)
    return ends


def _drain(bootstrap: str, topics: list[str], isolation: str, timeout: float,
           partition: int | None, make: Callable[[Message], T]) -> list[T]:
    """Read every partition from its log start to the end taken before the read."""
    consumer = Consumer(config(bootstrap, **{
        "group.id": f"read-back-{time.monotonic_ns()}", "enable.auto.commit": False,
        "isolation.level": isolation, "enable.partition.eof": True}))
    out: list[T] = []
    try:
        ends = _ends(consumer, topics, partition, timeout)
        if not ends:
            return out
        consumer.assign([TopicPartition(t, p, low) for (t, p), (low, _) in ends.items()])
        done: set[tuple[str, int]] = set()
        started = time.monotonic()
        deadline = started + timeout
        while len(done) < len(ends) and time.monotonic() < deadline:
            # What is queued at once; else wait up to 0.5 s for the next record.
            for msg in consumer.consume(BATCH, 0) or consumer.consume(1, 0.5):
                key = (msg.topic(), msg.partition())
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        done.add(key)
                    continue
                out.append(make(msg))
                if msg.offset() + 1 >= ends[key][1]:
                    done.add(key)
        if len(done) < len(ends):
            behind = sorted(f"{t}/{p}" for (t, p) in ends if (t, p) not in done)
            raise ReadTimeout(
                f"read-back ({isolation}) of {', '.join(topics)} did not reach the end of "
                f"{', '.join(behind)} within {timeout:g} s ({len(out)} records read); "
                "is a broker down or a transaction still open? heal, then read again",
                what=f"the end of {', '.join(behind)}", last_seen=f"{len(out)} records read",
                waited=time.monotonic() - started)
    finally:
        consumer.close()
    return out


def final_read(cluster: Any, topics: Iterable[str], isolation: str = "read_committed",
               attempts: int = 3) -> list[Any]:
    """The final drain of a run: wait until the cluster is whole, then read the topics
    back (:func:`~deliverylab.readers.read_back`), retrying a client error caused by a
    broker that was just restarted."""
    topics = list(topics)
    wait_whole(cluster, topics)
    for _ in range(attempts - 1):
        try:
            return read_back(cluster, topics, isolation)
        except KafkaException:
            time.sleep(2.0)
            wait_whole(cluster, topics)
    return read_back(cluster, topics, isolation)  # the last attempt raises what it meets


def committed_offsets(cluster: Any, group: str, topic: str) -> dict[int, int]:
    """The offsets ``group`` has committed on ``topic``, per partition (-1: none yet).

    Asked with a consumer that carries the group's id but never subscribes, so it does
    not join the group (and cannot disturb a rebalance under way).
    """
    consumer = Consumer(config(bootstrap_of(cluster), **{"group.id": group,
                                                       "enable.auto.commit": False}))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        asked = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
        return {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=10)}
    finally:
        consumer.close()


def pending_count(cluster: Any, group: str, topic: str,
              isolation: str = "read_committed") -> int:
    """How many records of ``topic`` lie at or past ``group``'s committed offsets: what
    a new instance of the group has left to process. Counted from the read-back, never
    from offset arithmetic (transaction markers take offsets too)."""
    done = committed_offsets(cluster, group, topic)
    return sum(1 for r in read_back(cluster, [topic], isolation)
               if r.offset >= max(0, done.get(r.partition, -1)))


def peek(cluster: Any, topic: str, isolation: str, seconds: float = 3.0) -> list[str]:
    """Everything a brand-new consumer at ``isolation`` gets from ``topic`` within
    ``seconds`` (from the beginning): what a reader sees *right now*. A
    read_committed reader stops at the last stable offset and waits there."""
    _isolation(isolation)
    consumer = Consumer(config(bootstrap_of(cluster), **{
        "group.id": f"peek-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": isolation}))
    got: list[str] = []
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(meta.partitions)])
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            msg = consumer.poll(max(0.0, min(0.2, end - time.monotonic())))
            if msg is None or msg.error():
                continue
            try:
                got.append(str(V.decode(msg.value())))
            except ValueError:
                continue
    finally:
        consumer.close()
    return got


# --- offsets: log start, high watermark, last stable offset -------------------------------


def _admin(target: Any) -> AdminClient:
    """An admin client for ``target``: itself, a Cluster's (direct ports), or a new one."""
    if isinstance(target, AdminClient):
        return target
    admin = getattr(target, "admin", None)
    if callable(admin):
        return admin()
    return AdminClient(config(bootstrap_of(target)))


def partitions(target: Any, name: str, timeout: float = 15.0, where: str = "") -> list[int]:
    """The partition numbers of topic ``name``; one clear line if it does not exist."""
    try:
        meta = _admin(target).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise LabError(
            f"cannot reach Kafka{' at ' + where if where else ''} within {timeout} s "
            f"({exc.args[0].str() if exc.args else exc}): is the cluster running?"
        ) from exc
    if not isinstance(name, str) or name not in meta.topics:
        topics = sorted(t for t in meta.topics if not t.startswith("__"))
        raise bad_value("name", name,
                        f"an existing topic ({', '.join(topics) or 'none exist yet'})")
    return sorted(meta.topics[name].partitions)


def bounds(target: Any, name: str, timeout: float = 15.0,
           where: str = "") -> list[dict[str, int]]:
    """Per partition: log start offset, high watermark and last stable offset.

    Asked with ListOffsets, once per isolation level: for ``read_committed`` the
    broker answers "latest" with the LSO (librdkafka honours the isolation level
    here since 1.8; ``Consumer.get_watermark_offsets`` without it would give the high
    watermark in both cases).
    """
    admin = _admin(target)
    parts = [TopicPartition(name, p) for p in partitions(admin, name, timeout, where)]

    def ask(spec: OffsetSpec, isolation: IsolationLevel) -> dict[int, int]:
        futures = admin.list_offsets({tp: spec for tp in parts}, isolation_level=isolation,
                                     request_timeout=timeout)
        try:
            return {tp.partition: f.result().offset for tp, f in futures.items()}
        except KafkaException as exc:
            raise LabError(f"could not list offsets of topic {name!r}"
                           f"{' at ' + where if where else ''}: {exc.args[0].str()}") from exc

    start = ask(OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED)
    # The LSO before the high watermark: both only grow, so asked in this order the
    # LSO can never come out above the high watermark. The other order raced a commit
    # marker (high watermark asked before it landed, LSO after: LSO > HW), which
    # made wait_stable return a view no reader could have seen.
    stable = ask(OffsetSpec.latest(), IsolationLevel.READ_COMMITTED)
    high = ask(OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED)
    return [{"partition": p, "log_start_offset": start[p], "high_watermark": high[p],
             "last_stable_offset": stable[p]} for p in sorted(start)]


def wait_stable(target: Any, name: str, timeout: float = 30.0,
                where: str = "") -> list[dict[str, int]]:
    """Wait until no transaction is open on ``name`` (LSO = high watermark everywhere).

    Why: ``commit_transaction()`` returns once the coordinator has *decided*; the
    commit markers reach the partitions a little later, and until then read_committed
    stops short of the committed records. Returns the final :func:`bounds`; raises
    ``TimedOut`` (a ``LabError``) naming the partitions still held back (a producer that died
    mid-transaction holds them until ``transaction.timeout.ms`` expires).
    """
    admin = _admin(target)
    held: list[dict[str, int]] = []

    def stable() -> tuple[list[dict[str, int]]] | None:
        now = bounds(admin, name, min(15.0, timeout), where)
        held[:] = [b for b in now if b["last_stable_offset"] < b["high_watermark"]]
        return None if held else (now,)  # a 1-tuple: truthy for a topic with no bounds

    def spots() -> str:
        return ("; it still has an open transaction on " + ", ".join(
            f"partition {b['partition']} (LSO {b['last_stable_offset']} < high watermark "
            f"{b['high_watermark']})" for b in held) + ". A producer that died "
            "mid-transaction holds it until the broker's transaction.timeout.ms aborts it")

    return wait_until(f"no open transaction on topic {name!r}", stable, timeout,
                      interval=0.1, explain=spots)[0]
