"""Chapter 05's scenes (labs/05_spark_pipeline): the failure buttons and the batch figure
around :mod:`deliverylab.spark.scene`'s crash scenes, which the kit re-exports as the
chapter reaches them (``kit.crash_scene``).
"""

from __future__ import annotations

import time
from typing import Any

from ...errors import bad_value
from ...faults import FAULTS
from ...history import History
from ...notebook.plots import COLORS, LabFigure, finish
from ...notebook.widgets import FaultSpec
from ...spark.query import CRASHES
from ...spark.scene import SceneResult, crash_scene, dedup_scene, status

__all__ = ["SparkConsole", "SceneResult", "batch_timeline", "crash_scene", "dedup_scene",
           "observations", "status"]


class SparkConsole:
    """Chapter 05's failure buttons: each press runs one crash scene of the pipeline.

    The buttons are the registry's ``crash_query`` and ``kill_driver`` (plain callables
    on a :class:`~deliverylab.notebook.widgets.FaultPanel`, so papermill presses them by those
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


def batch_timeline(scene: SceneResult, title: str | None = None, save: Any = None):
    """One row per batch: when ``offsets/N`` was written, when the sink wrote it
    (each send, by the run that sent it), when ``commits/N`` was written, the crash."""
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
    return finish(fig, save)


def observations(plain: SceneResult, txn_input: SceneResult,
                 crashed: dict[str, SceneResult], eos: dict[str, SceneResult],
                 dedup: dict[str, int]) -> dict[str, Any]:
    """Chapter 05's observed figures, one key per figure its verdict checks: each crash's
    predicted and found replay, each exactly-once sink's copies, what the plain and
    read_uncommitted readers saw, the dedup query's counts, and nothing lost anywhere.

    ``crashed`` maps a crash (``crash_query``, ``kill_driver``) to its Kafka-sink scene,
    ``eos`` a sink (``files``, ``database``, ``kafka_txn``) to its scene under a crash.
    """
    for name, scenes in (("crashed", crashed), ("eos", eos)):
        if not scenes:
            raise bad_value(name, scenes, "a dict of one or more scenes")
    if "kafka_txn" not in eos or "files" not in eos:
        raise bad_value("eos", sorted(eos), "scenes of the kafka_txn and files sinks")
    observe: dict[str, Any] = {"txn_input_records": txn_input.facts["input_records"],
                               "txn_input_offsets": txn_input.facts["input_offsets"]}
    for name, sc in crashed.items():
        observe[f"{name}_predicted"] = sc.predicted
        observe[f"{name}_extra"] = sc.extra
    for sink, sc in eos.items():
        observe[f"{sink}_extra"] = sc.extra
        observe[f"{sink}_predicted"] = sc.predicted
    observe["kafka_txn_aborted_visible_uncommitted"] = eos["kafka_txn"].facts[
        "aborted_visible_uncommitted"]
    observe["files_plain_reader_records"] = eos["files"].facts["plain_reader_records"]
    observe.update({f"dedup_{k}": v for k, v in dedup.items()})
    everything = [plain, txn_input, *crashed.values(), *eos.values()]
    observe["pipeline_missing"] = sum(sc.result.counts["pipeline_missing"]
                                      for sc in everything)
    observe["lost"] = sum(sc.result.counts["lost"] for sc in everything)
    return observe
