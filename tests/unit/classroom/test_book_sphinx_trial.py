"""bench/book_sphinx.py, issue 39's trial of Sphinx + MyST-NB as the book's builder:
the Sphinx source it writes (no Sphinx needed here: it is a program of its own venv)
and its reading of a built site for what would fetch from the network."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


trial = _load("book_sphinx_bench", ROOT / "bench" / "book_sphinx.py")
#: The book's own hand-written chapters and guides (one fixture for both builders).
book_tests = _load("book_tests_for_trial", Path(__file__).parent / "course" / "test_book.py")


@pytest.fixture
def source(tmp_path: Path) -> Path:
    course = book_tests.make_course(tmp_path / "course")
    docs = book_tests.make_docs(tmp_path / "docs")
    src = tmp_path / "src"
    assert trial.write_source(course, src, ROOT / "labs", docs) == 2
    return src


def test_the_source_is_the_books_chapters_not_executed_again(source: Path):
    conf = (source / "conf.py").read_text()
    assert 'nb_execution_mode = "off"' in conf and "sphinx_book_theme" in conf
    nb = json.loads((source / "02_at_least_once.ipynb").read_text())
    text = json.dumps(nb)
    # book.prepare's work: the solution, the prediction and the run's paths are out,
    # the panel is its recorded stand-in as an HTML output, no widget state is left.
    assert "SECRET-SOLUTION-OUTPUT" not in text and "PARAMETER-PREDICTION" not in text
    assert "/home/ci/x/02.json" not in text and "widgets" not in nb["metadata"]
    assert "widget-view" not in text
    assert "Lose ack: armed the proxy of broker 1" in text
    # The banner after the title, the claim and its checks at the end.
    assert "dl-book-banner dl-book-run" in "".join(nb["cells"][1]["source"])
    assert "nothing acked is lost" in "".join(nb["cells"][-1]["source"])
    # A plot's alternative text, where MyST-NB reads it.
    alts = [c["metadata"]["mystnb"]["image"]["alt"] for c in nb["cells"]
            if "mystnb" in c["metadata"]]
    assert alts and all(a.startswith("Plot") for a in alts)


def test_the_guides_and_the_contents_page_are_in_the_source(source: Path):
    assert (source / "instructors.md").is_file() and (source / "img" / "dot.png").is_file()
    index = (source / "index.md").read_text()
    assert "[Chapter 2 — At least once](02_at_least_once.ipynb)" in index
    assert "00_tour\n02_at_least_once\n```" in index
    assert "instructors\nmeasurements\n```" in index
    assert (source / "_static" / "book.css").is_file()


def test_a_script_from_a_cdn_is_a_load_a_link_or_a_comment_is_not(tmp_path: Path):
    (tmp_path / "_static").mkdir()
    (tmp_path / "page.html").write_text(
        "<script src='https://cdn.example.org/x.js'></script>"
        "<a href='https://kafka.apache.org/'>Kafka</a>")
    (tmp_path / "_static" / "t.css").write_text(
        "/* https://fontawesome.com/license */ @font-face { src: url(//f.example/a.woff2) }")
    found = trial.urls(tmp_path)
    assert len(found["loads"]) == 2, found
    assert any("cdn.example.org" in x for x in found["loads"])
    assert any("f.example" in x for x in found["loads"])
    assert found["mentions"][".css https://fontawesome.com"] == 1
    assert ".html https://kafka.apache.org" in found["mentions"]
