"""``Scenario``: cluster + workload + fault + checker, run once with a seed.

Every run has the same shape, so that runs are comparable across modes and faults:

1. fresh input and output topics;
2. a producer writes ``values`` unique values to the input, in the mode's settings; the
   fault fires at a seeded moment (after a seeded number of sends);
3. the cluster is healed; a processing stage (the :class:`~deliverylab.workload.Pipeline`)
   copies input to output, committing as the mode says (consumer faults fire here);
4. the cluster is healed again and both topics are drained (the final read-back);
5. the Checker judges History + reads against what the mode allows.

Faults that belong to the cluster (lost ack, leader kill, broker pause) go through the
:class:`~deliverylab.nemesis.Nemesis`, so a run records exactly what a button press
would do; faults that belong to the clients (crashes, zombies) are the workload's.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from . import checker as C
from . import values as V
from .clients import config
from .cluster import Cluster
from .errors import bad_value
from .history import History
from .modes import DeliveryMode
from .modes import mode as get_mode
from .nemesis import Nemesis
from .workload import Pipeline, ProducerWorkload, read_back

FAULTS = ("none", "lost_ack", "leader_kill", "broker_pause", "producer_crash",
          "zombie_producer", "consumer_crash")


@dataclass
class RunResult:
    """One run: the Checker's verdict plus facts the Checker does not judge."""

    mode: str
    fault: str
    seed: int
    result: C.Result
    #: e.g. aborted records visible to read_uncommitted, whether a zombie was fenced.
    facts: dict[str, Any] = field(default_factory=dict)
    faults: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    history: History | None = None
    topics: tuple[str, str] = ("", "")

    def observed(self) -> dict[str, int]:
        """Every count a matrix cell shows: anomalies and facts, as numbers."""
        counts = {k: v for k, v in self.result.counts.items()}
        counts.update({k: int(v) for k, v in self.facts.items()})
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "fault": self.fault, "seed": self.seed,
                "seconds": round(self.seconds, 2), "observed": self.observed(),
                "result": self.result.to_dict(), "faults": self.faults,
                "topics": list(self.topics)}


class Scenario:
    """One mode under one fault; :meth:`run` it with a seed on a running cluster.

    Args:
        mode: a delivery mode or its name.
        fault: one of :data:`FAULTS`.
        values: how many unique values the producer writes.
        partitions: partitions of the input and output topics.
        rate: values per second for the producer (a fault needs a moving stream); by
            default 400/s, faster for big runs so that any run takes about 5 s of writing.
    """

    def __init__(self, mode: DeliveryMode | str, fault: str = "none", values: int = 200,
                 partitions: int = 3, rate: float | None = None) -> None:
        if fault not in FAULTS:
            raise bad_value("fault", fault, "one of " + ", ".join(FAULTS))
        if not isinstance(values, int) or values < 10:
            raise bad_value("values", values, "a whole number >= 10")
        self.mode = get_mode(mode)
        self.fault = fault
        self.values = values
        self.partitions = partitions
        self.rate = rate if rate is not None else max(400.0, values / 5)

    def run(self, seed: int, cluster: Cluster) -> RunResult:
        t0 = time.monotonic()
        rng = random.Random(seed)
        tag = f"{self.mode.name.lower()}-{self.fault}-{seed}-{uuid.uuid4().hex[:6]}"
        source, sink = f"in-{tag}", f"out-{tag}"
        topic_config = {"min.insync.replicas": min(2, cluster.size)}
        for name in (source, sink):
            cluster.create_topic(name, partitions=self.partitions, config=topic_config)
        history = History()
        nemesis = Nemesis(cluster, history=history)
        trigger = rng.randint(self.values // 4, self.values // 2)
        facts: dict[str, Any] = {}
        run = _Run(self, cluster, nemesis, history, source, sink, trigger, facts, tag)
        try:
            run.produce()
            nemesis.heal()
            run.process()
        finally:
            nemesis.heal()
        isolation = self.mode.consumer["isolation.level"]
        reads = read_back(cluster, [source, sink], isolation)
        if isolation == "read_committed":
            uncommitted = read_back(cluster, [source, sink], "read_uncommitted")
            seen = {(r.topic, r.partition, r.offset) for r in reads}
            facts["aborted_visible_uncommitted"] = sum(
                1 for r in uncommitted if (r.topic, r.partition, r.offset) not in seen)
        result = C.check(history, reads, self.mode.allowed, pipeline=(source, sink))
        return RunResult(self.mode.name, self.fault, seed, result, facts,
                         nemesis.to_records(),
                         time.monotonic() - t0, history, (source, sink))


class _Run:
    """The steps of one run; one method per stage, faults chosen by name."""

    def __init__(self, scenario: Scenario, cluster: Cluster, nemesis: Nemesis,
                 history: History, source: str, sink: str, trigger: int,
                 facts: dict[str, Any], tag: str) -> None:
        self.s, self.cluster, self.nemesis, self.history = scenario, cluster, nemesis, history
        self.source, self.sink, self.trigger, self.facts, self.tag = (
            source, sink, trigger, facts, tag)

    def producer(self, process: str = "producer-0", **kw: Any) -> ProducerWorkload:
        return ProducerWorkload(self.cluster, self.source, self.s.mode, self.history,
                                process=process, rate=self.s.rate,
                                transactional_id=f"{self.tag}-producer", **kw)

    # ----------------------------------------------------------------- produce
    def produce(self) -> None:
        fault = self.s.fault
        if fault == "producer_crash":
            return self._producer_crash()
        if fault == "zombie_producer":
            return self._zombie_producer()
        on_sent = None
        if fault in ("lost_ack", "leader_kill", "broker_pause"):
            on_sent = self._background_fault(fault)
        self.producer().run(self.s.values, on_sent=on_sent)
        self._join_fault()

    def _background_fault(self, fault: str) -> Callable[[int], None]:
        """Fire ``fault`` from a thread once ``trigger`` values were sent.

        A thread, not the send loop: the fault must wait for the cluster (an election,
        an acknowledgement) while the producer keeps producing and polling. But the
        producer waits until the fault is *armed* (ack loss armed, brokers paused):
        otherwise a short, fast run could finish before the fault bites, and the
        anomaly would only sometimes appear.
        """
        fired = threading.Event()
        self._armed = threading.Event()
        action = {"lost_ack": self._lose_ack, "leader_kill": self._leader_kill,
                  "broker_pause": self._broker_pause}[fault]
        self._errors: list[BaseException] = []

        def body() -> None:
            try:
                action()
            except BaseException as exc:  # surfaced after the producer finishes
                self._errors.append(exc)
            finally:
                self._armed.set()

        self._thread = threading.Thread(target=body, name=f"fault-{fault}", daemon=True)

        def on_sent(n: int) -> None:
            if n >= self.trigger and not fired.is_set():
                fired.set()
                self._thread.start()
                self._armed.wait(60)
        return on_sent

    def _join_fault(self) -> None:
        thread = getattr(self, "_thread", None)
        if thread is not None and thread.is_alive():
            thread.join(120)
        if getattr(self, "_errors", None):
            raise self._errors[0]

    def _lose_ack(self) -> None:
        """Drop the next produce response of partition 0's leader: the client retries."""
        self.nemesis.lose_ack(node=self.cluster.leader(self.source, 0), count=1)
        self._armed.set()

    def _broker_pause(self) -> None:
        """Pause partition 0's leader for 2 s (under the 3 s session timeout)."""
        node = self.cluster.leader(self.source, 0)
        self.nemesis.pause_broker(node)
        self._armed.set()
        time.sleep(2.0)
        self.nemesis.resume_broker(node)

    def _leader_kill(self) -> None:
        """Kill partition 0's leader while its followers lag behind it.

        The followers are paused first (briefly: they stay in the ISR, as replicas do in
        a GC pause), so the leader holds writes nobody else has. With acks=1 the leader
        acknowledges them; with acks=all it cannot. Then the leader dies and a follower
        takes over without those writes. This makes the at-most-once loss happen every
        run instead of only when the kill lands in a millisecond window.
        """
        leader = self.cluster.leader(self.source, 0)
        followers = [n for n in self.cluster.nodes if n != leader]
        # Ask for leaders now: with two brokers paused, metadata requests may hang.
        led = {p for p in range(self.s.partitions) if self.cluster.leader(self.source, p) == leader}
        since = self.history.now()
        for node in followers:
            self.nemesis.pause_broker(node)
        self._armed.set()
        try:
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline and not self._acked_on(led, since):
                time.sleep(0.05)
            time.sleep(0.2)
            self.nemesis.kill_broker(leader)  # the leader of partition 0, found above
        finally:
            for node in followers:
                self.nemesis.resume_broker(node)
        self.cluster.wait_leader(self.source, 0, exclude=(leader,), timeout=60)

    def _acked_on(self, led: set[int], since: float) -> bool:
        return any(op.kind == "send" and op.outcome == "ok" and op.time >= since
                   and op.partition in led for op in self.history)

    def _producer_crash(self) -> None:
        """The producer dies after ``trigger`` values; a new instance writes the rest.

        Transactional: the crash leaves a transaction open; the new instance's
        ``init_transactions`` (same transactional.id) aborts it. Other modes: the values
        written before the crash stay; nothing aborts them.
        """
        first = self.producer()
        first.run(self.trigger, crash_after=self.trigger)
        rest = self.s.values - self.trigger
        self.producer(process="producer-1").run(rest, start_seq=0)

    def _zombie_producer(self) -> None:
        """Two instances of one producer: a stalled one comes back after its successor.

        Transactional: the successor's init fences the zombie, whose next commit fails
        with a fatal fenced error, so its values are aborted. Without a transactional.id
        nothing tells the zombie it has been replaced, and both instances' writes stay.
        """
        zombie = Producer(config(self.cluster.bootstrap_servers, **self._zombie_conf()))
        txn = "zombie/txn-1"
        if self.s.mode.transactional:
            zombie.init_transactions(30)
            zombie.begin_transaction()
            self.history.record("zombie", "begin_txn", "ok", txn=txn)
        pending: list = []
        for seq in range(self.trigger):
            self._zombie_send(zombie, seq, txn if self.s.mode.transactional else None, pending)
        zombie.flush(30)
        # The successor: the same logical producer, restarted, writes everything again.
        self.producer().run(self.s.values)
        fenced = False
        if self.s.mode.transactional:
            try:
                zombie.commit_transaction(30)
                self.history.record("zombie", "commit_txn", "ok", txn=txn)
            except KafkaException as exc:
                fenced = exc.args[0].fatal() or exc.args[0].code() in (
                    KafkaError._FENCED, KafkaError.PRODUCER_FENCED)
                self.history.record("zombie", "commit_txn", "fail", txn=txn, error=exc)
        self.facts["zombie_fenced"] = fenced

    def _zombie_conf(self) -> dict[str, Any]:
        conf = dict(self.s.mode.producer)
        if self.s.mode.transactional:
            conf["transactional.id"] = f"{self.tag}-producer"
        return conf

    def _zombie_send(self, producer: Producer, seq: int, txn: str | None,
                     pending: list) -> None:
        vid = V.ValueId("producer-0", seq)

        def done(err, msg) -> None:
            from .history import outcome_of

            ok = err is None
            self.history.record("zombie", "send", outcome_of(err), [vid], topic=self.source,
                                partition=msg.partition() if ok else None,
                                offset=msg.offset() if ok else None, txn=txn, error=err)

        producer.produce(self.source, V.encode("producer-0", seq), key=V.key("producer-0"),
                         partition=seq % self.s.partitions, on_delivery=done)
        producer.poll(0)

    # ----------------------------------------------------------------- process
    def process(self) -> None:
        group = f"{self.tag}-group"

        def stage(process: str) -> Pipeline:
            return Pipeline(self.cluster, self.source, self.sink, self.s.mode, self.history,
                            group=group, process=process)

        if self.s.fault == "consumer_crash":
            point = ("after_commit_before_process" if self.s.mode.commit == "before"
                     else "after_process_before_commit")
            crashed = stage("pipeline-0")
            crashed.run(crash_after=self.trigger, crash_point=point)
            self.facts["consumer_crashed"] = crashed.report.crashed
            stage("pipeline-1").run()
        else:
            stage("pipeline-0").run()


# ----------------------------------------------------------------------- matrix
#: What each cell must show in every run ("always") or in no run ("never"). Cells not
#: listed for an anomaly may show it or not; the matrix prints what it saw.
EXPECTATIONS: dict[tuple[str, str], dict[str, str]] = {}


def _expect(modes: tuple[str, ...], faults: tuple[str, ...], **rules: str) -> None:
    for m in modes:
        for f in faults:
            EXPECTATIONS.setdefault((m, f), {}).update(rules)


_STRONG = ("AT_LEAST_ONCE", "IDEMPOTENT", "TRANSACTIONAL")
_PRODUCER_FAULTS = ("lost_ack", "leader_kill", "broker_pause", "producer_crash")
_expect(_STRONG, FAULTS, lost="never")
_expect(("IDEMPOTENT", "TRANSACTIONAL"), _PRODUCER_FAULTS, duplicates="never")
_expect(("TRANSACTIONAL",), FAULTS, aborted_reads="never", pipeline_missing="never",
        pipeline_extra="never", duplicates="never")
_expect(("AT_LEAST_ONCE",), ("lost_ack",), duplicates="always")
_expect(("AT_LEAST_ONCE", "IDEMPOTENT"), ("consumer_crash",), pipeline_extra="always")
_expect(("AT_MOST_ONCE",), ("consumer_crash",), pipeline_missing="always")
_expect(("AT_MOST_ONCE",), ("leader_kill",), lost="always")
_expect(("TRANSACTIONAL",), ("producer_crash", "zombie_producer"),
        aborted_visible_uncommitted="always")
_expect(("TRANSACTIONAL",), ("zombie_producer",), zombie_fenced="always")


def expectation_failures(run: RunResult) -> list[str]:
    """What this run contradicts in :data:`EXPECTATIONS` (empty: as the course claims)."""
    observed = run.observed()
    failures = []
    for name, rule in EXPECTATIONS.get((run.mode, run.fault), {}).items():
        n = observed.get(name, 0)
        if rule == "always" and n == 0:
            failures.append(f"{run.mode}/{run.fault} seed {run.seed}: expected {name}, saw none")
        if rule == "never" and n > 0:
            failures.append(f"{run.mode}/{run.fault} seed {run.seed}: expected no {name}, "
                            f"saw {n}")
    return failures
