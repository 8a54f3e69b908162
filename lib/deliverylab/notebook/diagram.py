"""The drawing kit of the chapters' explanatory figures (:mod:`.figures`): sequence
diagrams and rows of log cells, drawn with matplotlib from code, never bitmaps.

Why a kit: every idea of the course (a lost ack, a crash window, a stale request) is a
message sequence or a log; drawn the same way, with the palette of :mod:`.plots`, a
student reads the tenth figure as easily as the first. Every figure is ``WIDTH`` inches
wide and no text is smaller than ``FONT`` points, so it stays legible when the book or a
phone shows it 420 px wide (``tests/unit/notebook/test_figures.py`` checks both).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from ..errors import bad_value
from .plots import COLORS, LabFigure

WIDTH = 6.4  # inches: 640 px at the notebook's 100 dpi, readable scaled to 420 px
FONT = 9  # points: the smallest text of any figure
ROW = 0.36  # inches per step of a sequence diagram
WHITE_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.9, "pad": 1.5}
#: the kinds of a message arrow: color and line style
ARROWS = {
    "msg": (COLORS["read"], "-"),
    "ok": (COLORS["ok"], "-"),
    "lost": (COLORS["fail"], "--"),
    "retry": (COLORS["info"], "-"),
    "stale": (COLORS["duplicate"], "-"),
    "refused": (COLORS["fail"], "-"),
}


def canvas(height: float, top: float, bottom: float, title: str) -> tuple[Figure, Axes]:
    """A figure ``WIDTH`` x ``height`` inches whose one axes fills it, x in [0, 1] and y
    from ``bottom`` to ``top`` in the caller's units, no ticks, the title on top."""
    fig = LabFigure(figsize=(WIDTH, height))
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, 1)
    ax.set_ylim(bottom, top)
    ax.set_axis_off()
    ax.text(0.5, top, title, ha="center", va="top", fontsize=FONT + 1, fontweight="bold")
    return fig, ax


def sequence(title: str, actors: Sequence[str], steps: Sequence[tuple[Any, ...]],
             footer: Sequence[str] = ()) -> Figure:
    """A message sequence diagram: one lifeline per actor, time going down, one step a row.

    Steps (tuples):

    * ``("msg", a, b, text[, kind])``: an arrow from actor ``a`` to ``b``; ``kind`` is a
      key of :data:`ARROWS` (``lost`` ends in a cross: the message never arrives);
    * ``("note", a, text[, color])``: what actor ``a`` does, boxed on its lifeline;
    * ``("crash", a, text)``: actor ``a`` dies here (a cross on its lifeline);
    * ``("band", text[, color])``: a shaded row across the diagram: the window the
      chapter is about (a crash here redoes or loses something);
    * ``("gap", text)``: a pause in time, a dotted row with a caption.

    ``footer`` lines are printed under the diagram: the consequence, in words.
    """
    if not actors:
        raise bad_value("actors", actors, "one or more names")
    where = {a: (i + 0.5) / len(actors) for i, a in enumerate(actors)}
    rows = len(steps)
    top, bottom = 0.7, -(rows + 0.85 + 0.55 * len(footer))
    fig, ax = canvas(ROW * (top - bottom), top, bottom, title)
    for a, x in where.items():
        ax.text(x, -0.35, a, ha="center", va="center", fontsize=FONT, fontweight="bold",
                bbox={"facecolor": "#eeeeee", "edgecolor": "#999999", "pad": 3})
        ax.plot([x, x], [-0.7, -(rows + 0.6)], color="#aaaaaa", linewidth=1, zorder=0)

    def actor(name: str) -> float:
        if name not in where:
            raise bad_value("actor", name, f"one of {list(where)}")
        return where[name]

    for i, step in enumerate(steps):
        y = -(i + 1.1)
        kind = step[0]
        if kind == "msg":
            a, b, text = actor(step[1]), actor(step[2]), step[3]
            color, style = ARROWS[step[4] if len(step) > 4 else "msg"]
            lost = len(step) > 4 and step[4] == "lost"
            end = b if not lost else b - 0.03 * (1 if b > a else -1)
            ax.add_patch(FancyArrowPatch((a, y - 0.12), (end, y - 0.12), arrowstyle="-|>",
                                         mutation_scale=12, color=color, linestyle=style,
                                         linewidth=1.4))
            if lost:
                ax.plot([end], [y - 0.12], marker="x", color=color, markersize=10,
                        markeredgewidth=2.5)
            ax.text((a + b) / 2, y + 0.02, text, ha="center", va="bottom", fontsize=FONT,
                    color="black", bbox=WHITE_BOX)
        elif kind in ("note", "crash"):
            x = actor(step[1])
            color = COLORS["fail"] if kind == "crash" else (
                step[3] if len(step) > 3 else COLORS["record"])
            if kind == "crash":
                ax.plot([x], [y - 0.05], marker="X", color=color, markersize=13)
            else:
                ax.add_patch(Rectangle((x - 0.012, y - 0.3), 0.024, 0.5, facecolor=color,
                                       edgecolor="none"))
            right = x < 0.6
            ax.text(x + (0.03 if right else -0.03), y - 0.05, step[2],
                    ha="left" if right else "right", va="center", fontsize=FONT,
                    color=color if kind == "crash" else "black", bbox=WHITE_BOX)
        elif kind == "band":
            color = step[2] if len(step) > 2 else COLORS["fault"]
            ax.add_patch(Rectangle((0.01, y - 0.42), 0.98, 0.74, facecolor=color, alpha=0.18,
                                   edgecolor=color, linewidth=1, zorder=0))
            ax.text(0.5, y - 0.05, step[1], ha="center", va="center", fontsize=FONT,
                    color="black", style="italic")
        elif kind == "gap":
            ax.plot([0.02, 0.98], [y - 0.05, y - 0.05], color="#888888", linestyle=":",
                    linewidth=1)
            ax.text(0.5, y - 0.05, step[1], ha="center", va="center", fontsize=FONT,
                    color="#555555", bbox=WHITE_BOX)
        else:
            raise bad_value("step", step, "a tuple starting with msg, note, crash, band "
                            "or gap")
    for j, line in enumerate(footer):
        ax.text(0.02, -(rows + 1.0 + 0.55 * j), line, ha="left", va="center",
                fontsize=FONT)
    return fig


def cells(ax: Axes, x0: float, y: float, width: float, labels: Sequence[str],
          colors: Sequence[str], *, hatch: Sequence[bool] = (), height: float = 0.6,
          numbers: bool = True, first: int = 0) -> list[float]:
    """A row of log cells from ``x0``, each ``width`` wide, labelled inside and (with
    ``numbers``) numbered as offsets above, from ``first`` (a run's real offsets).
    Returns each cell's left edge, so a caller can draw a boundary (a high watermark, a
    last stable offset) between two cells."""
    lefts = []
    for i, (label, color) in enumerate(zip(labels, colors, strict=True)):
        x = x0 + i * width
        lefts.append(x)
        ax.add_patch(Rectangle((x, y - height / 2), width, height, facecolor=color,
                               edgecolor="white", linewidth=1.5,
                               hatch="//" if i < len(hatch) and hatch[i] else None))
        dark = color in (COLORS["marker"], COLORS["read"], COLORS["fail"], COLORS["ok"])
        ax.text(x + width / 2, y, label, ha="center", va="center", fontsize=FONT,
                color="white" if dark else "black")
        if numbers:
            ax.text(x + width / 2, y + height / 2 + 0.05, str(first + i), ha="center",
                    va="bottom", fontsize=FONT, color="#555555")
    lefts.append(x0 + len(labels) * width)
    return lefts


def boundary(ax: Axes, x: float, y_low: float, y_high: float, text: str, color: str,
             *, below: bool = True) -> None:
    """A vertical line at ``x`` from ``y_low`` to ``y_high`` (a high watermark, a last
    stable offset), named under (or above) it."""
    ax.plot([x, x], [y_low, y_high], color=color, linewidth=2.2)
    ax.text(x, y_low - 0.08 if below else y_high + 0.08, text, ha="center",
            va="top" if below else "bottom", fontsize=FONT, color=color, fontweight="bold",
            bbox=WHITE_BOX)


def key(ax: Axes, x: float, y: float, entries: Sequence[tuple[str, str]],
        *, step: float = 0.36, hatched: Sequence[str] = ()) -> None:
    """A legend of colored squares, one entry a line, from (``x``, ``y``) down."""
    for i, (color, text) in enumerate(entries):
        ax.add_patch(Rectangle((x, y - i * step - 0.11), 0.022, 0.22, facecolor=color,
                               edgecolor="#666666", linewidth=0.5,
                               hatch="//" if text in hatched else None))
        ax.text(x + 0.035, y - i * step, text, ha="left", va="center", fontsize=FONT)
