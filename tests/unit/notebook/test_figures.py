"""The chapters' explanatory figures render, stay legible at 420 px, and every call a
notebook makes is one rendered here (so the book cannot show a figure no test drew)."""

from __future__ import annotations

import ast
import io
import re
import warnings
from itertools import combinations
from pathlib import Path

import nbformat
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

import deliverylab as dl
from deliverylab.errors import BadValue
from deliverylab.notebook import diagram, figures
from deliverylab.notebook.chapter import chapter_names, number

LABS = Path(__file__).resolve().parents[3] / "labs"
CHAPTERS = [LABS / f"{c}.ipynb" for c in chapter_names(LABS)]
NAMES = [name for names in figures.BY_CHAPTER.values() for name in names]
CALL = re.compile(r"dl\.figures\.\w+\(.*?\)")
NARROW = 420  # px: a phone, or the book beside its table of contents
MIN_PX = 7.0  # the smallest text's height in px once the figure is shown NARROW wide


def _png(fig: Figure) -> bytes:
    """What JupyterLab and papermill store: ``_repr_png_``, no warning into the cell."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = fig._repr_png_()
    assert [str(w.message) for w in caught] == []
    return png


def _texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


@pytest.mark.parametrize("name", NAMES)
def test_each_figure_renders_legibly_at_420_px(name: str) -> None:
    fig = getattr(figures, name)()
    png = _png(fig)
    width, height = Image.open(io.BytesIO(png)).size
    assert 500 <= width <= 800, f"{name}: {width} px wide"
    assert height <= 1.2 * width, f"{name}: {height} px tall for {width} wide"
    scale = NARROW / width
    for text in _texts(fig):
        px = text.get_fontsize() * 100 / 72 * scale
        assert px >= MIN_PX, f"{name}: {text.get_text()!r} is {px:.1f} px at {NARROW} px"


@pytest.mark.parametrize("name", NAMES)
def test_no_text_leaves_the_canvas_or_covers_another(name: str) -> None:
    fig = getattr(figures, name)()
    renderer = FigureCanvasAgg(fig).get_renderer()
    frame = fig.bbox
    boxes = []
    for text in _texts(fig):
        box = text.get_window_extent(renderer)
        assert (box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1
                and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1), (
            f"{name}: {text.get_text()!r} leaves the canvas ({box} outside {frame})")
        boxes.append((text.get_text(), box.shrunk(0.97, 0.9)))
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{name}: {a!r} covers {b!r}"


def test_save_writes_the_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "cluster.png"
    figures.cluster(save=target)
    assert target.read_bytes().startswith(b"\x89PNG")


def test_every_chapter_is_listed_and_every_listed_figure_exists() -> None:
    assert sorted(figures.BY_CHAPTER) == [number(p.stem) for p in CHAPTERS]
    for name in NAMES:
        assert callable(getattr(dl.figures, name)), name
    assert sorted(figures.__all__) == sorted(["BY_CHAPTER", *NAMES])


def _calls(notebook: Path) -> list[str]:
    nb = nbformat.read(notebook, as_version=4)
    return [call for cell in nb.cells if cell.cell_type == "code"
            for call in CALL.findall(cell.source)]


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: number(p.stem))
def test_each_chapter_draws_its_figures_with_calls_this_test_runs(notebook: Path) -> None:
    """The exact call strings of the notebook, executed: a notebook cannot call a figure
    (or pass an argument) that was not rendered here. Each chapter draws at least one,
    and every figure listed for it."""
    calls = _calls(notebook)
    assert calls, f"{notebook.name} draws no dl.figures figure"
    for call in calls:
        ast.parse(call, mode="eval")  # a whole expression, nothing run-dependent after
        fig = eval(call, {"dl": dl})  # noqa: S307 - the notebook's own line, from the repo
        assert isinstance(fig, Figure), call
        _png(fig)
    drawn = {call.split(".")[2].split("(")[0] for call in calls}
    assert drawn == set(figures.BY_CHAPTER[number(notebook.stem)]), notebook.name


def test_a_figure_call_takes_nothing_from_the_run() -> None:
    """Run-independent: the only argument a notebook may pass is none at all."""
    for notebook in CHAPTERS:
        for call in _calls(notebook):
            assert call.endswith("()"), f"{notebook.name}: {call} passes arguments"


def test_a_sequence_step_naming_an_unknown_actor_says_which_and_what_is_accepted() -> None:
    with pytest.raises(BadValue, match=r"actor='broker'.*\['producer'\]"):
        diagram.sequence("t", ["producer"], [("msg", "producer", "broker", "hello")])
    with pytest.raises(BadValue, match="step="):
        diagram.sequence("t", ["producer"], [("wave", "producer")])
    with pytest.raises(BadValue, match="actors="):
        diagram.sequence("t", [], [])
