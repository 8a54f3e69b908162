"""The chapters' explanatory figures render, stay legible at 420 px, and every call a
notebook makes is one rendered here (so the book cannot show a figure no test drew)."""

from __future__ import annotations

import ast
from pathlib import Path

import nbformat
import pytest
from matplotlib.figure import Figure

import deliverylab as dl
from deliverylab.errors import BadValue
from deliverylab.notebook import diagram, figures
from deliverylab.notebook.chapter import chapter_names, number

LABS = Path(__file__).resolve().parents[3] / "labs"
CHAPTERS = [LABS / f"{c}.ipynb" for c in chapter_names(LABS)]
NAMES = [name for names in figures.BY_CHAPTER.values() for name in names]


@pytest.mark.parametrize("name", NAMES)
def test_each_figure_renders_legibly_at_420_px(name: str, figure_checks) -> None:
    legible, _, _, _ = figure_checks
    legible(name, getattr(figures, name)())


@pytest.mark.parametrize("name", NAMES)
def test_no_text_leaves_the_canvas_or_covers_another(name: str, figure_checks) -> None:
    _, no_overlap, _, _ = figure_checks
    no_overlap(name, getattr(figures, name)())


def test_save_writes_the_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "cluster.png"
    figures.cluster(save=target)
    assert target.read_bytes().startswith(b"\x89PNG")


def test_every_chapter_is_listed_and_every_listed_figure_exists() -> None:
    assert sorted(figures.BY_CHAPTER) == [number(p.stem) for p in CHAPTERS]
    for name in NAMES:
        assert callable(getattr(dl.figures, name)), name
    assert sorted(figures.__all__) == sorted(["BY_CHAPTER", "FILLED", *NAMES])
    assert set(figures.FILLED) <= set(NAMES)


def _calls(notebook: Path) -> list[tuple[int, str, str]]:
    """Every ``dl.figures.<name>(...)`` call of the notebook's code cells: (cell index,
    figure name, the call's exact source), found by parsing each cell."""
    nb = nbformat.read(notebook, as_version=4)
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        tree = ast.parse("\n".join(line for line in cell.source.splitlines()
                                    if not line.lstrip().startswith(("%", "!"))))
        for node in ast.walk(tree):
            func = getattr(node, "func", None)
            if (isinstance(node, ast.Call) and isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Attribute) and func.value.attr == "figures"
                    and isinstance(func.value.value, ast.Name) and func.value.value.id == "dl"):
                out.append((i, func.attr, ast.unparse(node)))
    return out


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: number(p.stem))
def test_each_chapter_draws_its_figures_with_calls_this_test_runs(notebook: Path,
                                                                  figure_checks) -> None:
    """The exact call strings of the notebook that take no run, executed: a notebook
    cannot call a figure (or pass an argument) that was not rendered here. Each chapter
    draws at least one, and every figure listed for it; a call with arguments is one of
    the FILLED figures, which test_figures_run draws from hand-written runs."""
    calls = _calls(notebook)
    assert calls, f"{notebook.name} draws no dl.figures figure"
    for _, name, call in calls:
        if not call.endswith("()"):
            assert name in figures.FILLED, f"{notebook.name}: {call} passes a run to a " \
                f"figure that takes none (filled: {figures.FILLED})"
            continue
        fig = eval(call, {"dl": dl})  # noqa: S307 - the notebook's own line, from the repo
        assert isinstance(fig, Figure), call
        figure_checks[3](fig)
    drawn = {name for _, name, _ in calls}
    assert drawn == set(figures.BY_CHAPTER[number(notebook.stem)]), notebook.name


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: number(p.stem))
def test_a_run_fills_a_figure_only_after_the_idea_and_every_reveal(notebook: Path) -> None:
    """The picture of the idea comes first (no argument); the same figure with the run's
    values only after it, and after every prediction of the chapter is revealed: a
    figure must not give a prediction away."""
    nb = nbformat.read(notebook, as_version=4)
    reveals = [i for i, c in enumerate(nb.cells)
               if c.cell_type == "code" and "dl.reveal(" in c.source]
    calls = _calls(notebook)
    for cell, name, call in calls:
        if call.endswith("()"):
            continue
        idea = [i for i, n, c in calls if n == name and c.endswith("()")]
        assert idea and min(idea) < cell, f"{notebook.name}: {call} before the idea's figure"
        assert all(r < cell for r in reveals), (
            f"{notebook.name}: {call} (cell {cell}) before a reveal (cells {reveals})")


def test_a_sequence_step_naming_an_unknown_actor_says_which_and_what_is_accepted() -> None:
    with pytest.raises(BadValue, match=r"actor='broker'.*\['producer'\]"):
        diagram.sequence("t", ["producer"], [("msg", "producer", "broker", "hello")])
    with pytest.raises(BadValue, match="step="):
        diagram.sequence("t", ["producer"], [("wave", "producer")])
    with pytest.raises(BadValue, match="actors="):
        diagram.sequence("t", [], [])
