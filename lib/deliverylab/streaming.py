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

This module holds what needs no Spark (reading the two logs, predicting a batch's
size from them), the query itself (:func:`run_query`, the same code in the notebook's
kernel and in a child driver process), and :class:`SparkPipeline`, which runs it,
crashes it on purpose (the registry's ``crash_query`` and ``kill_driver``), restarts
it and records a :class:`~deliverylab.history.History` the Checker judges like any
other. The sinks are in :mod:`deliverylab.streaming_sinks`; the child driver's entry
point is :mod:`deliverylab.streaming_driver`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import LabError, bad_value
from .history import History, Op

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The sinks a pipeline can write to (see :mod:`deliverylab.streaming_sinks`), and the
#: guarantee Spark's documentation gives each under a replayed batch.
SINKS: dict[str, str] = {
    "kafka": "at-least-once: Spark's Kafka writer sends a replayed batch again",
    "files": "exactly-once for Spark readers: the file sink's _spark_metadata log "
             "skips a batch it already holds",
    "database": "exactly-once: one database transaction per batch, keyed by "
                "(query id, batch id)",
    "kafka_txn": "exactly-once for read_committed readers: one Kafka transaction per "
                 "batch, with the batch id committed beside the output",
}

#: The two crashes of the registry, both between the sink's write and ``commits/N``.
CRASHES: tuple[str, ...] = ("crash_query", "kill_driver")

#: Offsets per micro-batch unless told otherwise: small, so batches are countable.
MAX_OFFSETS = 10


# --- the checkpoint's two logs (no Spark needed) ------------------------------------------


def _json_lines(text: str) -> list[Any]:
    """The JSON lines of a metadata-log file (its first line is a version, ``v1``)."""
    out = []
    for line in text.splitlines():
        line = line.strip().lstrip("\x00")
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def parse_offsets(text: str) -> dict[str, Any]:
    """One ``offsets/N`` file: ``{"metadata": {...}, "sources": [{topic: {part: off}}]}``.

    Line 1 is the version, line 2 the batch metadata (watermark, timestamp, conf),
    then one line per source: Kafka's end offsets of batch N, per topic and partition.
    """
    if not text.startswith("v"):
        raise bad_value("offsets file", text[:40], "a Spark offsets log entry ('v1' first)")
    lines = _json_lines(text)
    if not lines:
        raise bad_value("offsets file", text[:40], "a version line, metadata, then offsets")
    return {"metadata": lines[0], "sources": lines[1:]}


def kafka_offsets(source: dict[str, Any]) -> dict[tuple[str, int], int]:
    """``{"in": {"0": 12}}`` -> ``{("in", 0): 12}``."""
    return {(topic, int(p)): int(o) for topic, parts in source.items()
            for p, o in parts.items()}


def parse_initial(text: str) -> dict[tuple[str, int], int]:
    """``sources/0/0``: where the Kafka source started (the start of batch 0)."""
    lines = _json_lines(text)
    if not lines:
        raise bad_value("initial offsets file", text[:40], "Kafka's start offsets as JSON")
    return kafka_offsets(lines[-1])


@dataclass(frozen=True)
class BatchLog:
    """One micro-batch as the checkpoint tells it: its offset range and whether it
    was committed. ``size`` is the offsets it spans -- the records it *predicts*
    (a transactional input's markers take offsets too, so records <= size)."""

    batch: int
    start: dict[tuple[str, int], int]
    end: dict[tuple[str, int], int]
    committed: bool
    planned_at: float | None = None  # offsets/N's mtime (epoch seconds)
    committed_at: float | None = None  # commits/N's mtime

    @property
    def size(self) -> int:
        return sum(e - self.start.get(tp, 0) for tp, e in self.end.items())

    def ranges(self) -> dict[str, str]:
        """Per partition ``"start-end"``, as a student reads it."""
        return {f"{t}/{p}": f"{self.start.get((t, p), 0)}-{e}"
                for (t, p), e in sorted(self.end.items())}

    def to_dict(self) -> dict[str, Any]:
        return {"batch": self.batch, "size": self.size, "committed": self.committed,
                "ranges": self.ranges()}


def _numbered(folder: Path) -> list[int]:
    if not folder.is_dir():
        return []
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit() and p.is_file())


def batches(checkpoint: str | Path) -> list[BatchLog]:
    """Every batch planned in ``checkpoint``: ``offsets/N`` beside ``commits/N``."""
    ckpt = Path(checkpoint)
    planned = _numbered(ckpt / "offsets")
    committed = set(_numbered(ckpt / "commits"))
    initial_file = ckpt / "sources" / "0" / "0"
    start = parse_initial(initial_file.read_text()) if initial_file.is_file() else {}
    out = []
    for n in planned:
        path = ckpt / "offsets" / str(n)
        sources = parse_offsets(path.read_text())["sources"]
        end = kafka_offsets(sources[0]) if sources else {}
        commit = ckpt / "commits" / str(n)
        out.append(BatchLog(n, dict(start), end, n in committed, path.stat().st_mtime,
                            commit.stat().st_mtime if n in committed else None))
        start = {**start, **end}
    return out


def predicted_size(checkpoint: str | Path, batch: int) -> int:
    """How many offsets batch ``batch`` spans, from ``offsets/N-1`` and ``offsets/N``:
    on a plain (non-transactional) input, exactly the records a replay writes again."""
    for b in batches(checkpoint):
        if b.batch == batch:
            return b.size
    raise bad_value("batch", batch, f"a batch planned in {checkpoint}/offsets")


def uncommitted(checkpoint: str | Path) -> list[int]:
    """Batches planned but not committed: the ones a restart runs again."""
    return [b.batch for b in batches(checkpoint) if not b.committed]


def query_id(checkpoint: str | Path) -> str:
    """The query's id (``metadata``), stable across restarts of one checkpoint."""
    return json.loads((Path(checkpoint) / "metadata").read_text())["id"]


# --- the query (the same code in the kernel and in a child driver) --------------------


@dataclass
class QuerySpec:
    """Everything one run of the query needs; JSON, so a child driver gets it whole.

    ``crash_at``: the batch after whose write the query dies (``crash``: raise an
    exception in the driver, or -- ``kill_driver`` -- park there until the parent
    SIGKILLs the driver process). A crash happens once per ``state`` folder: the
    restarted query finds the flag and goes on.
    """

    bootstrap: str
    source: str
    sink: str
    target: str  # output topic, folder or database file
    checkpoint: str
    state: str  # crash flags, the "parked" file, the child's ops
    process: str = "spark-0"
    max_offsets: int = MAX_OFFSETS
    crash_at: int | None = None
    crash: str | None = None
    t0_epoch: float = 0.0  # wall time of the History's zero
    master: str | None = None
    shuffle_partitions: int = 2

    def __post_init__(self) -> None:
        if self.sink not in SINKS:
            raise bad_value("sink", self.sink, "one of " + ", ".join(SINKS))
        if self.crash is not None and self.crash not in CRASHES:
            raise bad_value("crash", self.crash, "None or one of " + ", ".join(CRASHES))
        if self.crash_at is not None and (not isinstance(self.crash_at, int)
                                          or self.crash_at < 0):
            raise bad_value("crash_at", self.crash_at, "None or a batch number >= 0")
        if not isinstance(self.max_offsets, int) or self.max_offsets < 1:
            raise bad_value("max_offsets", self.max_offsets, "a whole number >= 1")

    @property
    def ops_path(self) -> Path:
        return Path(self.state) / f"ops-{self.process}.jsonl"

    def parked_path(self, batch: int) -> Path:
        return Path(self.state) / f"parked-{batch}"

    def crashed_path(self, batch: int) -> Path:
        return Path(self.state) / f"crashed-{batch}"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> QuerySpec:
        return cls(**json.loads(text))


class OpLog:
    """Ops appended to a JSON Lines file as they happen (flushed each line), so the
    ops of a driver SIGKILLed mid-run survive it; times on the parent's clock."""

    def __init__(self, path: Path, t0_epoch: float) -> None:
        self.path = path
        self.t0 = t0_epoch

    def record(self, process: str, kind: str, outcome: str, values=(), *,
               at: float | None = None, **fields: Any) -> None:
        op = Op(process, kind, outcome, (at or time.time()) - self.t0, tuple(values),
                **fields)
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(op.to_record(), separators=(",", ":")) + "\n")
            out.flush()
            os.fsync(out.fileno())


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
    from . import streaming_sinks as S

    spark.conf.set("spark.sql.shuffle.partitions", str(spec.shuffle_partitions))
    Path(spec.state).mkdir(parents=True, exist_ok=True)
    log = OpLog(spec.ops_path, spec.t0_epoch)
    frame = source_frame(spark, spec)
    writer = S.writer(spec, frame, log, _crash_hook(spec, log))
    query = (writer.option("checkpointLocation", spec.checkpoint)
             .queryName(f"deliverylab-{spec.process}")
             .trigger(availableNow=True).start())
    await_query(query, f"the Spark query {spec.process}", spec.checkpoint, timeout)


def await_query(query: Any, what: str, checkpoint: str, timeout: float) -> None:
    """Wait for an ``availableNow`` query to drain its input; raise (never return half a
    run) if it does not within ``timeout``, and stop it either way."""
    try:
        if not query.awaitTermination(timeout):
            raise LabError(f"{what} did not finish within {timeout:.0f} s; its "
                           f"checkpoint is {checkpoint}")
    finally:
        if query.isActive:
            query.stop()


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
    """One ``commit`` op per batch this run committed, timed by ``commits/N``."""
    for b in batches(spec.checkpoint):
        if b.committed and b.committed_at is not None and b.committed_at >= since:
            log.record(spec.process, "commit", "ok", at=b.committed_at,
                       detail=f"commits/{b.batch} " + json.dumps(b.ranges()))


# --- the pipeline a chapter drives ------------------------------------------------------


@dataclass
class RunReport:
    """One run (one driver's life) of the query."""

    process: str
    crashed: str | None = None  # the fault's name
    error: str | None = None
    seconds: float = 0.0


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
        workdir: checkpoint and state live here (a fresh temporary folder by default).
        master: Spark master for the kernel's session and the child driver.
    """

    def __init__(self, target: Any, source: str, sink: str = "kafka",
                 output: str | None = None, history: History | None = None,
                 workdir: str | Path | None = None, max_offsets: int = MAX_OFFSETS,
                 master: str | None = None, name: str = "spark") -> None:
        if sink not in SINKS:
            raise bad_value("sink", sink, "one of " + ", ".join(SINKS))
        self.bootstrap = target if isinstance(target, str) else _bootstrap(target)
        self.source, self.sink, self.name = source, sink, name
        self.history = history if history is not None else History()
        self.workdir = Path(workdir) if workdir else Path(
            tempfile.mkdtemp(prefix=f"deliverylab-{name}-"))
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
        t0_epoch = time.time() - self.history.now()
        return QuerySpec(self.bootstrap, self.source, self.sink, self.output,
                         str(self.checkpoint), str(self.state), process, self.max_offsets,
                         crash_at, crash, t0_epoch, self.master)

    def _absorb(self, spec: QuerySpec) -> None:
        """Move the run's ops (written by the query, maybe in a child) into the History."""
        if spec.ops_path.exists():
            for line in spec.ops_path.read_text().splitlines():
                if line.strip():
                    self.history.append(Op.from_record(json.loads(line)))
            spec.ops_path.unlink()

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
        log = OpLog(spec.ops_path, spec.t0_epoch)
        try:
            if crash == "kill_driver":
                self._run_child(spec, timeout)
                report.crashed = "kill_driver"
            else:
                from .inspector import session

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
            self._absorb(spec)
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
        from .cluster.local import start_reaper

        Path(spec.state).mkdir(parents=True, exist_ok=True)
        log_path = Path(spec.state) / f"{spec.process}.log"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
        reaper = start_reaper()
        with log_path.open("w") as logf:
            child = subprocess.Popen(
                [sys.executable, "-m", "deliverylab.streaming_driver", spec.to_json()],
                stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT, env=env,
                start_new_session=True)
        reaper.stdin.write(f"watch {child.pid}\n")
        reaper.stdin.flush()
        try:
            end = time.monotonic() + timeout
            parked = spec.parked_path(spec.crash_at)
            while not parked.exists():
                if child.poll() is not None:
                    raise LabError(f"the child driver {spec.process} exited "
                                   f"({child.returncode}) before batch {spec.crash_at} "
                                   f"was written; its log: {log_path}")
                if time.monotonic() > end:
                    raise LabError(f"the child driver {spec.process} did not reach batch "
                                   f"{spec.crash_at} within {timeout:.0f} s; log: {log_path}")
                time.sleep(0.2)
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(30)
        finally:
            if child.poll() is None:
                os.killpg(child.pid, signal.SIGKILL)
                child.wait(30)
            reaper.stdin.write(f"forget {child.pid}\n")
            reaper.stdin.close()
            reaper.wait(10)

    def crash_and_restart(self, crash_at: int, crash: str = "crash_query",
                          timeout: float = 600.0) -> PipelineRun:
        """Crash after batch ``crash_at``'s write, predict the replay from the
        checkpoint, restart and run to the end."""
        self.run(crash_at=crash_at, crash=crash, timeout=timeout)
        self.run(timeout=timeout)
        return self.report

    def clean(self) -> None:
        """Remove the checkpoint and state (a new run then starts from the input's start)."""
        shutil.rmtree(self.workdir, ignore_errors=True)


def _bootstrap(target: Any) -> str:
    for attr in ("direct_bootstrap_servers", "bootstrap_servers"):
        found = getattr(target, attr, None)
        if isinstance(found, str) and found:
            return found
    raise bad_value("target", target, "a bootstrap address or a Cluster")
