"""What each guarantee costs, measured on the cluster in front of you.

One function, :func:`measure`, shared by chapter 08 and ``bench/guarantees.py``: on one
cluster, in one run, it measures every *variant* -- ``acks=0``, ``acks=1``, ``acks=all``
(at-least-once, the baseline), ``idempotent``, and transactional at several commit
intervals -- and for each:

* **throughput**: records/s and MB/s, producing as fast as the client goes for a fixed
  time (a transaction is committed whenever the commit interval has passed, and the
  last one is inside the clock);
* **latency** at a steady, moderate rate: *ack* (from the moment a record was due to be
  sent to its delivery report) and *end-to-end* (due to be sent -> read by a
  ``read_committed`` consumer). Times start at the *scheduled* send, not the actual
  one, so a producer blocked in a commit makes the records waiting behind it late --
  the cost a real application pays (no "coordinated omission");
* **consume-transform-produce**: the lab's Python :class:`~deliverylab.workload.Pipeline`
  copying a pre-filled topic, in each mode.

Variants run *round-robin* (``acks=0, acks=1, ..., acks=0, acks=1, ...``) ``reps``
times, so a noisy neighbour (a 2-core laptop has several) hurts all of them alike; each
figure is the median over the repetitions. Every figure is shown beside its ratio to
at-least-once.

Why raw producers and not the lab's Recorder here: one History op per record costs more
Python time than the guarantee being measured, and these runs make no delivery claim.
"""

from __future__ import annotations

import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from ...clients import bootstrap_of, config
from ...errors import LabError, bad_value
from ...history import History
from ...modes import AT_LEAST_ONCE, AT_MOST_ONCE, IDEMPOTENT, TRANSACTIONAL, DeliveryMode
from ...notebook.progress import progress
from ...waiting import wait_until
from ...workload import Pipeline, ProducerWorkload
from . import stats

#: The measuring, which the kit re-exports beside :mod:`.stats`'s statistics and
#: :mod:`.plots`'s figures (``kit.<name>``).
__all__ = ["PUBLISHED", "Costs", "Variant", "acked_before_replicated", "ctp", "latency",
           "measure", "published", "throughput", "variants"]

@dataclass(frozen=True)
class Variant:
    """One way of producing: a delivery mode's settings plus, for transactions, when
    to commit."""

    name: str
    mode: DeliveryMode
    settings: dict[str, Any]
    commit_interval_ms: float | None = None  # transactional variants only

    @property
    def transactional(self) -> bool:
        return self.commit_interval_ms is not None


def variants(commit_intervals: Sequence[float] = (10, 100, 1000)) -> list[Variant]:
    """acks=0, acks=1, acks=all (at-least-once), idempotent, then one transactional
    variant per commit interval (``txn 100ms``)."""
    for ms in commit_intervals:
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms <= 0:
            raise bad_value("commit_intervals", list(commit_intervals),
                            "positive numbers of milliseconds, e.g. [10, 100, 1000]")
    plain = {"enable.idempotence": False}
    out = [Variant("acks=0", AT_MOST_ONCE, {**plain, "acks": "0", "retries": 0}),
           Variant("acks=1", AT_MOST_ONCE, {**plain, "acks": "1", "retries": 0}),
           Variant(stats.BASELINE, AT_LEAST_ONCE, dict(AT_LEAST_ONCE.producer)),
           Variant("idempotent", IDEMPOTENT, dict(IDEMPOTENT.producer))]
    out += [Variant(f"txn {ms:g}ms", TRANSACTIONAL, dict(TRANSACTIONAL.producer), float(ms))
            for ms in commit_intervals]
    return out


# --- measuring: one variant, one phase ---------------------------------------------------


def _producer(bootstrap: str, variant: Variant, settings: dict[str, Any]) -> Producer:
    conf = {**variant.settings, **settings}
    if variant.transactional:
        conf["transactional.id"] = f"cost-{uuid.uuid4().hex[:8]}"
    p = Producer(config(bootstrap, **conf))
    if variant.transactional:
        p.init_transactions(30)
    return p


def _payload(seq: int, size: int) -> bytes:
    return struct.pack(">q", seq) + b"x" * max(0, size - 8)


class _Txn:
    """Begin/commit by time for a transactional variant; nothing for the others."""

    def __init__(self, producer: Producer, variant: Variant) -> None:
        self.p, self.interval = producer, variant.commit_interval_ms
        self.opened: float | None = None

    def before_send(self) -> None:
        if self.interval is not None and self.opened is None:
            self.p.begin_transaction()
            self.opened = time.perf_counter()

    def after_send(self) -> None:
        if self.opened is not None and (time.perf_counter() - self.opened) * 1000 >= self.interval:
            self.end()

    def end(self) -> None:
        if self.opened is not None:
            self.p.commit_transaction(60)
            self.opened = None


def _warm_up(p: Producer, topic: str, txn: _Txn, name: str) -> None:
    """One record, acknowledged, before any clock starts.

    A new producer's first acknowledgement pays for connections and metadata and, for
    librdkafka's idempotent producer, for its producer id: ``rd_kafka_idemp_init`` starts
    the InitProducerId request on a 500 ms timer ("no available brokers this early",
    ``src/rdkafka_idempotence.c``), and nothing is sent until the id arrives: 515 ms to
    the first ack against 18 ms for acks=all on the lab's machine. A transactional
    producer acquired its id in ``init_transactions``, before any clock. Without this
    record the idempotent variant alone paid its start-up inside its phases: its ack p95
    (138 ms instead of 25) and its place against transactions (1.07x instead of 0.86x,
    one run each) were the measuring's, not idempotence's. The record's sequence is -1,
    so no latency reader counts it.
    """
    failed: list[Any] = []
    txn.before_send()
    _send(p, topic, _payload(-1, 8), 0,
          lambda err, _m: failed.append(err) if err is not None else None)
    txn.end()
    if p.flush(30) or failed:
        raise LabError(f"{name}: the warm-up record was not acknowledged within 30 s "
                       f"({failed[0] if failed else 'flush timed out'}); is the cluster whole?")


def _send(p: Producer, topic: str, value: bytes, partition: int, on_delivery: Callable) -> None:
    while True:
        try:
            p.produce(topic, value, partition=partition, on_delivery=on_delivery)
            return
        except BufferError:  # local queue full: let deliveries drain
            p.poll(0.005)


def throughput(bootstrap: str, topic: str, partitions: int, variant: Variant, size: int,
               seconds: float, settings: dict[str, Any] | None = None) -> tuple[int, float]:
    """Produce as fast as the client goes for ``seconds``; (records acked, elapsed s).

    The clock starts once one warm-up record is acknowledged (:func:`_warm_up`: the
    producer's start-up, its id included, is not the mode's steady cost) and stops after
    the last delivery report *and* the last commit: a transaction still open is work not
    done yet.
    """
    p = _producer(bootstrap, variant, settings or {})
    txn = _Txn(p, variant)
    failed: list[Any] = []

    def done(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

    _warm_up(p, topic, txn, variant.name)
    value, n = _payload(0, size), 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        txn.before_send()
        _send(p, topic, value, n % partitions, done)
        n += 1
        if n % 64 == 0:
            p.poll(0)
            txn.after_send()
    txn.end()
    if p.flush(60) or failed:
        raise LabError(f"{variant.name}: {len(failed)} of {n} records failed "
                       f"({failed[0] if failed else 'flush timed out'}); is the cluster whole?")
    elapsed = time.perf_counter() - t0
    if acked_before_replicated({**variant.settings, **(settings or {})}):
        _settle(bootstrap, topic, partitions)
    return n, elapsed


def acked_before_replicated(conf: dict[str, Any]) -> bool:
    """Does a producer with ``conf`` get its acknowledgement before every in-sync
    replica has the record (``acks`` 0 or 1)? Then a replication backlog may outlive
    the phase, and :func:`_settle` must wait it out. With ``acks=all`` (librdkafka's
    default) the leader answered only once the high watermark covered each record:
    after the flush there is nothing left to settle, and no time to spend on it."""
    return str(conf.get("acks", "all")).strip().lower() not in ("all", "-1")


def _settle(bootstrap: str, topic: str, partitions: int, quiet: float = 0.5,
            timeout: float = 30.0) -> None:
    """Wait until the topic's high watermarks stop moving: acks=0 hands records to the
    socket long before the brokers have replicated them, and that backlog must not land
    in the next variant's measurement."""
    consumer = Consumer(config(bootstrap, **{"group.id": f"cost-{uuid.uuid4().hex[:8]}"}))
    last: list[list[int] | None] = [None]
    still = [time.monotonic()]

    def quiet_now() -> bool:
        now = [consumer.get_watermark_offsets(TopicPartition(topic, part), timeout=10,
                                              cached=False)[1] for part in range(partitions)]
        if now != last[0]:
            last[0], still[0] = now, time.monotonic()
            return False
        return time.monotonic() - still[0] >= quiet

    try:  # a backlog still moving after `timeout` raises: it would be measured next
        wait_until(f"the high watermarks of {topic} to stop moving", quiet_now, timeout,
                   interval=0.1)
    finally:
        consumer.close()


def latency(bootstrap: str, topic: str, partitions: int, variant: Variant, size: int,
            seconds: float, rate: float, settings: dict[str, Any] | None = None,
            timeout: float = 30.0) -> tuple[list[float], list[float]]:
    """Produce at ``rate`` records/s for ``seconds``; (ack ms, end-to-end ms) per record.

    A ``read_committed`` consumer, assigned to the topic's current ends before the first
    send, reads every record back; a record it has not read within ``timeout`` s of the
    last send raises (no figure from partial data).
    """
    count = max(1, int(rate * seconds))
    due = [0.0] * count
    acked = [0.0] * count
    seen = [0.0] * count
    consumer = Consumer(config(bootstrap, **{
        "group.id": f"cost-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "isolation.level": "read_committed", "fetch.wait.max.ms": 20}))
    ends = []
    for part in range(partitions):
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, part), timeout=10)
        ends.append(TopicPartition(topic, part, high))
    consumer.assign(ends)
    got = [0]
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set() and got[0] < count:
            for m in consumer.consume(500, timeout=0.1):
                if m.error() is None:
                    seq = struct.unpack(">q", m.value()[:8])[0]
                    if 0 <= seq < count and not seen[seq]:
                        seen[seq] = time.perf_counter()
                        got[0] += 1

    reader = threading.Thread(target=read, name="cost-reader", daemon=True)
    reader.start()
    p = _producer(bootstrap, variant, settings or {})
    txn = _Txn(p, variant)
    try:
        _warm_up(p, topic, txn, variant.name)
        time.sleep(0.3)  # the reader's first fetch is on its way
        t0 = time.perf_counter()
        for seq in range(count):
            due[seq] = t0 + seq / rate
            # Serve delivery reports while waiting; poll() returns early when it served
            # one, so wait again until the record is due (sending early would flatter).
            while (wait := due[seq] - time.perf_counter()) > 0:
                p.poll(wait)
            txn.before_send()
            _send(p, topic, _payload(seq, size), seq % partitions,
                  lambda err, _m, s=seq: acked.__setitem__(s, time.perf_counter())
                  if err is None else None)
            p.poll(0)
            txn.after_send()
        txn.end()
        p.flush(60)
        reader.join(timeout)
    finally:
        stop.set()
        reader.join(5)
        consumer.close()
    missing = sum(1 for s in seen if not s)
    if missing or not all(acked):
        raise LabError(f"{variant.name}: {missing} of {count} records not read back and "
                       f"{sum(1 for a in acked if not a)} not acknowledged within "
                       f"{timeout:.0f} s; is the cluster whole?")
    return ([(a - d) * 1000 for a, d in zip(acked, due, strict=True)],
            [(s - d) * 1000 for s, d in zip(seen, due, strict=True)])


def ctp(cluster: Any, source: str, values: int, variant: Variant, batch: int = 500,
        settings: dict[str, Any] | None = None) -> tuple[int, float]:
    """The lab's Python pipeline copies ``values`` values of ``source`` in ``variant``'s
    mode (a fresh sink and group); (values processed, seconds).

    The clock starts at the first value polled (joining the group, a second or so, is
    not the mode's cost) and stops at its last recorded op: the last commit (the last
    send, for at-most-once, which commits before it processes)."""

    sink = cluster.create_topic(f"cost-out-{uuid.uuid4().hex[:8]}", partitions=3,
                                config={"min.insync.replicas": min(2, cluster.brokers)})
    mode = variant.mode
    if variant.transactional:
        mode = mode.with_commits(txn_size=10**9, commit_interval_ms=variant.commit_interval_ms)
    group = f"cost-{uuid.uuid4().hex[:8]}"
    history = History()
    stage = Pipeline(bootstrap_of(cluster, direct=True), source, sink, mode, history, group=group,
                     batch=batch, transactional_id=f"{group}-txn", settings=settings)
    report = stage.run(expected=values, idle_timeout=30)
    last = max(op.time for op in history)  # the last commit, or send (at-most-once)
    first = min(op.time for op in history if op.kind == "poll")
    elapsed = last - first
    if report.processed < values:
        raise LabError(f"{variant.name}: the pipeline processed {report.processed} of "
                       f"{values} values within its idle timeout")
    return report.processed, elapsed



# --- the one measuring function ------------------------------------------------------------


@dataclass
class Costs:
    """What :func:`measure` found: every trial, and the medians as rows."""

    trials: list[stats.Trial]
    params: dict[str, Any]
    seconds: float = 0.0

    @property
    def rows(self) -> list[dict[str, Any]]:
        return stats.with_ratios(stats.summarize(self.trials))

    def table(self) -> str:
        return stats.text_table(stats.summarize(self.trials))

    def shapes(self, size: int | None = None) -> dict[str, bool]:
        return stats.shapes(stats.summarize(self.trials), size)

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame(self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"params": self.params, "seconds": round(self.seconds, 1),
                "rows": [{k: (round(v, 3) if isinstance(v, float) else v)
                          for k, v in r.items()} for r in self.rows]}


def measure(cluster: Any, sizes: Sequence[int] = (1024,),
            commit_intervals: Sequence[float] = (10, 100, 1000), reps: int = 3,
            seconds: float = 1.5, latency_seconds: float = 2.5, rate: float = 400,
            linger_ms: float = 5, batch_size: int = 1_000_000, ctp_values: int = 2000,
            only: Iterable[str] | None = None, show_progress: bool = True) -> Costs:
    """Measure every variant at every record size, round-robin, ``reps`` times.

    Args:
        cluster: a running Cluster (measured on its direct listeners if it has proxies).
        sizes: record sizes in bytes.
        commit_intervals: one transactional variant per interval (ms).
        reps: repetitions; each figure is the median over them (3+ recommended).
        seconds: length of each throughput phase.
        latency_seconds, rate: length and steady rate (records/s) of each latency phase;
            make ``latency_seconds`` at least twice the longest commit interval.
        linger_ms, batch_size: producer batching (librdkafka ``linger.ms``,
            ``batch.size``), the same for every variant.
        ctp_values: values the Python pipeline copies per mode (0: skip it).
        only: measure only these variant names (plus the baseline).
    """
    for name, value, ok in (
            ("sizes", list(sizes), bool(sizes) and all(isinstance(s, int) and 8 <= s <= 1_000_000
                                                         for s in sizes)),
            ("reps", reps, isinstance(reps, int) and reps >= 1),
            ("seconds", seconds, isinstance(seconds, (int, float)) and seconds > 0),
            ("latency_seconds", latency_seconds,
             isinstance(latency_seconds, (int, float)) and latency_seconds > 0),
            ("rate", rate, isinstance(rate, (int, float)) and rate > 0),
            ("ctp_values", ctp_values, isinstance(ctp_values, int) and ctp_values >= 0)):
        if not ok:
            raise bad_value(name, value, {"sizes": "record sizes from 8 to 1000000 bytes",
                                          "reps": "a whole number >= 1",
                                          "ctp_values": "a whole number >= 0"}.get(
                                              name, "a positive number"))
    chosen = variants(commit_intervals)
    if only is not None:
        wanted = set(only) | {stats.BASELINE}
        unknown = wanted - {v.name for v in chosen}
        if unknown:
            raise bad_value("only", sorted(unknown), "names among "
                            + ", ".join(v.name for v in chosen))
        chosen = [v for v in chosen if v.name in wanted]
    settings = {"linger.ms": linger_ms, "batch.size": batch_size}
    bootstrap = bootstrap_of(cluster, direct=True)
    partitions = 3
    topic_config = {"min.insync.replicas": min(2, cluster.brokers)}
    topics = {(v.name, s): cluster.create_topic(f"cost-{uuid.uuid4().hex[:8]}",
                                                partitions=partitions, config=topic_config)
              for v in chosen for s in sizes}
    sources = {}
    if ctp_values:
        for s in sizes:
            sources[s] = cluster.create_topic(f"cost-in-{uuid.uuid4().hex[:8]}",
                                              partitions=partitions, config=topic_config)
            ProducerWorkload(bootstrap, sources[s], IDEMPOTENT, process="orders",
                             payload_size=max(0, s - 40)).run(ctp_values)
    ctp_variants = [v for v in chosen if v.name != "acks=0"]  # acks=0 is no pipeline mode
    steps = reps * len(sizes) * (len(chosen) + (len(ctp_variants) if ctp_values else 0))
    params = {"sizes": list(sizes), "commit_intervals": list(commit_intervals), "reps": reps,
              "seconds": seconds, "latency_seconds": latency_seconds, "rate": rate,
              "linger_ms": linger_ms, "batch_size": batch_size, "ctp_values": ctp_values,
              "brokers": cluster.brokers, "variants": [v.name for v in chosen]}

    bar = progress(steps, "measuring (round-robin)", widget=None if show_progress else False)
    trials: list[stats.Trial] = []
    t_start = time.monotonic()
    try:
        for rep in range(reps):
            for size in sizes:
                for v in chosen:
                    topic = topics[(v.name, size)]
                    n, secs = throughput(bootstrap, topic, partitions, v, size, seconds,
                                         settings)
                    acks, e2e = latency(bootstrap, topic, partitions, v, size,
                                        latency_seconds, rate, settings)
                    quantiles = stats.PERCENTILES
                    trials.append(stats.Trial(v.name, size, rep, "produce", n, secs,
                                              {q: stats.percentile(acks, q) for q in quantiles},
                                              {q: stats.percentile(e2e, q) for q in quantiles}))
                    bar.update()
                if ctp_values:
                    for v in ctp_variants:
                        n, secs = ctp(cluster, sources[size], ctp_values, v,
                                      settings={"linger.ms": linger_ms})
                        trials.append(stats.Trial(v.name, size, rep, "ctp", n, secs))
                        bar.update()
    finally:
        bar.close()
    return Costs(trials, params, time.monotonic() - t_start)


# --- the published figures, beside the measured ones ---------------------------------------

#: What the field quotes: (what, source, published ratio, numerator, denominator, figure).
PUBLISHED = (
    ("transactions committing every 100 ms, 1 KB records: throughput vs at-least-once",
     "Confluent, 'Transactions in Apache Kafka' (2017): ~3% lower", 0.97,
     "txn 100ms", stats.BASELINE, "records_s"),
    ("idempotent producer: throughput vs acks=all without idempotence",
     "KIP-679 (the Java producer's default since Kafka 3.0): 'won't have a significant "
     "performance impact'", 1.0,
     "idempotent", stats.BASELINE, "records_s"),
)
# No figure for acks=all vs acks=1 latency: the often-quoted "roughly doubles p95" has no
# checkable source, and acks moves the *producer's* ack latency only -- a consumer reads
# below the high watermark, so end to end both wait for the followers' copy.


def published(rows: list[dict[str, Any]], size: int | None = None) -> list[dict[str, Any]]:
    """Each published figure beside the same ratio measured here (None if a variant
    it needs was not measured)."""
    out = []
    for what, source, quoted, num, den, fig in PUBLISHED:
        try:
            measured = (stats.row_of(rows, num, size=size)[fig]
                        / stats.row_of(rows, den, size=size)[fig])
        except (ValueError, KeyError, ZeroDivisionError):
            measured = None
        out.append({"what": what, "source": source, "published": quoted,
                    "measured": measured, "ratio": f"{num} / {den} ({fig})"})
    return out
