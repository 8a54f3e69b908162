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

import statistics
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from .clients import config
from .errors import LabError, bad_value
from .modes import AT_LEAST_ONCE, AT_MOST_ONCE, IDEMPOTENT, TRANSACTIONAL, DeliveryMode

#: The variant every ratio is taken against: at-least-once (acks=all, retries).
BASELINE = "acks=all"
#: acks=0 vs acks=all throughput: the share below 1.0 that counts as noise, not a
#: finding (see :func:`shapes`).
ACKS0_NOISE = 0.7

#: Latency percentiles reported.
PERCENTILES = (50, 95, 99)


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
           Variant(BASELINE, AT_LEAST_ONCE, dict(AT_LEAST_ONCE.producer)),
           Variant("idempotent", IDEMPOTENT, dict(IDEMPOTENT.producer))]
    out += [Variant(f"txn {ms:g}ms", TRANSACTIONAL, dict(TRANSACTIONAL.producer), float(ms))
            for ms in commit_intervals]
    return out


# --- pure parts: percentiles, medians, the ratio table ----------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by nearest rank: a value that was measured,
    never an interpolation between two. Raises on an empty list (no data is not 0)."""
    if not values:
        raise bad_value("values", [], "at least one measurement")
    if not 0 <= q <= 100:
        raise bad_value("q", q, "a percentile from 0 to 100")
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n * q / 100), at least 1
    return float(ordered[int(rank) - 1])


@dataclass
class Trial:
    """One measurement of one variant at one record size (one repetition)."""

    variant: str
    size: int
    rep: int
    kind: str  # "produce" or "ctp"
    records: int
    seconds: float
    ack_ms: dict[int, float] = field(default_factory=dict)  # percentile -> ms
    e2e_ms: dict[int, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def summarize(trials: Iterable[Trial]) -> list[dict[str, Any]]:
    """One row per (kind, size, variant): the median over repetitions of each figure.

    Medians, not means or bests: one repetition disturbed by a neighbour moves neither.
    """
    groups: dict[tuple[str, int, str], list[Trial]] = {}
    for t in trials:
        groups.setdefault((t.kind, t.size, t.variant), []).append(t)
    rows = []
    for (kind, size, variant), ts in groups.items():
        rate = statistics.median(t.rate for t in ts)
        row: dict[str, Any] = {"kind": kind, "size": size, "variant": variant,
                               "reps": len(ts), "records_s": rate,
                               "mb_s": rate * size / 1e6}
        for name in ("ack", "e2e"):
            for q in PERCENTILES:
                got = [getattr(t, f"{name}_ms")[q] for t in ts if q in getattr(t, f"{name}_ms")]
                if got:
                    row[f"{name}_p{q}_ms"] = statistics.median(got)
        rows.append(row)
    return rows


#: The figures of a row, in table order.
FIGURES = ("records_s", "mb_s", *(f"{n}_p{q}_ms" for n in ("ack", "e2e") for q in PERCENTILES))


def with_ratios(rows: list[dict[str, Any]], baseline: str = BASELINE) -> list[dict[str, Any]]:
    """Each row plus ``<figure>_ratio``: the figure over the baseline's of the same kind
    and record size (None where the baseline lacks it)."""
    base = {(r["kind"], r["size"]): r for r in rows if r["variant"] == baseline}
    out = []
    for row in rows:
        b = base.get((row["kind"], row["size"]))
        new = dict(row)
        for f in FIGURES:
            if f in row:
                new[f"{f}_ratio"] = (row[f] / b[f] if b is not None and b.get(f) else None)
        out.append(new)
    return out


def _cell(row: dict[str, Any], f: str) -> str:
    if f not in row:
        return "-"
    ratio = row.get(f"{f}_ratio")
    value = f"{row[f]:.0f}" if f == "records_s" else f"{row[f]:.1f}"
    return value + (f" ({ratio:.2f}x)" if ratio is not None else "")


def text_table(rows: list[dict[str, Any]], baseline: str = BASELINE) -> str:
    """The table as text: every figure beside its ratio to ``baseline`` (``1.00x``)."""
    rows = with_ratios(rows, baseline)
    heads = {"records_s": "records/s", "mb_s": "MB/s",
             **{f"{n}_p{q}_ms": f"{n} p{q} ms" for n in ("ack", "e2e") for q in PERCENTILES}}
    lines = []
    for kind in ("produce", "ctp"):
        part = [r for r in rows if r["kind"] == kind]
        if not part:
            continue
        figs = [f for f in FIGURES if any(f in r for r in part)]
        cells = [[r["variant"], str(r["size"])] + [_cell(r, f) for f in figs] for r in part]
        head = ["variant", "bytes"] + [heads[f] for f in figs]
        widths = [max(len(x[i]) for x in [head, *cells]) for i in range(len(head))]
        title = ("produce: throughput, ack and end-to-end latency" if kind == "produce"
                 else "consume-transform-produce (Python pipeline): throughput")
        lines += [f"{title}; (ratio to {baseline})",
                  "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)),
                  "  ".join("-" * w for w in widths)]
        lines += ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in cells]
        lines.append("")
    return "\n".join(lines).rstrip()


def row_of(rows: list[dict[str, Any]], variant: str, kind: str = "produce",
           size: int | None = None) -> dict[str, Any]:
    """The summary row of ``variant`` (at ``size``, default: the first size measured)."""
    for r in rows:
        if r["variant"] == variant and r["kind"] == kind and (size is None or r["size"] == size):
            return r
    raise bad_value("variant", variant, "a variant that was measured: "
                    + ", ".join(sorted({r["variant"] for r in rows if r["kind"] == kind})))


def shapes(rows: list[dict[str, Any]], size: int | None = None) -> dict[str, bool]:
    """The shapes chapter 08 asserts, from medians: never absolute numbers.

    * transactions committing every 1 s keep >= 0.8x idempotent throughput;
    * end-to-end p95 latency grows with the commit interval: at the longest interval it
      is at least twice that of every shorter one. Not "strictly at every step": below
      the fixed round of one commit (~75 ms on a 2-core laptop) a shorter interval buys
      nothing -- at 10 ms the producer spends its time waiting for that round, so 10 ms
      and 100 ms measure alike, in either order;
    * acks=0 is at least as fast as acks=all: its throughput no lower than
      :data:`ACKS0_NOISE` of acks=all's (both capped by the Python loop on a laptop),
      and its acknowledgements no later (p95): it waits for nobody.
    """
    txns = sorted((r for r in rows if r["kind"] == "produce" and r["variant"].startswith("txn ")
                   and (size is None or r["size"] == size)),
                  key=lambda r: float(r["variant"][4:-2]))
    if size is None and txns:
        txns = [r for r in txns if r["size"] == txns[0]["size"]]
    size = txns[0]["size"] if txns else size
    out: dict[str, bool] = {}
    idem = row_of(rows, "idempotent", size=size)
    slow = [r for r in txns if r["variant"] == "txn 1000ms"]
    if slow:
        out["txn_1s_keeps_0.8_of_idempotent"] = slow[0]["records_s"] >= 0.8 * idem["records_s"]
    if len(txns) >= 2:
        p95 = [r["e2e_p95_ms"] for r in txns]
        out["e2e_p95_grows_with_commit_interval"] = p95[-1] >= 2 * max(p95[:-1])
    zero, base = row_of(rows, "acks=0", size=size), row_of(rows, BASELINE, size=size)
    # Throughput within the noise of a shared 2-core box: there one Python producer loop
    # caps both (~100k records/s), so their ratio wanders 0.8-1.4 from run to run. What
    # acks=0 certainly saves is the wait for the acknowledgement.
    out["acks0_at_least_acks_all"] = (zero["records_s"] >= ACKS0_NOISE * base["records_s"]
                                      and zero["ack_p95_ms"] <= base["ack_p95_ms"])
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

    The clock stops after the last delivery report *and* the last commit: a transaction
    still open is work not done yet.
    """
    p = _producer(bootstrap, variant, settings or {})
    txn = _Txn(p, variant)
    failed: list[Any] = []

    def done(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(err)

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
    try:
        last, still, end = None, time.monotonic(), time.monotonic() + timeout
        while time.monotonic() < end:
            now = [consumer.get_watermark_offsets(TopicPartition(topic, part), timeout=10,
                                                  cached=False)[1] for part in range(partitions)]
            if now != last:
                last, still = now, time.monotonic()
            elif time.monotonic() - still >= quiet:
                return
            time.sleep(0.1)
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
    from .history import History
    from .workload import Pipeline

    sink = cluster.create_topic(f"cost-out-{uuid.uuid4().hex[:8]}", partitions=3,
                                config={"min.insync.replicas": min(2, cluster.size)})
    mode = variant.mode
    if variant.transactional:
        mode = mode.with_commits(txn_size=10**9, commit_interval_ms=variant.commit_interval_ms)
    group = f"cost-{uuid.uuid4().hex[:8]}"
    history = History()
    stage = Pipeline(_bootstrap(cluster), source, sink, mode, history, group=group,
                     batch=batch, transactional_id=f"{group}-txn", settings=settings)
    report = stage.run(expected=values, idle_timeout=30)
    last = max(op.time for op in history)  # the last commit, or send (at-most-once)
    first = min(op.time for op in history if op.kind == "poll")
    elapsed = last - first
    if report.processed < values:
        raise LabError(f"{variant.name}: the pipeline processed {report.processed} of "
                       f"{values} values within its idle timeout")
    return report.processed, elapsed


def _bootstrap(cluster: Any) -> str:
    """The brokers' own listeners: the cost of a guarantee, not of the fault proxy."""
    return getattr(cluster, "direct_bootstrap_servers", None) or cluster.bootstrap_servers


# --- the one measuring function ------------------------------------------------------------


@dataclass
class Costs:
    """What :func:`measure` found: every trial, and the medians as rows."""

    trials: list[Trial]
    params: dict[str, Any]
    seconds: float = 0.0

    @property
    def rows(self) -> list[dict[str, Any]]:
        return with_ratios(summarize(self.trials))

    def table(self) -> str:
        return text_table(summarize(self.trials))

    def shapes(self, size: int | None = None) -> dict[str, bool]:
        return shapes(summarize(self.trials), size)

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
        wanted = set(only) | {BASELINE}
        unknown = wanted - {v.name for v in chosen}
        if unknown:
            raise bad_value("only", sorted(unknown), "names among "
                            + ", ".join(v.name for v in chosen))
        chosen = [v for v in chosen if v.name in wanted]
    settings = {"linger.ms": linger_ms, "batch.size": batch_size}
    bootstrap = _bootstrap(cluster)
    partitions = 3
    topic_config = {"min.insync.replicas": min(2, cluster.size)}
    topics = {(v.name, s): cluster.create_topic(f"cost-{uuid.uuid4().hex[:8]}",
                                                partitions=partitions, config=topic_config)
              for v in chosen for s in sizes}
    sources = {}
    if ctp_values:
        from .workload import ProducerWorkload

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
              "brokers": cluster.size, "variants": [v.name for v in chosen]}
    from .progressbar import progress

    bar = progress(steps, "measuring (round-robin)", widget=None if show_progress else False)
    trials: list[Trial] = []
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
                    trials.append(Trial(v.name, size, rep, "produce", n, secs,
                                        {q: percentile(acks, q) for q in PERCENTILES},
                                        {q: percentile(e2e, q) for q in PERCENTILES}))
                    bar.update()
                if ctp_values:
                    for v in ctp_variants:
                        n, secs = ctp(cluster, sources[size], ctp_values, v,
                                      settings={"linger.ms": linger_ms})
                        trials.append(Trial(v.name, size, rep, "ctp", n, secs))
                        bar.update()
    finally:
        bar.close()
    return Costs(trials, params, time.monotonic() - t_start)


# --- the published figures, beside the measured ones ---------------------------------------

#: What the field quotes: (what, source, published ratio, numerator, denominator, figure).
PUBLISHED = (
    ("transactions committing every 100 ms, 1 KB records: throughput vs at-least-once",
     "Confluent, 'Transactions in Apache Kafka' (2017): ~3% lower", 0.97,
     "txn 100ms", BASELINE, "records_s"),
    ("idempotent producer: throughput vs acks=all without idempotence",
     "KIP-679 (the Java producer's default since Kafka 3.0): 'won't have a significant "
     "performance impact'", 1.0,
     "idempotent", BASELINE, "records_s"),
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
            measured = row_of(rows, num, size=size)[fig] / row_of(rows, den, size=size)[fig]
        except (ValueError, KeyError, ZeroDivisionError):
            measured = None
        out.append({"what": what, "source": source, "published": quoted,
                    "measured": measured, "ratio": f"{num} / {den} ({fig})"})
    return out


# --- figures ----------------------------------------------------------------------------


def plot(costs: Costs, size: int | None = None, save: str | None = None) -> Any:
    """Throughput and latency per variant (bars, ratio to at-least-once on top), and
    end-to-end p95 against the commit interval for the transactional variants."""
    from .plots import COLORS, LabFigure, _finish

    rows = [r for r in costs.rows if r["kind"] == "produce"]
    size = size if size is not None else rows[0]["size"]
    rows = [r for r in rows if r["size"] == size]
    names = [r["variant"] for r in rows]
    fig = LabFigure(figsize=(13, 4))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    xs = range(len(rows))
    bars = ax1.bar(xs, [r["records_s"] for r in rows], color=[
        COLORS["ok"] if r["variant"] == BASELINE else COLORS["record"] for r in rows])
    for bar, r in zip(bars, rows, strict=True):
        ratio = r.get("records_s_ratio")
        if ratio is not None:
            ax1.annotate(f"{ratio:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                         ha="center", va="bottom", fontsize=8)
    ax1.set_title(f"throughput, {size} B records")
    ax1.set_ylabel("records/s")
    width = 0.38
    ax2.bar([x - width / 2 for x in xs], [r["ack_p95_ms"] for r in rows], width,
            label="ack p95", color=COLORS["info"])
    ax2.bar([x + width / 2 for x in xs], [r["e2e_p95_ms"] for r in rows], width,
            label="end-to-end p95", color=COLORS["read"])
    ax2.set_yscale("log")
    ax2.set_title("latency at a steady rate (p95)")
    ax2.set_ylabel("ms (log scale)")
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    txns = sorted((r for r in rows if r["variant"].startswith("txn ")),
                  key=lambda r: float(r["variant"][4:-2]))
    if txns:
        ms = [float(r["variant"][4:-2]) for r in txns]
        for q, style in ((50, ":"), (95, "-"), (99, "--")):
            ax3.plot(ms, [r[f"e2e_p{q}_ms"] for r in txns], style, marker="o",
                     color=COLORS["read"], label=f"end-to-end p{q}")
        ax3.plot(ms, ms, color="grey", lw=0.8, label="the commit interval itself")
        ax3.set_xscale("log")
        ax3.set_yscale("log")
        ax3.set_xlabel("commit interval, ms")
        ax3.set_ylabel("ms")
        ax3.set_title("transactions: latency follows the commit interval")
        ax3.legend(fontsize=8)
    fig.tight_layout()
    return _finish(fig, save)


def plot_ctp(costs: Costs, save: str | None = None) -> Any:
    """Consume-transform-produce throughput per mode and record size."""
    from .plots import COLORS, LabFigure, _finish

    rows = [r for r in costs.rows if r["kind"] == "ctp"]
    fig = LabFigure(figsize=(7, 3.5))
    ax = fig.subplots()
    sizes = sorted({r["size"] for r in rows})
    names = list(dict.fromkeys(r["variant"] for r in rows))
    width = 0.8 / max(1, len(sizes))
    for i, s in enumerate(sizes):
        by = {r["variant"]: r["records_s"] for r in rows if r["size"] == s}
        ax.bar([x + i * width for x in range(len(names))], [by.get(n, 0) for n in names],
               width, label=f"{s} B", color=list(COLORS.values())[i % len(COLORS)])
    ax.set_xticks([x + width * (len(sizes) - 1) / 2 for x in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("values/s")
    ax.set_title("consume-transform-produce (the lab's Python pipeline)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _finish(fig, save)
