"""``Scenario``: cluster + workload + fault + checker, run once with a seed.

Every run has the same shape, so that runs are comparable across modes and faults:

1. fresh input and output topics;
2. a producer writes ``values`` unique values to the input, in the mode's settings; the
   fault fires at a seeded moment (after a seeded number of sends);
3. the cluster is healed; a processing stage (the :class:`~deliverylab.workload.Pipeline`)
   copies input to output, committing as the mode says (consumer faults fire here);
4. the cluster is healed again and both topics are drained (the final read-back);
5. the Checker judges History + reads against what the mode allows.

The processing stage of step 3 is the Python loop (``stage="python"``, the default) or
chapter 05's Spark Structured Streaming query (``stage="spark"``, into one of its sinks:
:func:`deliverylab.spark.scene.crash_scene` is the run, crashed by the registry's
``crash_query`` or ``kill_driver`` after a seeded batch). A Spark run's row is named
``spark/<sink>`` and held to :data:`SPARK_CLAIMS`.

Every fault is a name of the registry (:data:`deliverylab.faults.FAULTS`). Faults that
belong to the cluster (lose_ack, isolate_leader, pause_broker) go through the
:class:`~deliverylab.nemesis.Nemesis`, so a run records exactly what a button press
would do; faults that belong to the clients (crash_producer, restart_producer,
crash_consumer) are done by the clients, which record them as fault ops too.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Producer

from . import checker as C
from . import values as V
from .clients import Fenced, Recorder, TxnProducer, config
from .cluster import Cluster
from .errors import bad_value
from .faults import SCENARIO_FAULTS
from .history import History, Op
from .modes import DeliveryMode, claim_failures
from .modes import mode as get_mode
from .nemesis import Nemesis
from .readers import read_back
from .spark.query import CRASHES, MAX_OFFSETS, SINKS
from .spark.scene import crash_scene
from .waiting import wait_until
from .workload import Pipeline, ProducerWorkload

#: The faults a Scenario runs: "none", then the registry's scenario faults.
FAULTS: tuple[str, ...] = ("none", *SCENARIO_FAULTS)

#: The processing stages: the Python loop (:class:`~deliverylab.workload.Pipeline`) or
#: the Spark query (:class:`~deliverylab.spark.pipeline.SparkPipeline`).
STAGES: tuple[str, ...] = ("python", "spark")

#: The faults the Spark stage runs: "none", then the registry's two Spark crashes.
SPARK_FAULTS: tuple[str, ...] = ("none", *CRASHES)


def spark_row(sink: str) -> str:
    """The matrix row of the Spark stage writing to ``sink``: ``spark/kafka``..."""
    return f"spark/{sink}"


#: What every run of a Spark row shows ("always") or never shows ("never"), as
#: :data:`deliverylab.modes.CLAIMS` does for the modes. Both crashes land between the
#: sink's write of batch N and ``commits/N``, so the restarted query replays batch N:
#: Spark's Kafka sink writes it again -- exactly the records ``offsets/N`` predicted
#: (``replay_off_prediction`` = |extra records - predicted| is never above 0) -- and the
#: exactly-once sinks write nothing twice; the transactional sink's crashed attempt is
#: aborted, visible only to read_uncommitted.
SPARK_CLAIMS: dict[tuple[str, str], dict[str, str]] = {}
for _crash in CRASHES:
    SPARK_CLAIMS[(spark_row("kafka"), _crash)] = {
        "pipeline_extra": "always", "replay_off_prediction": "never",
        "pipeline_missing": "never", "lost": "never"}
    for _sink in ("files", "database"):
        SPARK_CLAIMS[(spark_row(_sink), _crash)] = {
            "pipeline_extra": "never", "extra_records": "never",
            "pipeline_missing": "never", "lost": "never"}
    SPARK_CLAIMS[(spark_row("kafka_txn"), _crash)] = {
        "pipeline_extra": "never", "extra_records": "never", "pipeline_missing": "never",
        "aborted_visible_uncommitted": "always", "lost": "never"}
del _crash, _sink


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
    #: "python" or "spark"; a Spark run's ``mode`` is its row, ``spark/<sink>``.
    stage: str = "python"

    def failures(self) -> list[str]:
        """What this run contradicts: its mode's promise and its cell's claim
        (:func:`deliverylab.modes.claim_failures`; a Spark row's claims are
        :data:`SPARK_CLAIMS`); empty when the course holds."""
        return [f"{msg} (seed {self.seed})" for msg in claim_failures(
            self.mode, self.fault, self.observed(), self.result.valid,
            self.result.violations(), SPARK_CLAIMS if self.stage == "spark" else None)]

    def observed(self) -> dict[str, int]:
        """Every count a matrix cell shows: anomalies and facts, as numbers."""
        counts = {k: v for k, v in self.result.counts.items()}
        counts.update({k: int(v) for k, v in self.facts.items()})
        return counts

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "fault": self.fault, "seed": self.seed,
                "stage": self.stage, "seconds": round(self.seconds, 2),
                "observed": self.observed(), "facts": dict(self.facts),
                "result": self.result.to_dict(), "faults": self.faults,
                "topics": list(self.topics)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        """A run back from :meth:`to_dict` (a results file), without its History.

        Files written before ``facts`` was stored get them back from ``observed``:
        whatever it holds beyond the Checker's counts.
        """
        r = data["result"]
        result = C.Result(bool(r["valid"]), dict(r["counts"]), dict(r.get("examples", {})),
                          frozenset(r.get("allowed", ())), dict(r.get("stats", {})))
        facts = data.get("facts")
        if facts is None:
            facts = {k: v for k, v in data.get("observed", {}).items()
                     if k not in result.counts}
        return cls(data["mode"], data["fault"], int(data["seed"]), result, dict(facts),
                   list(data.get("faults", [])), float(data.get("seconds", 0.0)), None,
                   tuple(data.get("topics", ("", ""))), data.get("stage", "python"))


class Scenario:
    """One mode under one fault; :meth:`run` it with a seed on a running cluster.

    Args:
        mode: a delivery mode or its name.
        fault: ``"none"`` or a scenario fault of the registry (:data:`FAULTS`).
        values: how many unique values the producer writes.
        partitions: partitions of the input and output topics.
        rate: values per second for the producer (a fault needs a moving stream); by
            default 400/s, faster for big runs so that any run takes about 5 s of writing.
        txn_size, commit_interval_ms: transactional modes: the producer and the
            processing stage commit after this many values or once a transaction is this
            old, whichever first (default: the mode's, 1000 values / 100 ms).
        stage: the processing stage, ``"python"`` or ``"spark"`` (:data:`STAGES`). The
            Spark stage runs ``fault`` "none" or a Spark crash (:data:`SPARK_FAULTS`);
            ``mode`` is then the input producer's (a non-transactional one: every input
            offset is a record, so a replay's size is exactly what ``offsets/N`` says).
        sink: Spark stage: one of :data:`deliverylab.spark.query.SINKS`.
        max_offsets: Spark stage: offsets per micro-batch.
        master: Spark stage: the Spark master (default: the Inspector's ``local[2]``).
    """

    def __init__(self, mode: DeliveryMode | str, fault: str = "none", values: int = 200,
                 partitions: int = 3, rate: float | None = None,
                 txn_size: int | None = None,
                 commit_interval_ms: float | None = None, stage: str = "python",
                 sink: str = "kafka", max_offsets: int = MAX_OFFSETS,
                 master: str | None = None) -> None:
        if stage not in STAGES:
            raise bad_value("stage", stage, "one of " + ", ".join(STAGES))
        faults = SPARK_FAULTS if stage == "spark" else FAULTS
        if fault not in faults:
            raise bad_value("fault", fault, f"one of {', '.join(faults)} (stage {stage})")
        if not isinstance(values, int) or values < 10:
            raise bad_value("values", values, "a whole number >= 10")
        self.mode = get_mode(mode).with_commits(txn_size, commit_interval_ms)
        self.fault = fault
        self.values = values
        self.partitions = partitions
        self.rate = rate if rate is not None else max(400.0, values / 5)
        self.stage, self.sink, self.master = stage, sink, master
        self.max_offsets = max_offsets
        if stage == "spark":
            if sink not in SINKS:
                raise bad_value("sink", sink, "one of " + ", ".join(SINKS))
            if self.mode.transactional:
                raise bad_value("mode", self.mode.name, "a non-transactional input mode "
                                "for the Spark stage (markers would take offsets)")
            if not isinstance(max_offsets, int) or not 1 <= max_offsets <= values:
                raise bad_value("max_offsets", max_offsets, f"a whole number in 1..{values}")

    @property
    def row(self) -> str:
        """The matrix row this scenario fills: its mode, or ``spark/<sink>``."""
        return spark_row(self.sink) if self.stage == "spark" else self.mode.name

    def crash_batch(self, seed: int) -> int:
        """Spark stage: the batch after whose write the seeded crash lands. The input
        holds at least ``values // max_offsets`` batches, so that batch always exists."""
        return random.Random(seed).randint(0, max(0, self.values // self.max_offsets - 1))

    def run(self, seed: int, cluster: Cluster) -> RunResult:
        if self.stage == "spark":
            return self._run_spark(seed, cluster)
        t0 = time.monotonic()
        rng = random.Random(seed)
        tag = f"{self.mode.name.lower()}-{self.fault}-{seed}-{uuid.uuid4().hex[:6]}"
        source, sink = f"in-{tag}", f"out-{tag}"
        topic_config = {"min.insync.replicas": min(2, cluster.brokers)}
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
        result = C.check(history, reads, self.mode.allowed_under(self.fault),
                         pipeline=(source, sink))
        faults = [{"time": op.time, "name": op.fault, "did": op.detail,
                   "process": op.process} for op in history.faults()]
        return RunResult(self.mode.name, self.fault, seed, result, facts, faults,
                         time.monotonic() - t0, history, (source, sink))

    def _run_spark(self, seed: int, cluster: Cluster) -> RunResult:
        """One :func:`~deliverylab.spark.scene.crash_scene`, as a matrix run."""

        t0 = time.monotonic()
        crash_at = self.crash_batch(seed)
        scene = crash_scene(cluster, self.sink, None if self.fault == "none" else self.fault,
                            self.values, crash_at, self.partitions, self.max_offsets,
                            master=self.master, input_mode=self.mode.name)
        try:
            facts: dict[str, Any] = dict(scene.facts)
            if scene.predicted is not None:
                facts["crashed_batch"] = crash_at
                facts["predicted"] = scene.predicted
                facts["replay_off_prediction"] = abs(scene.extra - scene.predicted)
            history = scene.pipeline.history
            faults = [{"time": op.time, "name": op.fault, "did": op.detail,
                       "process": op.process} for op in history.faults()]
        finally:
            scene.pipeline.clean()  # checkpoint, state, file or database output
        return RunResult(self.row, self.fault, seed, scene.result, facts, faults,
                         time.monotonic() - t0, history, scene.topics, "spark")


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
        if fault == "crash_producer":
            return self._crash_producer()
        if fault == "restart_producer":
            return self._restart_producer()
        on_sent = None
        if fault in ("lose_ack", "isolate_leader", "pause_broker"):
            on_sent = self._background_fault(fault)
        self.producer().run(self.s.values, on_sent=on_sent)
        self._join_fault()
        if fault == "lose_ack" and self.s.mode.transactional:
            self.facts["ack_lost_in_txn"] = self._ack_lost_in_txn()

    def _background_fault(self, fault: str) -> Callable[[int], None]:
        """Fire ``fault`` from a thread once ``trigger`` values were sent.

        A thread, not the send loop: the fault must wait for the cluster (an election,
        an acknowledgement) while the producer keeps producing and polling. But the
        producer waits until the fault is *armed* -- its first fault op is in the
        History (ack loss armed, followers paused): otherwise a short, fast run could
        finish before the fault bites, and the anomaly would only sometimes appear.
        """
        fired = threading.Event()
        action = {"lose_ack": self._lose_ack, "isolate_leader": self._isolate_leader,
                  "pause_broker": self._pause_broker}[fault]
        self._errors: list[BaseException] = []
        self._done = threading.Event()

        def body() -> None:
            try:
                action()
            except BaseException as exc:  # surfaced after the producer finishes
                self._errors.append(exc)
            finally:
                self._done.set()

        self._thread = threading.Thread(target=body, name=f"fault-{fault}", daemon=True)

        def on_sent(n: int) -> None:
            if n >= self.trigger and not fired.is_set():
                fired.set()
                self._thread.start()
                # Raises past 60 s: a run whose fault never landed shows nothing (the
                # fault's own error, if it failed, ends the wait at once and is raised
                # by _join_fault once the producer is done).
                wait_until(f"the fault {fault} to land in the history",
                           lambda: self.history.faults() or self._done.is_set(), 60,
                           interval=0.01)
        return on_sent

    def _join_fault(self) -> None:
        thread = getattr(self, "_thread", None)
        if thread is not None and thread.is_alive():
            thread.join(120)
        if getattr(self, "_errors", None):
            raise self._errors[0]

    def _lose_ack(self) -> None:
        """Drop the next produce response of partition 0's leader: the client retries.

        Waits until the ack was really lost, and counts it (``acks_lost``): a run
        whose producer finished before the fault bit would teach nothing."""
        record = self.nemesis.lose_ack(node=self.cluster.leader(self.source, 0), count=1)
        record.handle.wait(30)
        self.facts["acks_lost"] = record.handle.dropped
        if record.handle.dropped:
            self._ack_lost_at = self.history.now()

    def _ack_lost_in_txn(self) -> bool:
        """Was a transaction of the producer open when the ack was lost? (Its begin
        was recorded before, its commit after: the commit waits for the retried write.)"""
        t = getattr(self, "_ack_lost_at", None)
        begun: dict[str, float] = {}
        for op in self.history:
            if op.process != "producer-0" or op.txn is None:
                continue
            if op.kind == "begin_txn":
                begun[op.txn] = op.time
            elif op.kind in ("commit_txn", "abort_txn") and op.txn in begun:
                if t is not None and begun[op.txn] <= t <= op.time:
                    return True
        return False

    def _pause_broker(self) -> None:
        """Pause partition 0's leader for 2 s (under the 3 s session timeout)."""
        node = self.cluster.leader(self.source, 0)
        self.nemesis.pause_broker(node)
        time.sleep(2.0)
        self.nemesis.resume_broker(node)

    def _isolate_leader(self) -> None:
        """Kill partition 0's leader while its followers lag behind it (the Nemesis'
        ``isolate_leader``): with acks=1 it acknowledged writes nobody else has; with
        acks=all it could not. This makes the at-most-once loss happen every run
        instead of only when a kill lands in a millisecond window.

        The kill waits for that acknowledged write (the event, not a time), and for one
        the followers cannot have: the producer hands value ``trigger`` on only once the
        pause is in the History, so a value from there on that is acknowledged was
        written by the leader alone (an earlier value's report may come after the pause
        too, late, for a write the followers copied: on a loaded host the kill came
        after such a report and the claim saw no loss). With acks=1 the wait is up to
        30 s, as the producer's next sends can come late on a loaded host, and a run
        without one raises (no kill without it); with acks=all no write can be
        acknowledged while the followers are paused, so the Nemesis' short default
        stays."""
        acks = str(self.s.mode.producer.get("acks", "all"))
        first = self.trigger

        def after_pause(op: Op) -> bool:
            return op.process == "producer-0" and any(V.parse(v).seq >= first
                                                      for v in op.values)

        alone = acks not in ("all", "-1")  # the lesson is that loss: it must happen
        self.nemesis.isolate_leader(self.source, 0, hold=30.0 if alone else 1.5,
                                    only_leader=after_pause, require=alone)

    def _crash_producer(self) -> None:
        """The producer dies after ``trigger`` values; a new instance writes the rest.

        Transactional: the crash leaves a transaction open; the new instance's
        ``init_transactions`` (same transactional.id) aborts it. Other modes: the values
        written before the crash stay; nothing aborts them.
        """
        first = self.producer()
        first.run(self.trigger, crash_after=self.trigger)
        rest = self.s.values - self.trigger
        self.producer(process="producer-1").run(rest, start_seq=0)

    def _restart_producer(self) -> None:
        """Two instances of one producer: a stalled one comes back after its successor.

        Transactional: the successor's init fences the zombie, whose next commit fails
        with a fatal fenced error, so its values are aborted. Without a transactional.id
        nothing tells the zombie it has been replaced, and both instances' writes stay.
        The transactional zombie is a :class:`~deliverylab.clients.TxnProducer` (the
        one hand-driven transactional producer); both write producer-0's values.
        """
        mode = self.s.mode
        zombie: TxnProducer | None = None
        if mode.transactional:
            zombie = TxnProducer(self.cluster, self.source, self.history,
                                 transactional_id=f"{self.tag}-producer", process="zombie",
                                 mode=mode, writer="producer-0",
                                 transaction_timeout_ms=mode.producer["transaction.timeout.ms"])
            zombie.write(self.trigger)  # begins zombie/txn-1, left open: the stall
        else:
            plain = Producer(config(self.cluster.bootstrap_servers, **mode.producer))
            recorder = Recorder(self.history, "zombie", self.source)
            for seq in range(self.trigger):
                recorder.send(plain, V.ValueId("producer-0", seq), seq % self.s.partitions)
            plain.flush(30)
            recorder.settle("no delivery report after 30 s")
        # The successor: the same logical producer, restarted, writes everything again.
        self.producer().run(self.s.values)
        self.history.record("zombie", "fault", "info", fault="restart_producer",
                            txn=zombie.txn if zombie else None,
                            detail="the stalled first instance comes back")
        fenced = False
        if zombie is not None:
            try:
                zombie.commit()
            except Fenced:
                fenced = True
            except KafkaException:  # recorded by commit(); not a fence: not a fenced zombie
                pass
            finally:
                zombie.close()
        self.facts["zombie_fenced"] = fenced

    # ----------------------------------------------------------------- process
    def process(self) -> None:
        group = f"{self.tag}-group"

        def stage(process: str) -> Pipeline:
            return Pipeline(self.cluster, self.source, self.sink, self.s.mode, self.history,
                            group=group, process=process)

        if self.s.fault == "crash_consumer":
            crashed = stage("pipeline-0")
            crashed.run(crash_after=self.trigger)
            self.facts["consumer_crashed"] = crashed.report.crashed
            stage("pipeline-1").run()
        else:
            stage("pipeline-0").run()
