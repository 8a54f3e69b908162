"""Chapter 02b's figure of a rebalance: one lane per partition, one panel per strategy,
drawn from the timelines :mod:`.rebalance` measured (kept apart: measuring and running
are one role, drawing another)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...errors import bad_value
from .rebalance import LABELS, GroupRun

_MEMBER_COLORS = ("#0072B2", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#D55E00")


def plot(runs: Sequence[GroupRun], title: str | None = None, save: Any = None) -> Any:
    """One lane per partition and one panel per strategy: every record consumed, colored
    by the member that consumed it, on a clock that starts at the stall; the stall, the
    poll interval's end and the wake as lines; each window's stop-the-world pause shaded
    and labelled; under the lanes, each healthy member's revoke callbacks (commit and
    modeled flush: it consumes nothing meanwhile) as a bar in its color."""
    from ...notebook.plots import COLORS, LabFigure, finish

    if not runs:
        raise bad_value("runs", runs, "one GroupRun or more")
    fig = LabFigure(figsize=(11, 2.3 * len(runs) + 0.6), layout="constrained")
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    members = sorted({e.member for r in runs for e in r.timeline if e.kind == "record"})
    color = {m: _MEMBER_COLORS[i % len(_MEMBER_COLORS)] for i, m in enumerate(members)}
    for ax, run in zip(axes, runs, strict=True):
        t0 = run.stall
        for m in members:
            pts = [(e.t - t0, e.partitions[0]) for e in run.timeline
                   if e.kind == "record" and e.member == m and e.t >= t0 - 2]
            if pts:
                ax.scatter([x for x, _ in pts], [y for _, y in pts], marker="|", s=30,
                           color=color[m], linewidths=0.6,
                           label=m + (" (stalls)" if m == run.staller else ""),
                           rasterized=True)
        max_poll = run.settings["max.poll.interval.ms"] / 1000
        for x, label in ((0.0, "stall"), (max_poll, "max.poll.interval.ms"),
                         (run.wake - t0, "wake")):
            ax.axvline(x, color=COLORS["marker"], linestyle=":", linewidth=1)
            ax.annotate(label, (x, run.partitions - 0.4), fontsize=7, rotation=90,
                        va="top", ha="right")
        for w in (run.eviction, run.rejoin):
            for m, spans in w.revokes.items():
                lane = -0.3 - 0.15 * (members.index(m) if m in members else 0)
                for a, b, _ in spans:  # one lane per member: simultaneous ones both show
                    ax.hlines(lane, a - t0, b - t0, color=color.get(m, COLORS["marker"]),
                              linewidth=3)
            a, b = w.stop_the_world
            if b - a > 0:
                ax.axvspan(a - t0, b - t0, color=COLORS["fail"], alpha=0.25)
                ax.annotate(f"{b - a:.2f} s", ((a + b) / 2 - t0, -0.9), fontsize=8,
                            ha="center", color=COLORS["fail"])
        ax.set_ylim(-1.2, run.partitions - 0.2)
        ax.set_yticks(range(run.partitions))
        ax.set_ylabel("partition")
        ax.set_title(LABELS[run.strategy], fontsize=9, loc="left")
    axes[0].legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7, frameon=False)
    axes[-1].set_xlabel("seconds since the stall began (shaded: nothing consumed anywhere; "
                        "bars under the lanes: a member inside on_revoke)")
    fig.suptitle(title or "What one stalled consumer costs its group", fontsize=10)
    return finish(fig, save)
