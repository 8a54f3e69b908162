"""Figures stay legible: a tall legend beside few lanes must not collapse the layout
(matplotlib then warns into the student's cell and squashes the plot)."""

from __future__ import annotations

import io
import warnings

from tests.unit.notebook.conftest import cell_warnings

from deliverylab.history import History, Op
from deliverylab.notebook import plots


def _busy_history() -> History:
    """One process, every kind of mark the timeline has a legend entry for."""
    h = History()
    for i, outcome in enumerate(("ok", "info", "fail", "ok")):
        h.append(Op("producer-0", "send", outcome, 0.1 * i, (f"producer-0:{i}",),
                    "t", 0, i))
    h.append(Op("producer-0", "poll", "ok", 0.5, ("producer-0:0",), "t", 0, 0))
    h.append(Op("producer-0", "commit_txn", "ok", 0.6, txn="producer-0/txn-1"))
    h.append(Op("producer-0", "abort_txn", "ok", 0.7, txn="producer-0/txn-2"))
    h.append(Op("nemesis", "fault", "ok", 0.2, fault="lose_ack", detail="lose_ack"))
    return h


def test_a_one_lane_timeline_with_a_tall_legend_renders_without_layout_warnings():
    fig = plots.timeline(_busy_history(), duplicates=["producer-0:0"],
                         lost=["producer-0:2"], title="one lane, nine legend entries")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = fig._repr_png_()
    assert png.startswith(b"\x89PNG")
    assert cell_warnings(caught) == []
    assert fig.get_figheight() >= 1.2 + 0.2 * 9  # nine legend entries


def test_save_legibly_grows_a_collapsing_figure_until_its_layout_applies():
    fig = plots.LabFigure(figsize=(4, 0.6), layout="constrained")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_title("a title\nover two lines")
    ax.set_xlabel("x")
    with warnings.catch_warnings(record=True) as raw:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png")
    assert any(plots._COLLAPSED in str(w.message) for w in raw), "the case must collapse"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plots.save_legibly(fig, io.BytesIO(), format="png")
    assert not any(plots._COLLAPSED in str(w.message) for w in caught)
    assert fig.get_figheight() > 0.6


def test_a_fault_with_a_sentence_for_detail_neither_collapses_the_plot_nor_hides_its_name():
    """Chapter 02's stream: one lane, a lost ack whose detail is a sentence (it printed
    "constrained_layout not applied" into the cell when drawn rotated)."""
    h = History()
    for i in range(60):
        h.append(Op("producer-0", "send", "ok", 0.03 * i, (f"producer-0:{i}",), "t", 0, i))
    h.append(Op("nemesis", "fault", "ok", 1.0, fault="lose_ack",
                detail="will drop the next 1 Produce response(s) of broker 1"))
    fig = plots.timeline(h, duplicates=["producer-0:30"], title="Your stream")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fig.savefig(io.BytesIO(), format="png", dpi=100, bbox_inches="tight")
    assert cell_warnings(caught) == []
    [ax] = fig.axes
    assert [t.get_text() for t in ax.texts] == ["Lose an ack"]  # the button's label


def test_a_fault_near_the_right_edge_is_labelled_on_the_lines_left():
    """Else its label runs past the axes into the legend (chapter 09's held request)."""
    h = History()
    h.append(Op("nemesis", "fault", "ok", 0.1, detail="Hold a request"))
    h.append(Op("idempotent", "send", "ok", 3.6, ("idempotent:1",), "t", 0, 0))
    h.append(Op("nemesis", "fault", "ok", 3.6, detail="Release held request"))
    [ax] = plots.timeline(h).axes
    assert [(t.get_text(), t.get_horizontalalignment()) for t in ax.texts] == [
        ("Hold a request", "left"), ("Release held request", "right")]


def test_two_faults_close_together_get_their_labels_on_two_lines():
    """Chapter 1's scenario: the pause and the kill 0.3 s apart on a 14 s axis printed
    "Pa|solate and kill leader", one label over the other."""
    h = History()
    for i in range(20):
        h.append(Op("producer-0", "send", "ok", 0.7 * i, (f"producer-0:{i}",), "t", 0, i))
    h.append(Op("nemesis", "fault", "ok", 0.8, detail="Pause followers"))
    h.append(Op("nemesis", "fault", "ok", 1.1, detail="Isolate and kill leader"))
    h.append(Op("nemesis", "fault", "ok", 7.0, detail="Heal"))
    [ax] = plots.timeline(h).axes
    offsets = {t.get_text(): t.xyann[1] for t in ax.texts}
    assert offsets["Pause followers"] != offsets["Isolate and kill leader"]
    assert offsets["Heal"] == offsets["Pause followers"]  # far apart: the first line
