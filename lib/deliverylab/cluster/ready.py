"""Readiness: a cluster is ready when it can really serve, not when its ports open.

Other labs checked a port and let the first transaction hang. Here "ready" means, in
order (each step names itself if it never holds):

1. every broker is in the cluster metadata;
2. a transactional producer can init, write and commit (this creates
   ``__transaction_state`` while all brokers are up, so it gets its full replication);
3. a consumer in a group reads that record back under read_committed and commits
   (this creates ``__consumer_offsets``);
4. both internal topics have a leader for every partition.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from ..clients import config
from ..errors import ClusterNotReady

READY_TOPIC = "__lab_ready"
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


class Deadline:
    """One timeout shared by all steps, so ``ready_timeout`` means what it says."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self, cap: float = 30.0) -> float:
        return max(0.1, min(cap, self.end - time.monotonic()))

    def expired(self) -> bool:
        return time.monotonic() >= self.end


def wait_until(what: str, probe: Callable[[], object], deadline: Deadline | float,
               check: Callable[[], None] = lambda: None, interval: float = 0.25,
               explain: Callable[[], str] | None = None) -> object:
    """Poll ``probe`` until it returns something truthy, and return that.

    The one wait of the package: start-up steps, failovers, ISR recovery, restarts.
    ``what`` names the awaited condition (``"a leader of t/0 other than 1"``); the
    timeout's message says it, so a stuck failover is not reported as a start-up
    problem. ``deadline`` is a :class:`Deadline` shared by several waits, or seconds.
    ``check`` raises if a node died. ``explain`` is asked only on timeout, for the
    cause when there is one to name (e.g. the controller quorum has no leader): it
    returns ``""`` or text starting with ``;``.
    """
    if not isinstance(deadline, Deadline):
        deadline = Deadline(deadline)
    last_error: Exception | None = None
    while True:
        check()
        try:
            result = probe()
            if result:
                return result
        except KafkaException as exc:  # the cluster is not there yet
            last_error = exc
        if deadline.expired():
            why = f" (last error: {last_error})" if last_error else ""
            cause = explain() if explain is not None else ""
            raise ClusterNotReady(f"timed out after {deadline.seconds:.0f}s waiting for "
                                  f"{what}{why}{cause}")
        time.sleep(interval)


def wait_ready(bootstrap: str, size: int, deadline: Deadline,
               check: Callable[[], None], explain: Callable[[], str] | None = None) -> None:
    """Every step of the module docstring, in order, within one deadline."""
    admin = AdminClient(config(bootstrap))
    rf = min(3, size)

    def step(what: str, probe: Callable[[], object]) -> None:
        wait_until(f"the cluster to be ready ({what})", probe, deadline, check,
                   explain=explain)

    def all_brokers() -> bool:
        return len(admin.list_topics(timeout=deadline.left(5)).brokers) == size

    step(f"all {size} brokers registered in the metadata", all_brokers)

    def ready_topic() -> bool:
        md = admin.list_topics(timeout=deadline.left(5))
        if READY_TOPIC not in md.topics:
            fut = admin.create_topics([NewTopic(READY_TOPIC, 1, rf)])[READY_TOPIC]
            try:
                fut.result(timeout=deadline.left(10))
            except KafkaException as exc:
                if "TOPIC_ALREADY_EXISTS" not in str(exc.args[0].name()):
                    raise
            return False
        parts = md.topics[READY_TOPIC].partitions
        return bool(parts) and all(p.leader >= 0 for p in parts.values())

    step(f"topic {READY_TOPIC} created with a leader", ready_topic)

    token = uuid.uuid4().hex

    def transaction() -> bool:
        producer = Producer(config(bootstrap, **{"transactional.id": f"lab-ready-{token}",
                                                  "transaction.timeout.ms": 60000}))
        producer.init_transactions(deadline.left(30))
        producer.begin_transaction()
        producer.produce(READY_TOPIC, token.encode())
        producer.commit_transaction(deadline.left(30))
        return True

    step("a transactional producer can init and commit (creates __transaction_state)",
         transaction)

    def read_back() -> bool:
        consumer = Consumer(config(bootstrap, **{
            "group.id": f"lab-ready-{token}", "isolation.level": "read_committed",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}))
        try:
            consumer.assign([TopicPartition(READY_TOPIC, 0, 0)])
            end = time.monotonic() + deadline.left(15)
            while time.monotonic() < end:
                msg = consumer.poll(0.5)
                if msg is not None and not msg.error() and msg.value() == token.encode():
                    consumer.commit(message=msg, asynchronous=False)
                    return True
            return False
        finally:
            consumer.close()

    step("the committed record is read back under read_committed and its offset "
         "committed (creates __consumer_offsets)", read_back)

    def internal_topics() -> bool:
        md = admin.list_topics(timeout=deadline.left(5))
        return all(t in md.topics and md.topics[t].partitions
                   and all(p.leader >= 0 for p in md.topics[t].partitions.values())
                   for t in INTERNAL_TOPICS)

    step("__consumer_offsets and __transaction_state have a leader on every partition",
         internal_topics)
