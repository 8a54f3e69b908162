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

from . import checker as C
from .errors import bad_value
from .faults import FAULTS
from .history import History, Read
from .modes import AT_LEAST_ONCE
from .readers import read_back
from .streaming import CRASHES, SINKS, BatchLog, SparkPipeline, batches
from .widgets import FaultSpec
from .workload import ProducerWorkload


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
        from .streaming_sinks import control_topic

        cluster.create_topic(control_topic(out), partitions=1)
    history = history if history is not None else History()
    ProducerWorkload(cluster, source, input_mode, history).run(values)
    pipe = SparkPipeline(cluster, source, sink,
                         output=out if sink in ("kafka", "kafka_txn") else None,
                         history=history, max_offsets=max_offsets, master=master,
                         name=f"spark-{sink}")
    if crash is not None:
        pipe.run(crash_at=crash_at, crash=crash)
    pipe.run()
    reads, facts = _read(cluster, pipe, source)
    # Judged against what the sink promises: at-least-once allows a replay's copies.
    allowed = AT_LEAST_ONCE.allowed if sink == "kafka" else frozenset()
    result = C.check(history, reads, allowed, pipeline=(source, pipe.output))
    counts: dict[str, int] = {}
    for r in reads:
        if r.topic == pipe.output and r.value is not None:
            counts[r.value] = counts.get(r.value, 0) + 1
    facts["extra_records"] = sum(n - 1 for n in counts.values() if n > 1)
    facts["output_records"] = sum(counts.values())
    facts["input_records"] = sum(1 for r in reads if r.topic == source and r.value)
    facts["input_offsets"] = sum(b.size for b in pipe.batches())
    return SceneResult(sink, crash, pipe.report.predicted, result, pipe.batches(), pipe,
                       (source, pipe.output), facts, time.monotonic() - t0)


def _read(cluster: Any, pipe: SparkPipeline, source: str) -> tuple[list[Read], dict[str, int]]:
    """The output as its readers see it, plus the other readers' view as facts."""
    from . import streaming_sinks as K

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
        reads += K.read_database(pipe.output)
    else:
        from .inspector import session

        reads += K.read_files(session(pipe.master), pipe.output)
        plain = K.read_folder_plainly(pipe.output)
        facts["plain_reader_records"] = sum(1 for r in plain if r.value)
        facts["plain_reader_duplicates"] = len(C.duplicates(plain))
    return reads, facts


def dedup_scene(cluster: Any, scene: SceneResult, master: str | None = None) -> dict[str, int]:
    """Deduplicate a Kafka scene's output downstream; count what comes out."""
    from . import streaming_sinks as K
    from .inspector import session

    if scene.sink != "kafka":
        raise bad_value("scene", scene.sink, "a scene of the kafka sink")
    target = f"{scene.topics[1]}-dedup"
    cluster.create_topic(target, partitions=len(scene.pipeline.batches()[0].end))
    ckpt = str(scene.pipeline.workdir / "dedup-checkpoint")
    K.deduplicate(session(master), scene.pipeline.bootstrap, scene.topics[1], target, ckpt)
    before = read_back(cluster, [scene.topics[1]], "read_committed")
    after = read_back(cluster, [target], "read_committed")
    return {"records_in": sum(1 for r in before if r.value),
            "records_out": sum(1 for r in after if r.value),
            "duplicates_in": len(C.duplicates(before)),
            "duplicates_out": len(C.duplicates(after)),
            "values_out": len({r.value for r in after if r.value}),
            "state_keys": K.state_rows(session(master), ckpt)}


# --- buttons, status, figure ------------------------------------------------------------


class SparkConsole:
    """Chapter 05's failure buttons: each press runs one crash scene of the pipeline.

    The buttons are the registry's ``crash_query`` and ``kill_driver`` (plain callables
    on a :class:`~deliverylab.widgets.FaultPanel`, so papermill presses them by those
    names). A press writes ``values`` values, runs the query into ``sink``, crashes it
    after batch ``crash_at`` was written, restarts it and judges the output; its result
    line is the live status: the batch that crashed, its offsets, the last commit.
    """

    def __init__(self, cluster: Any, sink: str = "kafka", values: int = 30,
                 crash_at: int = 1, max_offsets: int = 10, master: str | None = None) -> None:
        self.cluster, self.sink, self.values = cluster, sink, values
        self.crash_at, self.max_offsets, self.master = crash_at, max_offsets, master
        self.scenes: list[SceneResult] = []

    def _scene(self, crash: str) -> str:
        scene = crash_scene(self.cluster, self.sink, crash, self.values, self.crash_at,
                            max_offsets=self.max_offsets, master=self.master)
        self.scenes.append(scene)
        return f"{status(scene.pipeline.checkpoint)}; {scene.extra} records written twice"

    def crash_query(self) -> str:
        return self._scene("crash_query")

    def kill_driver(self) -> str:
        return self._scene("kill_driver")

    def ran(self, crash: str) -> SceneResult | None:
        """The last scene of crash ``crash``, if a press ran one."""
        found = [s for s in self.scenes if s.crash == crash]
        return found[-1] if found else None

    @property
    def history(self) -> History | None:
        return self.scenes[-1].pipeline.history if self.scenes else None

    def specs(self) -> list[FaultSpec]:
        return [FaultSpec(FAULTS[name].label, getattr(self, name), None, FAULTS[name].help,
                          "danger") for name in CRASHES]


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


def batch_timeline(scene: SceneResult, title: str | None = None, save: Any = None):
    """One row per batch: when ``offsets/N`` was written, when the sink wrote it
    (each send, by the run that sent it), when ``commits/N`` was written, the crash."""
    from .plots import COLORS, LabFigure, _finish

    history = scene.pipeline.history
    zero = time.time() - history.now()  # the History's zero on the wall clock

    def rel(epoch: float) -> float:
        return epoch - zero

    fig = LabFigure(figsize=(9, 1.2 + 0.5 * len(scene.batches)))
    ax = fig.subplots()
    for b in scene.batches:
        ax.scatter([rel(b.planned_at)], [b.batch], marker="|", s=300, color="#0072B2",
                   label="offsets/N written" if b.batch == 0 else None)
        if b.committed_at:
            ax.scatter([rel(b.committed_at)], [b.batch], marker="D", color=COLORS["ok"],
                       label="commits/N written" if b.batch == 0 else None)
    runs = sorted({op.process for op in history if op.kind == "send"
                   and op.process.startswith("spark")})
    marks = ["o", "x", "s", "^"]
    for i, run in enumerate(runs):
        sends = [op for op in history if op.kind == "send" and op.process == run
                 and op.detail and op.detail.startswith("batch ")]
        ax.scatter([op.time for op in sends], [int(op.detail.split()[1]) for op in sends],
                   marker=marks[i % len(marks)], color=COLORS["record"] if i == 0 else
                   COLORS["duplicate"], alpha=0.6, label=f"sink writes ({run})")
    for op in history.faults():
        ax.axvline(op.time, color=COLORS["fault"], linestyle="--", label=op.fault)
    ax.set_xlabel("seconds since the History started")
    ax.set_ylabel("batch")
    ax.set_yticks([b.batch for b in scene.batches])
    ax.invert_yaxis()
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8)
    ax.set_title(title or f"{scene.sink} sink: offsets, writes, commits and the crash")
    return _finish(fig, save)
