"""What every explanatory figure must pass (``test_figures``, ``test_figures_run``):
rendered as JupyterLab stores it without a warning, 500-800 px wide, no text under
7 px once shown 420 px wide, no text leaving the canvas or covering another."""

from __future__ import annotations

import io
import warnings
from collections.abc import Callable
from itertools import combinations

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image

NARROW = 420  # px: a phone, or the book beside its table of contents
MIN_PX = 7.0  # the smallest text's height in px once the figure is shown NARROW wide


def cell_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The warnings of ``caught`` that would reach a notebook cell: not ResourceWarning.
    A kernel's default filters ignore it, and the garbage collector raises it for
    whatever an earlier test of the same process left unclosed whenever a collection
    happens to run inside the block (a cold make test failed so, on "unclosed file
    <_io.TextIOWrapper name=34>", while a figure rendered)."""
    return [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)]


def figure_png(fig: Figure) -> bytes:
    """What JupyterLab and papermill store: ``_repr_png_``, no warning into the cell."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        png = fig._repr_png_()
    assert cell_warnings(caught) == []
    return png


def figure_texts(fig: Figure) -> list[Text]:
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def check_legible(name: str, fig: Figure) -> None:
    width, height = Image.open(io.BytesIO(figure_png(fig))).size
    assert 500 <= width <= 800, f"{name}: {width} px wide"
    assert height <= 1.2 * width, f"{name}: {height} px tall for {width} wide"
    scale = NARROW / width
    for text in figure_texts(fig):
        px = text.get_fontsize() * 100 / 72 * scale
        assert px >= MIN_PX, f"{name}: {text.get_text()!r} is {px:.1f} px at {NARROW} px"


def check_no_overlap(name: str, fig: Figure) -> None:
    renderer = FigureCanvasAgg(fig).get_renderer()
    frame = fig.bbox
    boxes = []
    for text in figure_texts(fig):
        box = text.get_window_extent(renderer)
        assert (box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1
                and box.y0 >= frame.y0 - 1 and box.y1 <= frame.y1 + 1), (
            f"{name}: {text.get_text()!r} leaves the canvas ({box} outside {frame})")
        boxes.append((text.get_text(), box.shrunk(0.97, 0.9)))
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{name}: {a!r} covers {b!r}"


@pytest.fixture
def figure_checks() -> tuple[Callable[[str, Figure], None], Callable[[str, Figure], None],
                             Callable[[Figure], list[Text]], Callable[[Figure], bytes]]:
    """(check_legible, check_no_overlap, figure_texts, figure_png)."""
    return check_legible, check_no_overlap, figure_texts, figure_png
