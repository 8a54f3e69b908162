"""Readiness: a cluster is ready when it can really serve, not when its ports open.

Other labs checked a port and let the first transaction hang. Here "ready" means, in
order (each step names itself if it never holds):

1. every broker is in the cluster metadata;
2. ``__consumer_offsets`` and ``__transaction_state`` have a leader for every
   partition (both are created while all brokers are up, so they get their full
   replication);
3. a transactional producer can init, write and commit;
4. a consumer in a group reads that record back under read_committed and commits its
   offset.

Creating the two internal topics is the slow part. Kafka creates each when a client
first asks for its coordinator, so a consumer with a group and a transactional
producer are started as soon as step 1 holds, only to ask; the waits overlap, every
condition is still awaited, in this order. Steps 3 and 4 then use clients made once
the topics have leaders (see ``first_producer`` and ``read_back``): librdkafka asks
again for a coordinator it was refused only after a pause (500 ms for a transactional
producer, about a second for a group), and a client made after the topics exist finds
its coordinator at its first request.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, NewTopic

from .. import waiting
from ..clients import config
from ..errors import ClusterNotReady
from ..waiting import Deadline

READY_TOPIC = "__lab_ready"
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state")


def aside(fn: Callable[..., Any], *args: Any) -> Future[Any]:
    """Run ``fn(*args)`` in a daemon thread; its Future holds the result or the error.

    Not a ThreadPoolExecutor: Python joins an executor's threads at exit, so an early
    ``init_transactions`` that lost the race to a fresh one (it may retry for up to
    30 s) held the exit of whatever process had started the cluster.
    """
    future: Future[Any] = Future()
    future.set_running_or_notify_cancel()

    def run() -> None:
        try:
            future.set_result(fn(*args))
        except BaseException as exc:  # handed to whoever asks the Future
            future.set_exception(exc)

    threading.Thread(target=run, name="lab-ready", daemon=True).start()
    return future


def wait_until(what: str, probe: Callable[[], object], deadline: Deadline | float,
               check: Callable[[], None] = lambda: None, interval: float = 0.25,
               explain: Callable[[], str] | None = None) -> object:
    """The package's one wait (:func:`deliverylab.waiting.wait_until`) as a cluster's
    waits use it: start-up steps, failovers, ISR recovery, restarts.

    A ``KafkaException`` from ``probe``, or an admin request's ``TimeoutError`` (a broker
    too busy to answer within the probe's own bound: seen on a loaded machine), means
    "the cluster is not there yet" (asked again, named on timeout), and the timeout is
    :class:`ClusterNotReady`, which callers of the cluster catch. ``explain`` gives the
    cause when there is one to name (e.g. the controller quorum has no leader).
    """
    return waiting.wait_until(what, probe, deadline, check, interval, explain,
                              retry=(KafkaException, TimeoutError), error=ClusterNotReady)


def wait_ready(bootstrap: str, brokers: int, deadline: Deadline,
               check: Callable[[], None], explain: Callable[[], str] | None = None,
               phases: dict[str, float] | None = None) -> None:
    """Every step of the module docstring, in order, within one deadline.

    ``phases``, if given, receives the seconds each step took (keyed by its name).
    """
    admin = AdminClient(config(bootstrap))
    rf = min(3, brokers)

    def step(what: str, probe: Callable[[], object]) -> None:
        t0 = time.monotonic()
        # Polled every 0.1 s: each probe is one cheap request, and at start-up every
        # quarter second of polling slack is a quarter second a student waits.
        wait_until(f"the cluster to be ready ({what})", probe, deadline, check,
                   interval=0.1, explain=explain)
        if phases is not None:
            phases[f"ready: {what.split(' (')[0][:40]}"] = time.monotonic() - t0

    def all_brokers() -> bool:
        return len(admin.list_topics(timeout=deadline.left(5)).brokers) == brokers

    step(f"all {brokers} brokers registered in the metadata", all_brokers)

    token = uuid.uuid4().hex

    def new_consumer() -> Consumer:
        return Consumer(config(bootstrap, **{
            "group.id": f"lab-ready-{token}", "isolation.level": "read_committed",
            "auto.offset.reset": "earliest", "enable.auto.commit": False}))

    def init_producer(suffix: str = "") -> Producer:
        # Each its own transactional.id: a second init with the same id would fence
        # the first, and whichever is slower would then fail the transaction.
        producer = Producer(config(bootstrap, **{
            "transactional.id": f"lab-ready-{token}{suffix}", "transaction.timeout.ms": 60000}))
        producer.init_transactions(deadline.left(30))
        return producer

    # Started now, awaited later: a consumer with a group looks up its coordinator at
    # once, which creates __consumer_offsets; init_transactions, run aside, creates and
    # loads __transaction_state. Both take about a second on two cores, and so does the
    # ready topic: three waits overlapped, none skipped -- each step below still needs
    # its own condition to hold (a failed early attempt is simply made again).
    early_consumer: list[Consumer] = [new_consumer()]
    early_producer: list[Future[Producer]] = [aside(init_producer)]

    def led(md: ClusterMetadata, name: str) -> bool:
        """``name`` exists and every partition of it has a leader."""
        parts = md.topics[name].partitions if name in md.topics else {}
        return bool(parts) and all(p.leader >= 0 for p in parts.values())

    def internal_topics() -> bool:
        md = admin.list_topics(timeout=deadline.left(5))
        return all(led(md, t) for t in INTERNAL_TOPICS)

    try:
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
            return led(md, READY_TOPIC)

        step(f"topic {READY_TOPIC} created with a leader", ready_topic)
        step("__consumer_offsets and __transaction_state have a leader on every partition",
             internal_topics)

        def first_producer() -> Producer:
            """The early producer if its init is done, else the first of it and a fresh
            one. The early one asked for the coordinator before __transaction_state
            existed, and librdkafka asks again only every 500 ms; a producer made now
            finds the coordinator at its first request."""
            if not early_producer:
                return init_producer(suffix="-again")
            early = early_producer.pop()
            if early.done() and early.exception() is None:
                return early.result()
            pending = {early, aside(init_producer, "-fresh")}
            failed: BaseException | None = None
            while pending:
                done, pending = wait(pending, timeout=deadline.left(30),
                                     return_when=FIRST_COMPLETED)
                if not done:
                    break
                for fut in done:
                    if fut.exception() is None:
                        return fut.result()
                    failed = fut.exception()
            # Both failed (the last one's own error, for the step's message) or neither
            # finished in time; the step tries again while the deadline allows.
            raise failed or KafkaException(KafkaError(
                KafkaError._TIMED_OUT, "no transactional producer finished its init"))

        def transaction() -> bool:
            producer = first_producer()
            producer.begin_transaction()
            producer.produce(READY_TOPIC, token.encode())
            producer.commit_transaction(deadline.left(30))
            return True

        step("a transactional producer can init and commit", transaction)

        def read_back() -> bool:
            # A fresh consumer: __consumer_offsets has leaders now, so its first
            # coordinator request is answered; the early one (made to create the topic)
            # asks again only after librdkafka's coordinator-query interval. Measured
            # (bench/cluster_start.py, medians of 5, alone): 1 broker ready 3.32 ->
            # 2.59 s with this order and these fresh clients, read-back 0.91 -> 0.07 s.
            consumer = new_consumer()
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
             "committed", read_back)
    finally:
        for consumer in early_consumer:
            consumer.close()


def wait_whole(cluster: Any, topics: Iterable[str], timeout: float = 120.0,
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

    def whole() -> tuple[dict[str, Any]] | None:
        try:
            now = whole_now()
        except KafkaException:
            now = None
        if now is None:
            since.clear()
            return None
        if not since:
            since.append(time.monotonic())
        # in a 1-tuple: truthy even for no topics, when "every broker up" held
        return (now,) if time.monotonic() - since[0] >= steady else None

    (seen,) = wait_until(f"every broker up and every replica of {', '.join(topics) or '-'} "
                         f"in sync for {steady:g} s", whole, Deadline(timeout),
                         explain=getattr(cluster, "_why_stuck", None))
    return seen
