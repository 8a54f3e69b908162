"""Figures for the chapters: what happened when (timeline), and what the log holds (strips).

Every function returns a matplotlib ``Figure`` built *without* pyplot, with a PNG
``_repr_png_``: so a figure as the last expression of a cell renders exactly once in
JupyterLab, lands as an image in papermill output and HTML exports, leaks no global
pyplot state across a long-lived kernel, and works headless (no display, no backend
choice). ``save=`` also writes it to a file (format from the suffix: .png, .svg, .pdf).
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from .. import matrix as M
from ..checker import ANOMALIES
from ..errors import bad_value
from ..faults import FAULTS
from ..history import History, Op
from ..process.lablog import logger

# One color per meaning, shared by both figures (colorblind-safe Okabe-Ito palette).
COLORS = {
    "ok": "#009E73",  # acknowledged send / committed record
    "info": "#E69F00",  # indefinite: maybe written
    "fail": "#D55E00",  # definitely not written
    "read": "#0072B2",  # a consumer poll
    "fault": "#CC79A7",
    "record": "#56B4E9",
    "marker": "#000000",
    "aborted": "#D55E00",
    "pending": "#F0E442",
    "duplicate": "#7B2CBF",
    "lost": "#000000",
}


log = logger(__name__)  # the lab's log, never the student's cell

#: matplotlib's warning when a figure is too small for its decorations (a tall legend
#: beside few lanes): the axes would collapse, so the layout is skipped.
_COLLAPSED = "constrained_layout not applied"


def save_legibly(fig: Figure, target: Any, tries: int = 3, **kwargs: Any) -> None:
    """``fig.savefig(target)``, made taller while its layout collapses.

    Why: matplotlib then skips the layout and warns ("constrained_layout not
    applied..."), which prints as a red box in the student's cell and leaves a squashed
    plot. A figure that still collapses after ``tries`` is saved as it is, and the
    warning goes to this module's logger, not into the cell."""
    for attempt in range(tries):
        if hasattr(target, "seek"):
            target.seek(0)
            target.truncate()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fig.savefig(target, **kwargs)
        collapsed = [w for w in caught if _COLLAPSED in str(w.message)]
        for w in caught:
            if w not in collapsed:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if not collapsed:
            return
        if attempt + 1 < tries:
            fig.set_figheight(fig.get_figheight() * 1.5)
        else:
            log.info("figure %r: %s", fig, collapsed[0].message)


def fit_legend(fig: Figure, entries: int, per_entry: float = 0.2) -> None:
    """Make ``fig`` at least as tall as a legend of ``entries`` lines beside it (font
    size 8 takes about 0.2 in a line), plus the title and the axis label."""
    fig.set_figheight(max(fig.get_figheight(), 1.2 + per_entry * entries))


class LabFigure(Figure):
    """A Figure that IPython can show by itself (no pyplot, no inline backend needed)."""

    def _repr_png_(self) -> bytes:
        buf = io.BytesIO()
        save_legibly(self, buf, format="png", dpi=100, bbox_inches="tight")
        return buf.getvalue()


def finish(fig: Figure, save: str | Path | None) -> Figure:
    """Save ``fig`` to ``save`` (its folder made) when given, and hand it back: the last
    line of every lab figure, the chapters' kits included."""
    if save is not None:
        path = Path(save)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_legibly(fig, path, dpi=120, bbox_inches="tight")
    return fig


def _field(item: Any, name: str, default: Any = None) -> Any:
    """Read ``name`` from a dict, a record object or a pandas row alike."""
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def _rows(data: Any) -> list[Any]:
    """Rows of a list, a pandas DataFrame or a Spark DataFrame (collected)."""
    if data is None:
        return []
    if hasattr(data, "toPandas"):  # Spark DataFrame: these views are small
        data = data.toPandas()
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        return data.to_dict("records")
    return list(data)


def _values(items: Iterable[Any] | None) -> set[str]:
    """Value ids from strings, checker findings (dicts with "value") or Spark rows."""
    out = set()
    for item in _rows(items):
        value = item if isinstance(item, str) else _field(item, "value")
        if value is not None:
            out.add(str(value))
    return out


# --- timeline ---------------------------------------------------------------------------


def timeline(
    history: History | Iterable[Op],
    faults: Iterable[Any] | None = None,
    *,
    duplicates: Iterable[Any] | None = None,
    lost: Iterable[Any] | None = None,
    title: str | None = None,
    save: str | Path | None = None,
) -> Figure:
    """Sends, their outcomes, reads, transactions and faults over time, one lane per process.

    Faults are drawn from the History's own ``fault`` ops (every fault the Nemesis or a
    client did); ``faults`` overrides them with dicts or records with ``time`` and
    ``name`` on the History's clock (:meth:`History.now`); one with ``end`` (or
    ``duration``) is drawn as a band. ``duplicates`` and ``lost`` are value ids or the
    checker's findings (anything with a ``value``); their sends are ringed, so a
    student sees *which* send became the duplicate or the loss, and which fault it
    followed. A send is plotted
    when its outcome was known (the History stamps an op when it ends), so "send" and
    "ack" share one mark, colored by outcome.
    """
    if not isinstance(history, History | Iterable):
        raise bad_value("history", history, "a History or a list of Op")
    everything = list(history)
    ops = [op for op in everything if op.kind != "fault"]
    dup, gone = _values(duplicates), _values(lost)
    if faults is None:
        # The fault's button label names it at a glance ("Lose an ack"); its detail
        # (a sentence) is in the panel's log.
        faults = [{"time": op.time, "name": FAULTS[op.fault].label if op.fault in FAULTS
                   else op.detail or op.fault}
                  for op in everything if op.kind == "fault"]
    fault_rows = _rows(faults)
    senders = {op.process for op in ops if op.kind == "send"}
    processes = sorted({op.process for op in ops}, key=lambda p: (p not in senders, p))
    lane = {p: i for i, p in enumerate(processes)}

    fig = LabFigure(figsize=(11, 1.6 + 0.55 * max(len(processes), 1)), layout="constrained")
    ax = fig.add_subplot()
    big = len(ops) > 20_000  # rasterize big scatters: a vector file of 1M dots is unusable

    def scatter(selected: list[Op], **style: Any) -> None:
        if selected:
            ax.scatter([o.time for o in selected], [lane[o.process] for o in selected],
                       rasterized=big, **style)

    sends = [o for o in ops if o.kind == "send"]
    labels = {"ok": "send acknowledged (ok)", "info": "send indefinite (info)",
              "fail": "send failed (fail)"}
    for outcome, marker in (("ok", "o"), ("info", "D"), ("fail", "x")):
        scatter([o for o in sends if o.outcome == outcome], marker=marker, s=22,
                color=COLORS[outcome], label=labels[outcome], zorder=3)
    scatter([o for o in ops if o.kind == "poll"], marker="|", s=120, color=COLORS["read"],
            label="read (poll)", zorder=2)
    for kind, color, label in (("commit_txn", COLORS["ok"], "commit transaction"),
                               ("abort_txn", COLORS["fail"], "abort transaction")):
        scatter([o for o in ops if o.kind == kind], marker="s", s=40, facecolors="none",
                edgecolors=color, linewidths=1.5, label=label, zorder=3)
    for values, color, label in ((dup, COLORS["duplicate"], "duplicated value"),
                                 (gone, COLORS["lost"], "lost value")):
        hit = [o for o in sends if values.intersection(o.values)]
        scatter(hit, marker="o", s=150, facecolors="none", edgecolors=color, linewidths=2,
                label=f"{label} ({len(values)})", zorder=4)
        missing = values.difference(v for o in hit for v in o.values)
        if missing:  # found in the topic but never sent: say so rather than hide it
            ax.text(0.99, 0.02, f"{len(missing)} {label}(s) have no send in this History",
                    transform=ax.transAxes, ha="right", fontsize=8, color=color)

    labels = []
    for fault in fault_rows:
        start, name = _field(fault, "time"), _field(fault, "name", "fault")
        if start is None:
            raise bad_value("faults", fault, "dicts or records with 'time' and 'name'")
        end = _field(fault, "end")
        if end is None and _field(fault, "duration") is not None:
            end = start + _field(fault, "duration")
        if end is not None:
            ax.axvspan(start, end, color=COLORS["fault"], alpha=0.15, zorder=0)
        ax.axvline(start, color=COLORS["fault"], linestyle="--", linewidth=1.2, zorder=1)
        labels.append((start, str(name)))
    # A fault's description can be a sentence: rotated, it would be taller than the axes
    # and collapse the layout. Cut short, horizontal, out of the layout; on the line's
    # left when the line is near the right edge (else it runs into the legend).
    # Two faults close together (chapter 1's pause, then kill) would print one label over
    # the other: a label that would overlap one already placed goes a line lower.
    lo, hi = ax.get_xlim()
    width_pt = fig.get_figwidth() * 72 * ax.get_position().width
    taken: list[list[tuple[float, float]]] = []  # per line: (from, to) in axes fraction
    for start, name in sorted(labels):
        label = name if len(name) <= 32 else name[:31] + "\u2026"
        at = (start - lo) / (hi - lo) if hi > lo else 0.0
        right = at > 0.7
        span = (len(label) * 8 * 0.6 + 6) / width_pt  # fontsize 8: ~0.6 em per character
        extent = (at - span, at) if right else (at, at + span)
        line = next((i for i, spans in enumerate(taken)
                     if all(extent[1] <= a or extent[0] >= b for a, b in spans)), len(taken))
        if line == len(taken):
            taken.append([])
        taken[line].append(extent)
        ax.annotate(label, (start, 1.0), xycoords=("data", "axes fraction"),
                    xytext=(-3 if right else 3, -3 - 11 * line), textcoords="offset points",
                    va="top", ha="right" if right else "left", fontsize=8,
                    color=COLORS["fault"], bbox={"facecolor": "white", "edgecolor": "none",
                                                 "alpha": 0.8, "pad": 1}).set_in_layout(False)

    ax.set_yticks(range(len(processes)), processes)
    ax.set_ylim(-0.7, max(len(processes), 1) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel("time since the History started (s)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title or f"Timeline: {len(sends)} sends, {len(ops)} operations")
    handles, names = ax.get_legend_handles_labels()
    if fault_rows:
        handles.append(Line2D([], [], color=COLORS["fault"], linestyle="--"))
        names.append("fault")
    if handles:
        ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8,
                  frameon=False)
        fit_legend(fig, len(handles))
    if not ops:
        ax.text(0.5, 0.5, "empty History", transform=ax.transAxes, ha="center")
    return finish(fig, save)


# --- offset strips ---------------------------------------------------------------------


def offset_strips(
    gaps: Any,
    summary: Any = None,
    *,
    aborted: Any = None,
    window: tuple[int, int] | None = None,
    title: str | None = None,
    save: str | Path | None = None,
) -> Figure:
    """One strip per partition: which offsets hold records, markers, aborted records.

    ``gaps`` is :meth:`Inspector.offset_gaps` (pandas or Spark): runs of ``marker``,
    ``aborted`` and ``pending`` offsets. ``summary`` (:meth:`Inspector.partition_summary`)
    gives each partition's extent [log start, high watermark); without it the strip
    ends at the last gap. ``aborted`` (:meth:`Inspector.aborted`, rows with partition and
    offset) overlays aborted records on a read_uncommitted view, where they are not gaps.
    Every offset not in a gap is a record the reader returned. ``window=(first, last)``
    zooms in: on a long log, one-offset markers are thinner than a pixel.
    """
    runs = _rows(gaps)
    for run in runs:
        if _field(run, "kind") not in ("marker", "aborted", "pending"):
            raise bad_value("gaps", run, "rows of Inspector.offset_gaps() "
                            "(partition, first_offset, last_offset, size, kind)")
    extent: dict[int, tuple[int, int]] = {}
    for row in _rows(summary):
        extent[int(_field(row, "partition"))] = (int(_field(row, "log_start_offset")),
                                                 int(_field(row, "high_watermark")))
    for run in runs:
        p = int(_field(run, "partition"))
        lo, hi = extent.get(p, (0, 0))
        extent[p] = (min(lo, int(_field(run, "first_offset"))),
                     max(hi, int(_field(run, "last_offset")) + 1))
    extra = [(int(_field(r, "partition")), int(_field(r, "offset"))) for r in _rows(aborted)]
    for p, o in extra:
        lo, hi = extent.get(p, (0, 0))
        extent[p] = (min(lo, o), max(hi, o + 1))
    if window is not None:
        if len(window) != 2 or window[0] > window[1]:
            raise bad_value("window", window, "(first_offset, last_offset) with first <= last")
        extent = {p: (max(lo, window[0]), min(hi, window[1] + 1)) for p, (lo, hi) in
                  extent.items()}

    partitions = sorted(extent)
    fig = LabFigure(figsize=(11, 1.3 + 0.6 * max(len(partitions), 1)), layout="constrained")
    ax = fig.add_subplot()
    span = max((hi for _, hi in extent.values()), default=1) - min(
        (lo for lo, _ in extent.values()), default=0)
    cells = span <= 120  # small logs: draw cell borders and every offset, like a diagram
    edge = {"edgecolor": "white", "linewidth": 1.0} if cells else {}
    counts = {"record": 0, "marker": 0, "aborted": 0, "pending": 0}

    def draw(bars: list[tuple[int, int]], y: int, color: str, **style: Any) -> None:
        if cells:  # one box per offset, so a student can count records and markers
            bars = [(a + i, 1) for a, w in bars for i in range(w)]
        ax.broken_barh(bars, (y - 0.35, 0.7), facecolors=color, **edge, **style)

    for y, p in enumerate(partitions):
        lo, hi = extent[p]
        if hi <= lo:
            ax.text(lo, y, "  (empty)", va="center", fontsize=8, color="gray")
            continue
        holes = sorted((int(_field(r, "first_offset")), int(_field(r, "last_offset")) + 1,
                        str(_field(r, "kind"))) for r in runs if int(_field(r, "partition")) == p)
        # Records are the complement of the gaps within the extent.
        cursor, records = lo, []
        for first, end, _ in holes:
            if first > cursor:
                records.append((cursor, min(first, hi) - cursor))
            cursor = max(cursor, end)
        if cursor < hi:
            records.append((cursor, hi - cursor))
        records = [(a, w) for a, w in records if w > 0]
        counts["record"] += sum(w for _, w in records)
        draw(records, y, COLORS["record"])
        for kind in ("aborted", "pending", "marker"):
            bars = [(max(a, lo), min(b, hi) - max(a, lo)) for a, b, k in holes
                    if k == kind and min(b, hi) > max(a, lo)]
            counts[kind] += sum(w for _, w in bars)
            draw(bars, y, COLORS[kind])
        over = [(o, 1) for q, o in extra if q == p and lo <= o < hi]
        if over:  # aborted records a read_uncommitted reader did return: hatched
            counts["aborted"] += len(over)
            counts["record"] -= len(over)
            draw(over, y, COLORS["aborted"], hatch="//")

    ax.set_yticks(range(len(partitions)), [f"partition {p}" for p in partitions])
    ax.set_ylim(-0.7, max(len(partitions), 1) - 0.3)
    ax.invert_yaxis()
    ax.set_xlabel("offset")
    if cells and partitions:
        lo = min(lo for lo, _ in extent.values())
        hi = max(hi for _, hi in extent.values())
        step = 1 if span <= 40 else 5
        ax.set_xticks([o + 0.5 for o in range(lo, hi, step)], list(range(lo, hi, step)))
        ax.set_xlim(lo, hi)
    legend = {
        "record": "record returned by this reader",
        "aborted": "aborted record (hidden from read_committed)",
        "marker": "transaction marker (commit/abort)",
        "pending": "pending: past the last stable offset",
    }
    shown = [k for k in legend if counts[k] or k == "record"]
    ax.legend([Patch(facecolor=COLORS[k], hatch="//" if k == "aborted" and extra else None)
               for k in shown],
              [f"{legend[k]} ({counts[k]})" for k in shown],
              loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    fit_legend(fig, len(shown))
    ax.set_title(title or "Offsets per partition: records, markers, aborted records")
    if not partitions:
        ax.text(0.5, 0.5, "no offsets", transform=ax.transAxes, ha="center")
    return finish(fig, save)


def heatmap(runs: Iterable[M.RunResult], title: str | None = None, save: Any = None):
    """The anomaly matrix (chapter 09): k/n runs per anomaly for each (mode or Spark
    row, fault) cell of :func:`deliverylab.matrix.counts`, as a figure.

    Columns are the Checker's anomalies under Jepsen's names
    (:data:`~deliverylab.matrix.JEPSEN`); a cell's shade is k/n, its text ``k/n``. A
    black frame marks an anomaly the row's promise does not allow (a broken guarantee,
    not a lesson). Then the :data:`~deliverylab.matrix.FACTS` (in blue: observations,
    not anomalies), and last how many runs matched the cell's claim (green when all did).
    """
    runs = list(runs)
    if not runs:
        raise bad_value("runs", runs, "one or more RunResults (run_matrix or load)")
    table_ = M.counts(runs)
    cells = list(table_)
    columns = [*ANOMALIES, *M.FACTS]
    names = [*(M.JEPSEN[a] for a in ANOMALIES), *M.FACTS.values(), "claim held"]
    shade = LinearSegmentedColormap.from_list("k_of_n", ["#ffffff", COLORS["duplicate"]])
    fact_shade = LinearSegmentedColormap.from_list("fact", ["#ffffff", COLORS["read"]])
    fig = LabFigure(figsize=(1.0 + 0.95 * len(names), 1.6 + 0.32 * len(cells)),
                    layout="constrained")
    ax = fig.add_subplot()
    for y, cell in enumerate(cells):
        c = table_[cell]
        n = c["n"]
        for x, a in enumerate(columns):
            k = c["k"][a]
            broken = a in c["broken"]
            face = (fact_shade if a in M.FACTS else shade)(k / n)
            ax.add_patch(_rect(x, y, face, "black" if broken else "#dddddd",
                               2.0 if broken else 0.5))
            ax.text(x, y, f"{k}/{n}", ha="center", va="center", fontsize=8,
                    color="#999999" if k == 0 else ("white" if k / n > 0.6 else "black"))
        held = c["held"]
        x = len(columns)
        ax.add_patch(_rect(x, y, COLORS["ok"] if held == n else COLORS["fail"], "white", 0.5))
        ax.text(x, y, f"{held}/{n}", ha="center", va="center", fontsize=8, color="white")
    ax.set_xlim(-0.5, len(names) - 0.5)
    ax.set_ylim(len(cells) - 0.5, -0.5)
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(cells)), [f"{m}  {f}" for m, f in cells], fontsize=8)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.set_title(title or "The anomaly matrix: in k of n runs each anomaly appeared; "
                 "framed = not allowed by the row's promise", fontsize=9)
    return finish(fig, save)


def _rect(x: int, y: int, face: Any, edge: str, width: float):
    from matplotlib.patches import Rectangle

    return Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=face, edgecolor=edge,
                     linewidth=width)


def _rect(x: int, y: int, face: Any, edge: str, width: float) -> Rectangle:
    return Rectangle((x - 0.5, y - 0.5), 1, 1, facecolor=face, edgecolor=edge,
                     linewidth=width)
