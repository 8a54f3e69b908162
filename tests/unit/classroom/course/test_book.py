"""The book from executed notebooks written by hand (stored as papermill stores them:
sources and texts as lists of lines): what it shows, what it leaves out,
and that nothing in it needs the network. (The browser test opens a real one.)"""

from __future__ import annotations

import base64
import html
import json
import re
from pathlib import Path

import pytest

from deliverylab.classroom.course import book
from deliverylab.errors import BadValue
from deliverylab.notebook.chapter import CHAPTER_CLAIMS, chapter_names

#: A 1x1 PNG: a plot's output as papermill stores it.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)).decode()
PANEL_ID = "a1b2c3"


def md(text: str, tags: tuple[str, ...] = ()) -> dict:
    return {"cell_type": "markdown", "id": f"m{abs(hash(text))}",
            "metadata": {"tags": list(tags)}, "source": text.splitlines(keepends=True)}


def code(text: str, outputs: list[dict] | None = None, tags: tuple[str, ...] = ()) -> dict:
    return {"cell_type": "code", "id": f"c{abs(hash(text))}", "metadata": {"tags": list(tags)},
            "source": text.splitlines(keepends=True), "execution_count": 1,
            "outputs": outputs or []}


def stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text.splitlines(keepends=True)}


def panel_output(model_id: str = PANEL_ID) -> dict:
    return {"output_type": "execute_result", "execution_count": 1, "metadata": {},
            "data": {book.WIDGET_VIEW: {"model_id": model_id, "version_major": 2,
                                        "version_minor": 0},
                     "text/plain": "FaultPanel: Lose ack\nbrokers: 1:up"}}


def write_chapter(folder: Path, name: str, title: str, results: dict | None = None,
                  panel_lines: list[dict] | None = None, cells: list[dict] | None = None):
    cells = cells or [
        md(f"# {title}\n\nWhat this chapter claims."),
        code('# Parameters\nfaults = ["lose_ack"]\nresults_path = "/home/ci/x/02.json"\n'
             'solution = "/home/ci/solutions/02_consume_loop/reference.py"\n'
             'predict_extra = 2\n', tags=("injected-parameters",)),
        code("panel", [panel_output()]),
        md("## 1. Lose an ack while values flow\n\nPress the button."),
        code("dl.plots.timeline(history)",
             [{"output_type": "display_data", "metadata": {},
               "data": {"image/png": PNG, "text/plain": "<Figure>"}}]),
        md("### Exercise\n\nCount the duplicates."),
        code("answer = None  # your Spark expression here"),
        code("# Solution\nanswer = inspector.duplicates(t).count()",
             [stream("SECRET-SOLUTION-OUTPUT\n")], tags=("solution",)),
        code("dl.self_check(answer, 3, 'duplicates')", [stream("Correct: duplicates is 3.\n")]),
        code("extra = dl.predict(chapter, 'extra', predict_extra)\nextra",
             [stream("committed (the run's parameter): PARAMETER-PREDICTION\n")]),
        code("dl.reveal(extra, 2)", [stream("what happened: REVEALED-OUTCOME\n")]),
        md("## What you saw\n\nlost ack: one duplicate"),
    ]
    nb = {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                      "language": "python"},
                       "widgets": {"application/vnd.jupyter.widget-state+json": {
                           "state": {}, "version_major": 2, "version_minor": 0}}}}
    (folder / f"{name}.ipynb").write_text(json.dumps(nb))
    if results is not None:
        (folder / f"{name}.json").write_text(json.dumps(results))
    if panel_lines is not None:
        (folder / f"{name}.panels.jsonl").write_text(
            "".join(json.dumps(e) + "\n" for e in panel_lines))


def text_of(page: str) -> str:
    """A page's visible text (code is split into highlighted spans in the HTML)."""
    page = re.sub(r"<(style|script)[^>]*>.*?</\1>", "", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())


def classes(page: str, name: str) -> int:
    """How many elements carry class ``name`` (nbconvert rewrites the quotes)."""
    return len(re.findall(rf"class=[\"']{name}[\"' ]", page))


def press(line: str, ok: bool = True) -> dict:
    return {"event": "press", "model_id": PANEL_ID, "title": "Chapter 2: lose an ack",
            "buttons": ["Lose ack", "Heal"], "absent": {}, "status": "brokers: 1:up",
            "status_html": "<span class='dl-broker'>broker 1: up</span>",
            "history": ["    1.20s producer-0 send info producer-0:7 t/0",
                        "    1.25s nemesis lose_ack ok"],
            "label": "Lose ack", "line": line, "ok": ok, "seconds": 0.4}


def make_course(src: Path) -> Path:
    src.mkdir()
    shown = {"event": "shown", "model_id": PANEL_ID, "title": "Chapter 2: lose an ack",
             "buttons": ["Lose ack", "Heal"], "absent": {}, "status": "brokers: 1:up",
             "status_html": "<span>broker 1: up</span>", "history": []}
    write_chapter(src, "02_at_least_once", "Chapter 2 — At least once",
                  {"chapter": "02_at_least_once", "claim": "nothing acked is lost",
                   "pass": True, "observed": {"duplicates": 2, "lost": 0},
                   "checks": [{"what": "no acked value lost", "pass": True}],
                   "predictions": [{"name": "02_extra", "predicted": 1,
                                    "actual": "SECRET-ACTUAL", "right": False}]},
                  [shown, press("[10:00:01] Lose ack: armed the proxy of broker 1"),
                   press("[10:00:03] Heal: FAILED -- LabError: no", ok=False)])
    write_chapter(src, "00_tour", "Chapter 0 — Tour", None,
                  [{**shown, "title": "Tour buttons"}])
    return src


@pytest.fixture
def course(tmp_path: Path) -> Path:
    return make_course(tmp_path / "course")


def make_docs(docs: Path) -> Path:
    """Two guides, the way docs/ holds them: the instructors' guide links to a section of
    the measurements and to the README; an image beside them."""
    (docs / "img").mkdir(parents=True)
    (docs / "img" / "dot.png").write_bytes(base64.b64decode(PNG))
    (docs / "measurements.md").write_text(
        "# Measurements\n\nEvery figure with its command.\n\n## The grader\n\n"
        "*Command*: `bench/grade.py`. 35 s for 02.\n")
    (docs / "instructors.md").write_text(
        "# The instructors' guide\n\nHow to run the course for a class.\n\n"
        "## Before the day\n\nRun `make doctor`; the times are in "
        "[measurements.md](measurements.md#the-grader), the commands in the "
        "[README](../README.md).\n\n| what | when |\n|---|---|\n| break | 10:30 |\n\n"
        "![a grade](img/dot.png)\n")
    return docs


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, book.BookReport]:
    """One book for the tests that only read it (nbconvert takes a second a page)."""
    root = tmp_path_factory.mktemp("built")
    report = book.build(make_course(root / "course"), root / "book",
                        docs=make_docs(root / "docs"))
    return root / "book", report


def test_a_book_has_contents_chapters_search_and_assets(built):
    out, report = built
    assert sorted(p.name for p in out.iterdir()) == [
        "00_tour.html", "02_at_least_once.html", "book.css", "book.js",
        "guide-instructors.html", "guide-measurements.html", "img", "index.html",
        "search-index.js"]
    assert [c.name for c in report.chapters] == ["00_tour", "02_at_least_once"]
    index = (out / "index.html").read_text()
    assert "href='02_at_least_once.html'>Chapter 2 — At least once</a>" in index
    assert "claim held" in index
    assert html.escape(CHAPTER_CLAIMS["02_at_least_once"].idea, quote=True) in index
    assert "no results file" in index  # chapter 00 wrote none: said, not hidden
    page = (out / "02_at_least_once.html").read_text()
    assert "href='00_tour.html'" in page  # sidebar and pager reach the other chapter
    assert "href='#1.-Lose-an-ack-while-values-flow'" in page  # the chapter's sections
    assert f"data:image/png;base64,{PNG}" in page
    entries = json.loads((out / "search-index.js").read_text()
                         .removeprefix("window.DL_BOOK_INDEX = ").rstrip().rstrip(";"))
    hit = [e for e in entries if e["heading"] == "1. Lose an ack while values flow"
           and e["page"] == "02_at_least_once.html"]
    assert hit and hit[0]["anchor"] == "1.-Lose-an-ack-while-values-flow"
    assert "Press the button" in hit[0]["text"]
    assert report.presses == {"00_tour": 0, "02_at_least_once": 2}


def test_each_recorded_press_is_shown_where_the_panel_was(built):
    out, _ = built
    page = (out / "02_at_least_once.html").read_text()
    text = text_of(page)
    assert classes(page, "dl-book-press") == 2
    assert classes(page, "dl-book-panel") == 1
    assert "[10:00:01] Lose ack: armed the proxy of broker 1" in text
    assert re.search(r"dl-book-press dl-book-failed[^>]*>\s*<div[^>]*>\[10:00:03\] Heal: "
                     "FAILED", page)  # the failed press stands out
    assert "1.25s nemesis lose_ack ok" in text  # the History excerpt after the press
    assert "broker 1: up" in text
    assert "Chapter 2: lose an ack" in text
    # No widget state, no widget manager: nothing would render it offline anyway.
    assert "widget-state+json" not in page and "widget-view+json" not in page
    tour = text_of((out / "00_tour.html").read_text())
    assert "No button was pressed in this run" in tour and "Tour buttons" in tour


def test_solutions_and_the_answer_stay_out_of_the_book(built):
    out, _ = built
    page = text_of((out / "02_at_least_once.html").read_text())
    assert "answer = None" in page  # the starter is there
    assert "SECRET-SOLUTION-OUTPUT" not in page
    assert "inspector.duplicates(t).count()" not in page
    assert "Correct: duplicates is 3" not in page
    assert "left out of the book" in page


def test_predictions_and_their_reveals_stay_out_of_the_book(built):
    out, _ = built
    page = text_of((out / "02_at_least_once.html").read_text())
    assert "dl.predict(chapter, 'extra', predict_extra)" in page  # the question's cell
    assert "PARAMETER-PREDICTION" not in page and "REVEALED-OUTCOME" not in page
    assert "commit your prediction before its run" in page
    assert "predict_extra" not in page.split("This run's parameters")[1][:200]
    assert "SECRET-ACTUAL" not in (out / "index.html").read_text()  # nor the contents


def test_a_graded_exercise_shows_the_starter_not_the_reference_grade(tmp_path: Path):
    labs = tmp_path / "labs"
    (labs / "exercises").mkdir(parents=True)
    (labs / "exercises" / "02_consume_loop.py").write_text(
        "def consume(consumer):\n    # TODO: commit after processing\n    ...\n")
    nb = {"metadata": {}, "cells": [code(
        "# Grades your exercises/02_consume_loop.py (or the `solution` parameter)\n"
        "graded = dl.grade('02', solution or None)\n",
        [stream("reference_02.py: 6/6 cells passed\n")])]}
    [cell] = book.prepare(nb, {}, labs)["cells"]
    [out] = cell["outputs"]
    shown = out["data"]["text/html"]
    assert "reference_02.py" not in shown
    assert "# TODO: commit after processing" in shown
    assert "<code>exercises/02_consume_loop.py</code>" in shown
    [cell] = book.prepare(nb, {}, tmp_path / "elsewhere")["cells"]  # no starter file
    assert "Graded in the notebook" in cell["outputs"][0]["data"]["text/html"]


def test_the_runs_schedule_is_told_but_not_its_paths(built):
    out, _ = built
    page = text_of((out / "02_at_least_once.html").read_text())
    assert 'This run\'s parameters: faults = ["lose_ack"]' in page
    assert "/home/ci" not in page


def test_a_widget_without_a_record_shows_its_text_never_an_empty_box():
    nb = {"cells": [code("panel", [panel_output("other"), {
        "output_type": "display_data", "metadata": {},
        "data": {book.WIDGET_VIEW: {"model_id": "bare"}}}])], "metadata": {}}
    [cell] = book.prepare(nb, {})["cells"]
    assert len(cell["outputs"]) == 1  # the view with no text at all is dropped
    assert "FaultPanel: Lose ack" in cell["outputs"][0]["data"]["text/html"]


def test_no_page_refers_to_the_network(built, tmp_path: Path):
    out, _ = built
    assert book.external_references(out) == []
    (tmp_path / "x.html").write_text(
        "<script src='https://cdn.jsdelivr.net/x.js'></script><a href='https://kafka.apache.org'>")
    (tmp_path / "y.html").write_text(
        "<style>@font-face { src: url('https://fonts.gstatic.com/x.woff2') }</style>")
    found = book.external_references(tmp_path)
    assert len(found) == 2  # the plain link to kafka.apache.org loads nothing
    assert "cdn.jsdelivr.net" in found[0] and "fonts.gstatic.com" in found[1]


def test_bad_folders_say_what_is_expected(tmp_path: Path):
    with pytest.raises(BadValue, match="run `make course` first"):
        book.build(tmp_path, tmp_path / "book")
    with pytest.raises(BadValue, match="a folder of executed chapters"):
        book.build(tmp_path / "missing", tmp_path / "book")


def test_the_book_never_deletes_a_folder_that_is_not_a_book(course: Path, tmp_path: Path):
    other = tmp_path / "precious"
    other.mkdir()
    (other / "thesis.tex").write_text("x")
    with pytest.raises(BadValue, match="holds other files"):
        book.build(course, other)
    assert (other / "thesis.tex").exists()


def test_a_broken_panel_record_names_its_line(course: Path, tmp_path: Path):
    (course / "00_tour.panels.jsonl").write_text('{"event": "shown"}\n')
    with pytest.raises(BadValue, match="00_tour.panels.jsonl line 1"):
        book.build(course, tmp_path / "book")


def test_main_prints_a_summary_and_fails_in_one_line(course: Path, tmp_path: Path, capsys):
    assert book.main(["--from", str(course), "--out", str(tmp_path / "b"), "02"]) == 0
    out = capsys.readouterr().out
    assert "02_at_least_once: claim held; 2 recorded press(es)" in out
    assert book.main(["--from", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_two_headings_of_the_same_text_get_two_anchors(tmp_path: Path):
    """Chapter 00 has an h2 and an h4 "What you saw": one id each, or the sidebar's
    link of the second leads to the first."""
    src = tmp_path / "course"
    src.mkdir()
    write_chapter(src, "00_tour", "Tour", None, [], cells=[
        md("# Tour\n\n## What you saw\n\nfirst"), md("#### What you saw\n\nsecond"),
        md("## What you saw\n\nthird")])
    book.build(src, tmp_path / "book")
    page = (tmp_path / "book" / "00_tour.html").read_text()
    ids = re.findall(r'<h[1-6] id="(What-you-saw[^"]*)"', page)
    assert ids == ["What-you-saw", "What-you-saw-2", "What-you-saw-3"]
    for anchor in ids:
        assert page.count(f'href="#{anchor}"') >= 1, anchor
    # The sidebar and the search take h1-h3: the first and the third.
    assert [s.anchor for s in book.outline(page) if s.heading == "What you saw"] == [
        "What-you-saw", "What-you-saw-3"]


def test_a_printed_table_stays_on_its_lines_and_sentences_still_wrap():
    table = ("measuring: 39/39 in 100.2 s\n  variant  bytes  records/s\n"
             "---------  -----  ---------\n   acks=0   1024     128549\n")
    nb = {"cells": [code("print(costs.table())", [stream(table)]),
                    code("print(summary)", [stream("60 values were sent " * 12 + "\n")])]}
    first, second = (c["outputs"][0] for c in book.prepare(nb, {})["cells"])
    assert first["data"]["text/html"] == (
        "<pre class='dl-book-table-text'>" + html.escape(table) + "</pre>")
    assert second["output_type"] == "stream"


def test_the_contents_page_lists_ideas_not_outcomes(built):
    """The claim, the checks and the counts state what a chapter asks its reader to
    predict: the contents page lists each chapter's idea and link instead."""
    out, _ = built
    index = text_of((out / "index.html").read_text())
    for outcome in ("nothing acked is lost", "no acked value lost", "duplicates=2",
                    "lost=0", "SECRET-ACTUAL"):
        assert outcome not in index, outcome
    assert CHAPTER_CLAIMS["02_at_least_once"].idea in index
    assert CHAPTER_CLAIMS["00_tour"].idea in index  # a chapter without results too


def test_the_claim_and_checks_stand_at_the_end_of_the_chapter_page(built):
    out, _ = built
    page = text_of((out / "02_at_least_once.html").read_text())
    top, _, end = page.partition("lost ack: one duplicate")  # the chapter's last cell
    assert "nothing acked is lost" not in top and "no acked value lost" not in top
    assert "claim, and whether it held in this run, are at the end of the page" in top
    assert "The claim held in this run: nothing acked is lost" in end
    assert "no acked value lost" in end
    assert end.index("The claim held") < end.index("Contents")  # before the pager


def test_a_failed_run_says_so_at_the_top_without_its_claim(tmp_path: Path):
    src = tmp_path / "course"
    src.mkdir()
    write_chapter(src, "02_at_least_once", "Chapter 2 — At least once",
                  {"chapter": "02_at_least_once", "claim": "nothing acked is lost",
                   "pass": False, "observed": {"lost": 3},
                   "checks": [{"what": "no acked value lost", "pass": False}]})
    book.build(src, tmp_path / "book")
    page = (tmp_path / "book" / "02_at_least_once.html").read_text()
    top, _, end = text_of(page).partition("lost ack: one duplicate")
    assert "This run did NOT pass its checks" in top and "nothing acked is lost" not in top
    assert "The claim did NOT hold: nothing acked is lost" in end
    assert classes(page, "dl-book-notok") == 1
    index = (tmp_path / "book" / "index.html").read_text()
    assert "claim NOT held" in index and "nothing acked is lost" not in index


def test_a_plot_gets_its_title_as_alternative_text(built):
    assert book.alt_text('dl.plots.timeline(h, title="Your stream: lost acks")') == (
        "Plot: Your stream: lost acks")
    assert book.alt_text("fig = f(x,\n   title=f'sends to {topic} and the fault')") == (
        "Plot: sends to ... and the fault")
    assert book.alt_text("# draw\ndl.cost.plot(costs)") == "Plot drawn by: dl.cost.plot(costs)"
    out, _ = built
    page = (out / "02_at_least_once.html").read_text()
    assert '<img alt="Plot drawn by: dl.plots.timeline(history)"' in page


def test_an_explanatory_figure_is_described_in_words_not_by_its_call():
    """Every figure a chapter calls has alternative text that says what it shows (from
    the figure's own description), never "drawn by: dl.figures.x()"."""
    from deliverylab.notebook import figures

    labs = Path(__file__).resolve().parents[4] / "labs"
    calls = {m.group(1) for p in (labs / f"{n}.ipynb" for n in chapter_names(labs))
             for c in json.loads(p.read_text())["cells"] if c["cell_type"] == "code"
             for m in re.finditer(r"\bdl\.figures\.(\w+)\(", "".join(c["source"]))}
    assert len(calls) >= 10, calls
    for name in sorted(calls):
        alt = book.alt_text(f"dl.figures.{name}()")
        assert alt.startswith("Figure: ") and "dl.figures" not in alt, (name, alt)
        assert len(alt) > 30 and alt.endswith("."), (name, alt)
    assert figures.describe("no_such_figure") is None and figures.describe("describe") is None
    assert book.alt_text("dl.figures.no_such_figure()").startswith("Plot drawn by:")
