"""The processing stage as a Spark Structured Streaming query, and its checkpoint.

Chapter 05's pipeline is not a Python loop but a Spark query: a Kafka source
(``read_committed``, a *provenance* key ``topic-partition-offset`` per record), a
transform, a sink, and a checkpoint folder. Spark keeps two logs there, and the
guarantee lives in the gap between them (``MicroBatchExecution``):

1. ``offsets/N`` -- batch N's end offsets, written *before* any record is read;
2. the sink writes batch N;
3. ``commits/N`` -- written *after* the sink returned.

A query that dies between 2 and 3 finds ``offsets/N`` without ``commits/N`` on restart
and runs batch N again, with the same offsets and the same batch id. Whether that
duplicates anything is the sink's business: Spark's Kafka sink writes it twice
(at-least-once), the file sink and a sink keyed by batch id do not.

What needs no Spark (reading the two logs, predicting a batch's size from them) is
in :mod:`deliverylab.spark.query`. This module holds the query itself
(:func:`run_query`, the same code in the notebook's kernel and in a child driver
process), and :class:`SparkPipeline`, which runs it,
crashes it on purpose (the registry's ``crash_query`` and ``kill_driver``), restarts
it and records a :class:`~deliverylab.history.History` the Checker judges like any
other. The sinks are in :mod:`deliverylab.spark.sinks`; the child driver's entry
point is :mod:`deliverylab.spark.driver`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..clients import bootstrap_of
from ..errors import LabError, bad_value
from ..history import History, OpLog
from ..process.children import Children, python_module, tail
from ..waiting import wait_until
from . import sinks
from .query import (
    MAX_OFFSETS,
    SINKS,
    BatchLog,
    QuerySpec,
    await_query,
    batches,
    predicted_size,
)
from .session import driver_env, session, temp_dir

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

def source_frame(spark: SparkSession, spec: QuerySpec) -> DataFrame:
    """The Kafka source with its provenance: who wrote each record, and where.

    ``provenance`` = ``topic-partition-offset`` of the *input* record: unique per input
    record and identical in every replay of it, so it is the key downstream dedup and
    idempotent sinks use. ``read_committed`` so aborted input never enters.
    """
    from pyspark.sql import functions as F

    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", spec.bootstrap)
        .option("subscribe", spec.source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", spec.max_offsets)
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "true")
        .load()
    )
    return raw.select(
        F.concat_ws("-", "topic", F.col("partition").cast("string"),
                    F.col("offset").cast("string")).alias("provenance"),
        "topic", "partition", "offset",
        # The transform: the lab's value passes through unchanged (the checker follows
        # each value from input to output), the provenance travels as the key.
        F.col("value").cast("string").alias("value"),
    )


def run_query(spark: SparkSession, spec: QuerySpec, timeout: float = 600.0) -> None:
    """Run the query over everything in the input now (``availableNow``), in
    ``max_offsets`` batches, to its end -- or to its planned crash, which raises."""
    spark.conf.set("spark.sql.shuffle.partitions", str(spec.shuffle_partitions))
    Path(spec.state).mkdir(parents=True, exist_ok=True)
    log = OpLog(spec.ops_path)
    frame = source_frame(spark, spec)
    writer = sinks.writer(spec, frame, log, _crash_hook(spec, log))
    query = (writer.option("checkpointLocation", spec.checkpoint)
             .queryName(f"deliverylab-{spec.process}")
             .trigger(availableNow=True).start())
    await_query(query, f"the Spark query {spec.process}", spec.checkpoint, timeout)


def _crash_hook(spec: QuerySpec, log: OpLog):
    """Called by a sink after it wrote batch ``batch`` (before Spark's commit)."""

    def after_write(batch: int) -> None:
        if spec.crash is None or batch != spec.crash_at:
            return
        flag = spec.crashed_path(batch)
        if flag.exists():  # crashed once already: this is the replay
            return
        flag.touch()
        if spec.crash == "crash_query":
            log.record(spec.process, "fault", "info", fault="crash_query",
                       detail=f"{spec.process} raises after writing batch {batch}, "
                              f"before commits/{batch}")
            raise RuntimeError(f"simulated crash after writing batch {batch}")
        log.record(spec.process, "fault", "info", fault="kill_driver",
                   detail=f"{spec.process} is SIGKILLed after writing batch {batch}, "
                          f"before commits/{batch}")
        spec.parked_path(batch).touch()
        time.sleep(3600)  # the parent kills this process here

    return after_write


def record_commits(spec: QuerySpec, log: OpLog, since: float) -> None:
    """One ``commit`` op per batch this run committed, timed by ``commits/N`` (its
    mtime, wall-clock seconds ``since`` or later, moved onto the log's clock)."""
    to_log = log.now() - time.time()
    for b in batches(spec.checkpoint):
        if b.committed and b.committed_at is not None and b.committed_at >= since:
            log.record(spec.process, "commit", "ok", time=b.committed_at + to_log,
                       detail=f"commits/{b.batch} " + json.dumps(b.ranges()))


# --- the pipeline a chapter drives ------------------------------------------------------


@dataclass
class RunReport:
    """One run (one driver's life) of the query."""

    process: str
    crashed: str | None = None  # the fault's name
    error: str | None = None
    seconds: float = 0.0
    torn: int = 0  # lines of the driver's op log its kill cut short (skipped)


@dataclass
class PipelineRun:
    """What a pipeline did over its runs: the batches and the crash, for the chapter."""

    runs: list[RunReport] = field(default_factory=list)
    predicted: int | None = None  # size of the crashed batch, read before the restart
    crashed_batch: int | None = None


class SparkPipeline:
    """The consume-transform-produce stage as a Spark query, crashed and restarted.

    Args:
        target: a Cluster (or anything with ``bootstrap_servers``) or a bootstrap string.
        source: input topic.
        sink: one of :data:`SINKS`.
        output: output topic (``kafka``, ``kafka_txn``), folder (``files``) or database
            file (``database``); a fresh name under ``workdir`` by default.
        history: where ops are recorded (poll per input record, send per output
            record with its batch, commit per ``commits/N``, faults).
        workdir: checkpoint and state live here (by default a fresh folder in this
            process's Spark folder, :func:`~deliverylab.spark.session.temp_dir`).
        master: Spark master for the kernel's session and the child driver.
    """

    def __init__(self, target: Any, source: str, sink: str = "kafka",
                 output: str | None = None, history: History | None = None,
                 workdir: str | Path | None = None, max_offsets: int = MAX_OFFSETS,
                 master: str | None = None, name: str = "spark") -> None:
        if sink not in SINKS:
            raise bad_value("sink", sink, "one of " + ", ".join(SINKS))
        self.bootstrap = bootstrap_of(target, direct=True)
        self.source, self.sink, self.name = source, sink, name
        self.history = history if history is not None else History()
        if workdir:
            self.workdir = Path(workdir)
        else:
            # Inside this process's Spark folder: removed when Python exits, or by the
            # next session if it was killed (session.temp_dir); a folder of its own in
            # the shared temporary directory outlived every scene that made one.
            own = temp_dir()
            own.mkdir(mode=0o700, exist_ok=True)
            self.workdir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=own))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.checkpoint = self.workdir / "checkpoint"
        self.state = self.workdir / "state"
        if output is None:
            output = {"files": str(self.workdir / "out"),
                      "database": str(self.workdir / "out.sqlite")}.get(
                          sink, f"{source}-{sink}")
        self.output = output
        self.max_offsets = max_offsets
        self.master = master
        self.report = PipelineRun()
        self._n = 0

    # ----------------------------------------------------------------- state
    def batches(self) -> list[BatchLog]:
        """The checkpoint's batches: offsets/N beside commits/N."""
        return batches(self.checkpoint)

    def predicted_size(self, batch: int) -> int:
        return predicted_size(self.checkpoint, batch)

    def _spec(self, crash_at: int | None, crash: str | None) -> QuerySpec:
        process = f"{self.name}-{self._n}"
        self._n += 1
        return QuerySpec(self.bootstrap, self.source, self.sink, self.output,
                         str(self.checkpoint), str(self.state), process, self.max_offsets,
                         crash_at, crash, master=self.master)

    def _absorb(self, spec: QuerySpec, report: RunReport) -> None:
        """Move the run's ops (written by the query, maybe in a child) into the History."""
        report.torn = self.history.merge_logs([spec.ops_path]).torn
        spec.ops_path.unlink(missing_ok=True)

    # ----------------------------------------------------------------- runs
    def run(self, crash_at: int | None = None, crash: str | None = None,
            timeout: float = 600.0) -> RunReport:
        """One run of the query to the end of its input, or to the crash asked for.

        ``crash="crash_query"`` raises in this kernel's driver after batch ``crash_at``
        is written; ``crash="kill_driver"`` runs the query in a child driver process and
        SIGKILLs it there. A crash asked for must happen: if the input has fewer
        batches, :class:`~deliverylab.errors.LabError`.
        """
        if (crash is None) != (crash_at is None):
            raise bad_value("crash", crash, "given together with crash_at (a batch), or "
                            "both None")
        spec = self._spec(crash_at, crash)
        t0 = time.monotonic()
        report = RunReport(spec.process)
        started = time.time()
        log = OpLog(spec.ops_path)
        try:
            if crash == "kill_driver":
                self._run_child(spec, timeout)
                report.crashed = "kill_driver"
            else:
                spark = session(self.master)
                # The planned exception is the lesson, not an error: Spark's own
                # stack traces of it would bury the notebook.
                spark.sparkContext.setLogLevel("OFF" if crash else "ERROR")
                try:
                    run_query(spark, spec, timeout)
                except Exception as exc:  # StreamingQueryException wraps our RuntimeError
                    if crash is None or not spec.crashed_path(crash_at).exists() or \
                            "simulated crash" not in str(exc):
                        raise
                    report.crashed = "crash_query"
                    report.error = f"simulated crash after writing batch {crash_at}"
                finally:
                    spark.sparkContext.setLogLevel("ERROR")
            if crash is not None and report.crashed is None:
                raise LabError(f"{spec.process} ended before batch {crash_at}: the input "
                               f"has fewer batches; give it more values")
            record_commits(spec, log, started)
        finally:
            self._absorb(spec, report)
            report.seconds = time.monotonic() - t0
            self.report.runs.append(report)
        if report.crashed:
            self.report.crashed_batch = crash_at
            self.report.predicted = self.predicted_size(crash_at)
        return report

    def _run_child(self, spec: QuerySpec, timeout: float) -> None:
        """Run the query in its own driver process; SIGKILL it once it parks after its
        write. The process group (python + its Spark JVM) is watched by the lab's
        reaper, so a kernel that dies meanwhile takes the driver with it."""
        Path(spec.state).mkdir(parents=True, exist_ok=True)
        log_path = Path(spec.state) / f"{spec.process}.log"
        children = Children()
        try:
            child = children.start(f"the child driver {spec.process}",
                                   python_module("spark.driver", spec.to_json()), log_path,
                                   env=driver_env(self.workdir / "tmp"))
            parked = spec.parked_path(spec.crash_at)

            def alive() -> None:
                if child.poll() is not None and not parked.exists():
                    raise LabError(f"the child driver {spec.process} exited "
                                   f"({child.returncode}) before batch {spec.crash_at} "
                                   f"was written; its log: {log_path}\n{tail(log_path)}")

            wait_until(f"the child driver {spec.process} to reach batch {spec.crash_at}",
                       parked.exists, timeout, check=alive, interval=0.2,
                       explain=lambda: f"; log: {log_path}")
            children.kill(child)
        finally:
            for proc, _, _ in list(children.procs.values()):
                if proc.poll() is None:
                    children.kill(proc)
            children.close()

    def clean(self) -> None:
        """Remove the checkpoint and state (a new run then starts from the input's start)."""
        shutil.rmtree(self.workdir, ignore_errors=True)
