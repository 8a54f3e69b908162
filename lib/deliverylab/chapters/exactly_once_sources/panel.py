"""Chapter 07's buttons and live status: a FaultPanel that also watches Connect.

The broker status line alone would hide what the chapter is about, so this panel adds
one line: which worker runs the task, and the source offset Connect has *committed*
beside the file's size -- the gap between the two is exactly what a SIGKILL would
read again. The buttons are the registry's worker faults plus one action that is not
a fault: appending lines to the source file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...connect.connect import Connect, file_source
from ...notebook.widgets import FaultPanel, FaultSpec
from .sources import SourceFile, after

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...cluster import Cluster
    from ...nemesis import Nemesis
    from .sources import SourceRun

#: The chapter's registry buttons, in panel order.
WORKER_FAULTS = ("kill_worker", "stop_worker", "pause_worker", "resume_worker",
                 "restart_worker", "restart_task")


def connect_line(connect: Connect, name: str, source: SourceFile) -> str:
    """``workers 1:up 2:paused | task 0 RUNNING on worker 2 | committed 410 of 820
    bytes: 5 of 10 lines would be read again``, never raising (a paused leader makes
    REST slow: a status line must not hang the panel)."""
    workers = " ".join(f"{w.index}:{connect.status_of(w.index)}" for w in connect.workers)
    try:
        status = connect.rest("GET", f"/connectors/{name}/status", timeout=3)
        tasks = status.get("tasks") or [{}]
        owner = connect.task_worker_of(status)
        task = (f"task 0 {tasks[0].get('state', 'unassigned')}"
                + (f" on worker {owner}" if owner else ""))
        position = connect.committed_position(name)
        again = after(source.ends, position)
        offsets = (f"committed {position or 0} of {source.size} bytes: {again} of "
                   f"{len(source.ends)} lines would be read again after a crash")
    except Exception as exc:  # noqa: BLE001 - shown, never raised, from a refresh thread
        task, offsets = "task: unknown", f"({type(exc).__name__}: {str(exc)[:80]})"
    return f"Connect workers {workers} | {task} | {offsets}"


class ConnectPanel(FaultPanel):
    """The chapter's panel: worker faults, "append lines", and the Connect status line.

    Creates its own connector ``name`` reading a fresh file into ``topic`` on
    ``connect``, so a student's presses never touch the chapter's measured runs.
    """

    def __init__(self, cluster: Cluster, nemesis: Nemesis, connect: Connect, topic: str,
                 source: SourceFile, name: str = "yours", lines: int = 50,
                 auto_refresh: float | None = 2.0) -> None:
        self.connect, self.connector, self.source = connect, name, source
        connect.create(name, file_source(source.path, topic))
        connect.wait_task(name)

        def append_lines() -> str:
            got = source.append(lines)
            return f"appended {len(got)} lines ({got[0]} .. {got[-1]}) to {source.path.name}"

        append_lines.__name__ = "append_lines"
        specs: list[Any] = [(f"Append {lines} lines", append_lines, None,
                             "write lines to the source file: the connector copies them",
                             "success")]
        # Every worker button aims at this panel's connector, so at its Connect cluster
        # even when a second one (exactly-once) was started later.
        specs += [FaultSpec.fault(f, {"connector": name}) for f in WORKER_FAULTS]
        super().__init__(cluster, nemesis, specs, topic=topic,
                         history=lambda: nemesis.history, auto_refresh=auto_refresh,
                         title="Chapter 7: the Connect workers")

    def refresh(self) -> str:
        text = super().refresh()
        line = connect_line(self.connect, self.connector, self.source)
        self.status_text = f"{text}\n{line}"
        self.status.value += f"<div class='dl-connect'>{line}</div>"
        return self.status_text


def plot_copies(results: dict[str, SourceRun], save: str | None = None) -> Figure:
    """Bars per run: records read under each isolation level beside the lines written,
    so duplicates (a bar above the line count) and aborted copies (read_uncommitted
    above read_committed) show at a glance."""
    import matplotlib.pyplot as plt

    labels = list(results)
    fig, ax = plt.subplots(figsize=(9, 3.6))
    xs = range(len(labels))
    for shift, key, text in ((-0.2, "committed_records", "read_committed"),
                             (0.2, "uncommitted_records", "read_uncommitted")):
        ax.bar([x + shift for x in xs], [results[k].observed[key] for k in labels], 0.4,
               label=text)
    ax.scatter(list(xs), [results[k].observed["lines"] for k in labels], color="black",
               marker="_", s=900, zorder=3, label="lines in the file")
    ax.set_xticks(list(xs), labels, rotation=20)
    ax.set_ylabel("records")
    ax.set_title("Each run: records in the topic vs lines in the file")
    ax.legend(fontsize=8)
    fig.tight_layout()
    if save:
        fig.savefig(save)
    return fig


__all__ = ["ConnectPanel", "WORKER_FAULTS", "connect_line", "plot_copies"]
