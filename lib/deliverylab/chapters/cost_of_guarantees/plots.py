"""Chapter 08's figures: throughput and latency per variant beside their ratio to
at-least-once, and the consume-transform-produce rate per mode."""

from __future__ import annotations

from typing import Any, Protocol

from ...notebook.plots import COLORS, LabFigure, finish
from .stats import BASELINE


class Costs(Protocol):
    """What the figures read of ``measure.Costs`` (which imports them): the
    medians as rows."""

    @property
    def rows(self) -> list[dict[str, Any]]: ...


def plot(costs: Costs, size: int | None = None, save: str | None = None) -> Any:
    """Throughput and latency per variant (bars, ratio to at-least-once on top), and
    end-to-end p95 against the commit interval for the transactional variants."""
    rows = [r for r in costs.rows if r["kind"] == "produce"]
    size = size if size is not None else rows[0]["size"]
    rows = [r for r in rows if r["size"] == size]
    names = [r["variant"] for r in rows]
    fig = LabFigure(figsize=(13, 4))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    xs = range(len(rows))
    bars = ax1.bar(xs, [r["records_s"] for r in rows], color=[
        COLORS["ok"] if r["variant"] == BASELINE else COLORS["record"] for r in rows])
    for bar, r in zip(bars, rows, strict=True):
        ratio = r.get("records_s_ratio")
        if ratio is not None:
            ax1.annotate(f"{ratio:.2f}x", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                         ha="center", va="bottom", fontsize=8)
    ax1.set_title(f"throughput, {size} B records")
    ax1.set_ylabel("records/s")
    width = 0.38
    ax2.bar([x - width / 2 for x in xs], [r["ack_p95_ms"] for r in rows], width,
            label="ack p95", color=COLORS["info"])
    ax2.bar([x + width / 2 for x in xs], [r["e2e_p95_ms"] for r in rows], width,
            label="end-to-end p95", color=COLORS["read"])
    ax2.set_yscale("log")
    ax2.set_title("latency at a steady rate (p95)")
    ax2.set_ylabel("ms (log scale)")
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.set_xticks(list(xs))
        ax.set_xticklabels(names, rotation=35, ha="right", fontsize=8)
    txns = sorted((r for r in rows if r["variant"].startswith("txn ")),
                  key=lambda r: float(r["variant"][4:-2]))
    if txns:
        ms = [float(r["variant"][4:-2]) for r in txns]
        for q, style in ((50, ":"), (95, "-"), (99, "--")):
            ax3.plot(ms, [r[f"e2e_p{q}_ms"] for r in txns], style, marker="o",
                     color=COLORS["read"], label=f"end-to-end p{q}")
        ax3.plot(ms, ms, color="grey", lw=0.8, label="the commit interval itself")
        ax3.set_xscale("log")
        ax3.set_yscale("log")
        ax3.set_xlabel("commit interval, ms")
        ax3.set_ylabel("ms")
        ax3.set_title("transactions: latency follows the commit interval")
        ax3.legend(fontsize=8)
    fig.tight_layout()
    return finish(fig, save)


def plot_ctp(costs: Costs, save: str | None = None) -> Any:
    """Consume-transform-produce throughput per mode and record size."""
    rows = [r for r in costs.rows if r["kind"] == "ctp"]
    fig = LabFigure(figsize=(7, 3.5))
    ax = fig.subplots()
    sizes = sorted({r["size"] for r in rows})
    names = list(dict.fromkeys(r["variant"] for r in rows))
    width = 0.8 / max(1, len(sizes))
    for i, s in enumerate(sizes):
        by = {r["variant"]: r["records_s"] for r in rows if r["size"] == s}
        ax.bar([x + i * width for x in range(len(names))], [by.get(n, 0) for n in names],
               width, label=f"{s} B", color=list(COLORS.values())[i % len(COLORS)])
    ax.set_xticks([x + width * (len(sizes) - 1) / 2 for x in range(len(names))])
    ax.set_xticklabels(names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("values/s")
    ax.set_title("consume-transform-produce (the lab's Python pipeline)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return finish(fig, save)
