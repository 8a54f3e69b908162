"""One crash of the Spark pipeline, end to end: the scene chapter 05 repeats per sink.

A :func:`crash_scene` creates fresh topics, writes ``values`` unique values to the
input (the lab's producer, recorded), runs the Spark pipeline into one sink, crashes
it after batch ``crash_at`` was written (``crash_query`` or ``kill_driver``), reads
the prediction from the checkpoint *before* restarting, restarts, reads the output
back the way its readers do, and lets the Checker judge the History against it. The
chapter, the integration tests, the anomaly matrix's Spark rows and the benchmark all
run this one function, so they show the same thing.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import checker as C
from ..errors import bad_value
from ..history import History, Read
from ..modes import AT_LEAST_ONCE
from ..readers import read_back
from ..workload import ProducerWorkload
from . import sinks
from .pipeline import SparkPipeline
from .query import CRASHES, SINKS, BatchLog, batches
from .session import session


@dataclass
class SceneResult:
    """What one scene showed; ``observed`` holds the counts a chapter asserts."""

    sink: str
    crash: str | None
    predicted: int | None
    result: C.Result
    batches: list[BatchLog]
    pipeline: SparkPipeline
    topics: tuple[str, str]
    facts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def extra(self) -> int:
        """Output records beyond one per value: what a replay added."""
        return self.facts.get("extra_records", 0)

    @property
    def observed(self) -> dict[str, int]:
        counts = dict(self.result.counts)
        counts.update(self.facts)
        counts["predicted"] = self.predicted if self.predicted is not None else -1
        return counts

    def summary(self) -> str:
        head = f"{self.sink} sink"
        if self.crash:
            head += (f", {self.crash} after batch {self.pipeline.report.crashed_batch} "
                     f"(predicted replay: {self.predicted} records)")
        return f"{head}: {self.result.summary()}"


def crash_scene(cluster: Any, sink: str = "kafka", crash: str | None = "crash_query",
                values: int = 30, crash_at: int = 1, partitions: int = 3,
                max_offsets: int = 10, master: str | None = None,
                history: History | None = None, input_mode: str = "AT_LEAST_ONCE",
                ) -> SceneResult:
    """Run one sink through one crash (or none) and judge it; see the module doc.

    ``input_mode="TRANSACTIONAL"`` writes the input in transactions (of 10 values):
    their commit markers take offsets, so batches span more offsets than records.
    """
    if sink not in SINKS:
        raise bad_value("sink", sink, "one of " + ", ".join(SINKS))
    if crash is not None and crash not in CRASHES:
        raise bad_value("crash", crash, "None or one of " + ", ".join(CRASHES))
    if not isinstance(values, int) or values < partitions:
        raise bad_value("values", values, f"a whole number >= partitions ({partitions})")
    t0 = time.monotonic()
    tag = f"{sink}-{crash or 'none'}-{uuid.uuid4().hex[:6]}"
    source, out = f"in-{tag}", f"out-{tag}"
    cluster.create_topic(source, partitions=partitions)
    if sink in ("kafka", "kafka_txn"):
        cluster.create_topic(out, partitions=partitions)
    if sink == "kafka_txn":
        cluster.create_topic(sinks.control_topic(out), partitions=1)
    history = history if history is not None else History()
    ProducerWorkload(cluster, source, input_mode, history).run(values)
    pipe = SparkPipeline(cluster, source, sink,
                         output=out if sink in ("kafka", "kafka_txn") else None,
                         history=history, max_offsets=max_offsets, master=master,
                         name=f"spark-{sink}")
    if crash is not None:
        pipe.run(crash_at=crash_at, crash=crash)
    pipe.run()
    reads, facts = _what_readers_see(cluster, pipe, source)
    # Judged against what the sink promises: at-least-once allows a replay's copies.
    allowed = AT_LEAST_ONCE.allowed if sink == "kafka" else frozenset()
    result = C.check(history, reads, allowed, pipeline=(source, pipe.output))
    output = [r.value for r in reads if r.topic == pipe.output and r.value is not None]
    facts["extra_records"] = C.extra_copies(output)
    facts["output_records"] = len(output)
    facts["input_records"] = sum(1 for r in reads if r.topic == source and r.value)
    facts["input_offsets"] = sum(b.size for b in pipe.batches())
    return SceneResult(sink, crash, pipe.report.predicted, result, pipe.batches(), pipe,
                       (source, pipe.output), facts, time.monotonic() - t0)


def _what_readers_see(cluster: Any, pipe: SparkPipeline,
                      source: str) -> tuple[list[Read], dict[str, int]]:
    """The output as its readers see it, plus the other readers' view as facts.

    No reader of its own: a Kafka sink's topics are read by the one read-back
    (:func:`~deliverylab.readers.read_back`), a database's or a folder's by the sink's
    reader in :mod:`~deliverylab.spark.sinks`.
    """

    facts: dict[str, int] = {}
    reads = read_back(cluster, [source], "read_committed")
    if pipe.sink == "kafka":
        reads += read_back(cluster, [pipe.output], "read_committed")
    elif pipe.sink == "kafka_txn":
        committed = read_back(cluster, [pipe.output], "read_committed")
        uncommitted = read_back(cluster, [pipe.output], "read_uncommitted")
        reads += committed
        facts["read_uncommitted_records"] = sum(1 for r in uncommitted if r.value)
        facts["aborted_visible_uncommitted"] = facts["read_uncommitted_records"] - sum(
            1 for r in committed if r.value)
    elif pipe.sink == "database":
        reads += sinks.read_database(pipe.output)
    else:
        reads += sinks.read_files(session(pipe.master), pipe.output)
        plain = sinks.read_folder_plainly(pipe.output)
        facts["plain_reader_records"] = sum(1 for r in plain if r.value)
        facts["plain_reader_duplicates"] = len(C.duplicates(plain))
    return reads, facts


def dedup_scene(cluster: Any, scene: SceneResult, master: str | None = None) -> dict[str, int]:
    """Deduplicate a Kafka scene's output downstream; count what comes out."""
    if scene.sink != "kafka":
        raise bad_value("scene", scene.sink, "a scene of the kafka sink")
    target = f"{scene.topics[1]}-dedup"
    cluster.create_topic(target, partitions=len(scene.pipeline.batches()[0].end))
    ckpt = str(scene.pipeline.workdir / "dedup-checkpoint")
    sinks.deduplicate(session(master), scene.pipeline.bootstrap, scene.topics[1], target, ckpt)
    before = read_back(cluster, [scene.topics[1]], "read_committed")
    after = read_back(cluster, [target], "read_committed")
    return {"records_in": sum(1 for r in before if r.value),
            "records_out": sum(1 for r in after if r.value),
            "duplicates_in": len(C.duplicates(before)),
            "duplicates_out": len(C.duplicates(after)),
            "values_out": len({r.value for r in after if r.value}),
            "state_keys": sinks.state_rows(session(master), ckpt)}


def status(checkpoint: Any) -> str:
    """The query's state from its checkpoint: batches planned, last offsets, last commit."""
    logs = batches(checkpoint)
    if not logs:
        return "no batch planned yet"
    last = logs[-1]
    committed = [b.batch for b in logs if b.committed]
    return (f"batch {last.batch} planned (offsets {last.ranges()}), last commit: "
            f"{'commits/' + str(committed[-1]) if committed else 'none'}, uncommitted: "
            f"{[b.batch for b in logs if not b.committed] or 'none'}")
