"""Workloads: clients that write unique values in one delivery mode and *record* it.

Clients record, checkers judge. A producer writes ``producer:seq`` values and records
one ``send`` op per value from its delivery report (ok / fail / info). The processing
stage (``Pipeline``) reads an input topic and "processes" each value by writing it to an
output topic, committing its input offsets before, after, or inside the transaction,
as its mode says; crashing it at a chosen point is how chapters show re-processing and
loss. The final read-back (:func:`~deliverylab.readers.read_back`) is what the Checker
compares against.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from . import values as V
from .clients import (
    Recorder,
    bootstrap_of,
    close_consumer,
    config,
    end_transaction,
    is_fencing,
)
from .errors import LabError, bad_value
from .history import History, offsets_detail
from .modes import DeliveryMode
from .modes import mode as get_mode

#: Where a processing stage crashes, per commit strategy: between its two steps, in
#: the order its mode does them (the registry's ``crash_consumer``). One point per
#: strategy: a crash point a mode cannot reach would silently change nothing.
CRASH_POINTS = {"before": "after_commit_before_process",
                "after": "after_process_before_commit",
                "transaction": "mid_transaction"}



@dataclass
class ClientReport:
    """What one client process did, in counts: the History holds the per-value detail.

    A producer run and a processing stage count different things; both name their
    process and whether a successor's epoch fenced them (the zombie's end)."""

    process: str
    fenced: bool = False


@dataclass
class ProduceReport(ClientReport):
    """What one producer run did."""

    sent: int = 0
    acked: int = 0
    failed: int = 0
    unknown: int = 0
    transactions_committed: int = 0
    transactions_aborted: int = 0
    seconds: float = 0.0


class ProducerWorkload:
    """Writes ``count`` unique values to ``topic`` in ``mode``, recording every send.

    Args:
        target: a Cluster (or anything with ``bootstrap_servers``) or a bootstrap string.
        topic: where to write.
        mode: a :class:`DeliveryMode` or its name.
        history: where ops are recorded (a new one if omitted).
        process: this producer's id; also the producer part of each value.
        rate: values per second (None: as fast as the client goes). A steady rate lets a
            fault scheduled "after N messages" land between values, as in a classroom.
        transactional_id: for transactional modes (default ``"<process>-txn"``).
        payload_size: bytes of padding per value (benchmarks use ~1 KB).
        settings: extra producer settings on top of the mode's.
        txn_size, commit_interval_ms: transactional modes commit after this many values
            or once the transaction is this old, whichever first (default: the mode's,
            1000 values / 100 ms; see :class:`~deliverylab.modes.DeliveryMode`).
    """

    def __init__(self, target: object, topic: str, mode: DeliveryMode | str,
                 history: History | None = None, process: str = "producer-0",
                 rate: float | None = None, transactional_id: str | None = None,
                 payload_size: int = 0, settings: dict | None = None,
                 txn_size: int | None = None,
                 commit_interval_ms: float | None = None) -> None:
        self.bootstrap = bootstrap_of(target)
        self.topic = topic
        self.mode = get_mode(mode).with_commits(txn_size, commit_interval_ms)
        self.history = history if history is not None else History()
        self.process = process
        if rate is not None and rate <= 0:
            raise bad_value("rate", rate, "None or a positive number of values per second")
        self.rate = rate
        self.payload_size = payload_size
        conf = dict(self.mode.producer)
        if self.mode.transactional:
            conf["transactional.id"] = transactional_id or f"{process}-txn"
        conf.update(settings or {})
        self.conf = conf
        self.report = ProduceReport(process)
        self.recorder = Recorder(self.history, process, topic)
        self._txn: str | None = None
        self._txn_count = 0
        self._txn_values = 0
        self._txn_opened = 0.0
        self._partitions = 1

    def run(self, count: int, start_seq: int = 0,
            on_sent: Callable[[int], None] | None = None,
            crash_after: int | None = None, flush_timeout: float = 60.0) -> ProduceReport:
        """Send ``count`` values (seq ``start_seq``...), then flush and report.

        ``on_sent(n)`` is called after the n-th value is handed to the client: a fault
        schedule hooks in here. ``crash_after`` (the registry's ``crash_producer``)
        abandons the producer after that many values -- mid-transaction in
        transactional modes -- as a crash would, and records the crash as a fault op.
        """
        if not isinstance(count, int) or count < 0:
            raise bad_value("count", count, "a whole number >= 0")
        if crash_after is not None and not (isinstance(crash_after, int)
                                            and 1 <= crash_after <= count):
            raise bad_value("crash_after", crash_after,
                            f"None or a whole number from 1 to count ({count}): a crash "
                            "that can never happen is not a fault")
        t0 = time.monotonic()
        producer = Producer(config(self.bootstrap, **self.conf))
        meta = producer.list_topics(self.topic, timeout=30).topics.get(self.topic)
        self._partitions = max(1, len(meta.partitions)) if meta is not None else 1
        try:
            if self.mode.transactional:
                self._init(producer)
            # The rate counts from the first send: a slow init_transactions (a second
            # on a busy laptop) must not turn into a burst that catches up with it.
            t_pace = time.monotonic()
            for i in range(count):
                if self.report.fenced:
                    break
                seq = start_seq + i
                if self.mode.transactional and self._txn is None:
                    self._begin(producer)
                vid = V.ValueId(self.process, seq)
                self._produce(producer, vid)
                self.report.sent += 1
                self._txn_values += 1
                if on_sent is not None:
                    on_sent(self.report.sent)
                if crash_after is not None and self.report.sent >= crash_after:
                    producer.flush(flush_timeout)
                    self.history.record(
                        self.process, "fault", "info", fault="crash_producer",
                        txn=self._txn, detail=f"{self.process} crashes after "
                        f"{self.report.sent} values" + (f", {self._txn} left open"
                                                        if self._txn else ""))
                    return self._finish(t0)  # abandoned: the open transaction stays open
                if self.mode.transactional and self.mode.commit_due(
                        self._txn_values, time.monotonic() - self._txn_opened):
                    self._commit(producer)
                if self.rate:
                    _pace(t_pace, self.report.sent, self.rate)
            if self.mode.transactional and self._txn is not None and not self.report.fenced:
                self._commit(producer)
            producer.flush(flush_timeout)
            # never reported: maybe written
            self.recorder.settle(f"no delivery report after {flush_timeout}s")
        finally:
            if not self.mode.transactional:
                producer.flush(0)
        return self._finish(t0)

    def _finish(self, t0: float) -> ProduceReport:
        counts = self.recorder.counts
        self.report.acked, self.report.failed, self.report.unknown = (
            counts["ok"], counts["fail"], counts["info"])
        self.report.seconds = time.monotonic() - t0
        return self.report

    def _produce(self, producer: Producer, vid: V.ValueId) -> None:
        # Values go round-robin over the partitions by sequence number: every
        # partition gets traffic, deterministically, whatever the key hash does.
        try:
            self.recorder.send(producer, vid, vid.seq % self._partitions, self._txn,
                               self.payload_size)
        except KafkaException as exc:
            if not is_fencing(exc):
                raise
            self.report.fenced = True

    # ------------------------------------------------------------ transactions
    def _init(self, producer: Producer) -> None:
        try:
            producer.init_transactions(30)
            self.history.record(self.process, "init_txn", "ok",
                                detail=self.conf["transactional.id"])
        except KafkaException as exc:
            self.history.record(self.process, "init_txn", "fail", error=exc)
            raise

    def _begin(self, producer: Producer) -> None:
        self._txn_count += 1
        self._txn = f"{self.process}/txn-{self._txn_count}"
        producer.begin_transaction()
        self._txn_values, self._txn_opened = 0, time.monotonic()
        self.history.record(self.process, "begin_txn", "ok", txn=self._txn)

    def _commit(self, producer: Producer) -> None:
        txn, self._txn = self._txn, None
        try:
            end_transaction(producer, "commit")
            self.history.record(self.process, "commit_txn", "ok", txn=txn)
            self.report.transactions_committed += 1
        except KafkaException as exc:
            err = exc.args[0]
            if is_fencing(exc):
                self.report.fenced = True
                self.history.record(self.process, "commit_txn", "fail", txn=txn, error=exc)
                return
            if err.txn_requires_abort():
                self.history.record(self.process, "commit_txn", "fail", txn=txn, error=exc)
                end_transaction(producer, "abort")
                self.history.record(self.process, "abort_txn", "ok", txn=txn)
                self.report.transactions_aborted += 1
                return
            # Still retriable after every attempt: the outcome is unknown and the
            # producer cannot begin another transaction until this one ends.
            self.history.record(self.process, "commit_txn", "info", txn=txn, error=exc)
            raise


def _pace(t0: float, sent: int, rate: float) -> None:
    wait = t0 + sent / rate - time.monotonic()
    if wait > 0:
        time.sleep(wait)


@dataclass
class PipelineReport(ClientReport):
    """What one processing-stage instance did before it finished or crashed."""

    polled: int = 0
    processed: int = 0
    commits: int = 0
    rejected_commits: int = 0
    crashed: bool = False
    values: list[str] = field(default_factory=list)


class Pipeline:
    """Consume ``source``, "process" each value by writing it to ``sink``, commit.

    The commit strategy comes from the mode: ``before`` processing, ``after`` it, or
    inside the output ``transaction`` (``send_offsets_to_transaction``). Several
    instances share ``group``: run one, crash it, run another, as a restarted service
    would.

    ``batch`` values are polled at a time; the ``before``/``after`` strategies commit
    offsets once per batch. A transaction spans batches: it commits (offsets included)
    after ``txn_size`` values or ``commit_interval_ms``, whichever first, and whenever
    the input runs dry, as Kafka Streams does with ``commit.interval.ms``.
    ``settings``: extra producer settings on top of the mode's (e.g. ``linger.ms``).
    """

    def __init__(self, target: object, source: str, sink: str, mode: DeliveryMode | str,
                 history: History | None = None, group: str = "pipeline",
                 process: str = "pipeline-0", batch: int = 10,
                 transactional_id: str | None = None, txn_size: int | None = None,
                 commit_interval_ms: float | None = None,
                 settings: dict | None = None) -> None:
        self.bootstrap = bootstrap_of(target)
        self.source, self.sink = source, sink
        self.mode = get_mode(mode).with_commits(txn_size, commit_interval_ms)
        self.settings = dict(settings or {})
        self.history = history if history is not None else History()
        self.group, self.process, self.batch = group, process, batch
        # One transactional.id per *input*, shared by every instance: that is what lets
        # a restarted instance fence its zombie predecessor.
        self.transactional_id = transactional_id or f"{group}-txn"
        self.report = PipelineReport(process)
        self.recorder = Recorder(self.history, process, sink)
        self.zombie: Producer | None = None

    def run(self, expected: int | None = None, crash_after: int | None = None,
            crash_point: str | None = None, stall_after: int | None = None,
            stall_seconds: float = 0.0, idle_timeout: float = 10.0,
            on_processed: Callable[[int], None] | None = None) -> PipelineReport:
        """Process until ``expected`` values are processed (default: until this instance
        has caught up with the end of its partitions), or ``idle_timeout``, or a crash.

        ``crash_after=k`` (the registry's ``crash_consumer``) crashes at the batch where
        the k-th value is processed, between processing and committing in the order
        the mode does them (:data:`CRASH_POINTS`; ``crash_point`` may only name that
        point). ``stall_after=k`` (``stall_consumer``) sleeps ``stall_seconds`` there
        instead (past ``max.poll.interval.ms`` the group evicts this instance and
        another takes over; this one's late commit is then rejected). A crash or stall
        asked for must happen: if the input runs out first, :class:`LabError`.
        """
        point = CRASH_POINTS[self.mode.commit]
        if crash_point is not None and crash_point != point:
            raise bad_value("crash_point", crash_point,
                            f"{point!r} (the only crash point of {self.mode.name}, which "
                            f"commits {self.mode.commit} processing), or None")
        for name, value in (("crash_after", crash_after), ("stall_after", stall_after)):
            if value is not None and not (isinstance(value, int) and value >= 1):
                raise bad_value(name, value, "None or a whole number >= 1")
        if stall_after is not None and self.mode.commit != "after":
            raise bad_value("stall_after", stall_after, "None: a stall past the poll "
                            "interval shows only in a mode that commits after processing")
        consumer = Consumer(config(self.bootstrap, **{**self.mode.consumer,
                                                       "group.id": self.group}))
        pconf = {k: v for k, v in self.mode.producer.items() if k != "retries"} \
            if self.mode.name == "AT_MOST_ONCE" else dict(self.mode.producer)
        if self.mode.transactional:
            pconf["transactional.id"] = self.transactional_id
        pconf.update(self.settings)
        producer = Producer(config(self.bootstrap, **pconf))
        txn_n = 0
        txn: str | None = None  # the open transaction, across batches
        txn_values, txn_opened = 0, 0.0
        pending: dict[tuple[str, int], int] = {}  # its input offsets, to commit with it
        if self.mode.transactional:
            producer.init_transactions(30)
            self.history.record(self.process, "init_txn", "ok", detail=self.transactional_id)
        consumer.subscribe([self.source])
        last_progress = time.monotonic()
        try:
            while expected is None or self.report.processed < expected:
                msgs = [m for m in consumer.consume(self.batch, timeout=0.5) if not m.error()]
                if not msgs:
                    if txn is not None:  # the input ran dry: commit what is open
                        ok = self._commit_txn(producer, consumer, _offset_list(pending), txn)
                        txn, pending = None, {}
                        if not ok:
                            break
                    if time.monotonic() - last_progress > idle_timeout:
                        break
                    if expected is None and _caught_up(consumer):
                        break
                    continue
                last_progress = time.monotonic()
                vids = [(self._record_poll(m), m.partition()) for m in msgs]
                crash_here = (crash_after is not None
                              and self.report.processed + len(msgs) >= crash_after)
                stall_here = (stall_after is not None and self.report.processed < stall_after
                              <= self.report.processed + len(msgs))
                offsets = _next_offsets(msgs)
                if self.mode.commit == "before":
                    self._commit(consumer, offsets)
                    if crash_here:
                        return self._crash(consumer, producer)
                    self._process(producer, vids, None)
                elif self.mode.commit == "after":
                    self._process(producer, vids, None)
                    if crash_here:
                        return self._crash(consumer, producer)
                    if stall_here:
                        self.history.record(
                            self.process, "fault", "info", fault="stall_consumer",
                            detail=f"{self.process} stalls {stall_seconds:g} s before "
                                   "its commit")
                        time.sleep(stall_seconds)
                    self._commit(consumer, offsets)
                else:
                    if txn is None:
                        txn_n += 1
                        txn = f"{self.process}/txn-{txn_n}"
                        producer.begin_transaction()
                        txn_values, txn_opened = 0, time.monotonic()
                        self.history.record(self.process, "begin_txn", "ok", txn=txn)
                    self._process(producer, vids, txn, flush=False)
                    txn_values += len(vids)
                    for tp in offsets:
                        pending[(tp.topic, tp.partition)] = tp.offset
                    if crash_here:
                        producer.flush(10)
                        return self._crash(consumer, producer)
                    if self.mode.commit_due(txn_values, time.monotonic() - txn_opened):
                        ok = self._commit_txn(producer, consumer, _offset_list(pending), txn)
                        txn, pending = None, {}
                        if not ok:
                            break
                if on_processed is not None:
                    on_processed(self.report.processed)
            if txn is not None:  # done: commit the last, partly filled transaction
                self._commit_txn(producer, consumer, _offset_list(pending), txn)
        finally:
            if not self.report.crashed:
                close_consumer(consumer)
        for name, value in (("crash_after", crash_after), ("stall_after", stall_after)):
            if value is not None and self.report.processed < value and not self.report.fenced:
                raise LabError(f"{self.process} processed only {self.report.processed} "
                               f"values, so {name}={value} never happened: give its input "
                               "more values or a smaller count")
        return self.report

    def _record_poll(self, msg) -> str:
        try:
            vid = str(V.decode(msg.value()))
        except ValueError:
            vid = None
        self.history.record(self.process, "poll", "ok", [vid] if vid else [],
                            topic=msg.topic(), partition=msg.partition(), offset=msg.offset())
        self.report.polled += 1
        return vid

    def _process(self, producer: Producer, vids: list[tuple[str | None, int]],
                 txn: str | None, flush: bool = True) -> None:
        """Write each value to the same partition number of the sink (keeps its order)."""
        for vid, partition in vids:
            if vid is None:
                continue
            self.recorder.send(producer, V.parse(vid), partition, txn)
            self.report.processed += 1
            self.report.values.append(vid)
        if flush:
            producer.flush(30)
        else:
            producer.poll(0)

    def _commit(self, consumer: Consumer, offsets: list[TopicPartition]) -> None:
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            self.history.record(self.process, "commit", "ok", detail=offsets_detail(offsets))
            self.report.commits += 1
        except KafkaException as exc:
            # E.g. evicted from the group after a stall: the new owner has the partitions.
            self.history.record(self.process, "commit", "fail", error=exc,
                                detail=offsets_detail(offsets))
            self.report.rejected_commits += 1

    def _commit_txn(self, producer: Producer, consumer: Consumer,
                    offsets: list[TopicPartition], txn: str) -> bool:
        try:
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
            self.history.record(self.process, "send_offsets", "ok", txn=txn,
                                detail=offsets_detail(offsets))
            end_transaction(producer, "commit")
            self.history.record(self.process, "commit_txn", "ok", txn=txn)
            self.report.commits += 1
            return True
        except KafkaException as exc:
            err = exc.args[0]
            self.history.record(self.process, "commit_txn", "fail", txn=txn, error=exc)
            if err.txn_requires_abort():
                end_transaction(producer, "abort")
                self.history.record(self.process, "abort_txn", "ok", txn=txn)
                return True
            self.report.fenced = True
            return False

    def _crash(self, consumer: Consumer, producer: Producer) -> PipelineReport:
        """Stop as a killed process would: no offset commit, no transaction end.

        The consumer leaves its group at once rather than after ``session.timeout.ms``:
        a real crash only makes the next instance wait longer, and what matters — the
        offsets — is the same, since nothing is committed. The producer is kept, with
        its open transaction, as :attr:`zombie`: a chapter can try to write with it
        after a new instance has fenced it.
        """
        self.report.crashed = True
        where = CRASH_POINTS[self.mode.commit].replace("_", " ")
        self.history.record(self.process, "fault", "info", fault="crash_consumer",
                            detail=f"{self.process} crashes ({where})")
        close_consumer(consumer)
        self.zombie = producer
        return self.report


def _caught_up(consumer: Consumer) -> bool:
    """True once this member owns partitions and its position is at their end.

    librdkafka moves the position past transaction markers and aborted records, so
    "position == high watermark" holds at the end under both isolation levels (while
    a transaction is open it does not, and the idle timeout ends the run instead).
    """
    assignment = consumer.assignment()
    if not assignment:
        return False
    for tp in consumer.position(assignment):
        _, high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
        offset = tp.offset
        if offset < 0:  # nothing fetched yet: where the group left off is the position
            offset = consumer.committed([tp], timeout=5)[0].offset
        if high > 0 and offset < high:
            return False
    return True


def _next_offsets(msgs: Iterable) -> list[TopicPartition]:
    last: dict[tuple[str, int], int] = {}
    for m in msgs:
        last[(m.topic(), m.partition())] = max(last.get((m.topic(), m.partition()), -1),
                                               m.offset())
    return [TopicPartition(t, p, o + 1) for (t, p), o in sorted(last.items())]


def _offset_list(pending: dict[tuple[str, int], int]) -> list[TopicPartition]:
    return [TopicPartition(t, p, o) for (t, p), o in sorted(pending.items())]
