"""The headless course runner (python -m deliverylab.classroom.course), without running chapters."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.classroom.course import run as course
from deliverylab.errors import BadValue

LABS = Path(__file__).resolve().parents[4] / "labs"

# --- the course runner -------------------------------------------------------------------------


def test_discover_and_select():
    names = ["00_tour", "01_at_most_once", "02_at_least_once"]
    assert course.select(names, []) == names
    assert course.select(names, ["02", "00_tour"]) == ["00_tour", "02_at_least_once"]
    with pytest.raises(BadValue, match="one of 00_tour"):
        course.select(names, ["09"])
    with pytest.raises(BadValue, match="exactly one"):
        course.select(names, ["0"])


def test_the_chapters_are_discovered_in_course_order():
    found = course.discover(LABS)
    assert found == sorted(found)
    for name in ("01_at_most_once", "02_at_least_once", "03_idempotent_producer",
                 "04_transactions"):
        assert name in found


def test_parameters_carry_schedule_size_and_results_path(tmp_path):
    p = course.parameters("02_at_least_once", small=True, results_path=tmp_path / "r.json")
    assert p["faults"] == ["lose_ack"] and p["messages"] == 60
    assert p["results_path"] == str(tmp_path / "r.json")
    full = course.parameters("02_at_least_once", small=False, results_path=tmp_path / "r")
    assert "messages" not in full and full["faults"] == ["lose_ack"]
    assert course.parameters("99_unknown", True, tmp_path / "r") == {
        "results_path": str(tmp_path / "r")}


def test_small_and_headless_parameters_exist_in_the_notebooks():
    """A parameter the notebook does not declare would be silently ignored by papermill."""
    import nbformat

    for chapter in set(course.SMALL) | set(course.HEADLESS):
        path = LABS / f"{chapter}.ipynb"
        assert path.exists(), f"course lists {chapter}, but {path} does not exist"
        nb = nbformat.read(path, as_version=4)
        [cell] = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        declared = {line.split("=")[0].strip() for line in cell.source.splitlines()
                    if "=" in line and not line.lstrip().startswith("#")}
        wanted = set(course.SMALL.get(chapter, {})) | set(course.HEADLESS.get(chapter, {}))
        assert wanted | {"results_path"} <= declared, (chapter, wanted - declared)


def _run(chapter, passed=True, seconds=12.5, error=None, observed=None):
    results = {"chapter": chapter, "claim": f"claim of {chapter}",
               "observed": observed or {"lost": 0, "duplicates": 3, "flag": True},
               "checks": [{"what": "dup seen", "pass": passed}], "pass": passed,
               "seconds": seconds}
    return course.ChapterRun(chapter, error is None, 99.0, results, error)


def test_table_has_one_row_per_chapter_with_verdict_and_time():
    runs = [_run("01_at_most_once"), _run("02_at_least_once", passed=False),
            course.ChapterRun("03_idempotent_producer", False, 42.0, None, "KeyError: x")]
    text = course.table(runs)
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["chapter", "claim", "result", "time"]
    assert len(lines) == 2 + 3
    assert "01_at_most_once" in lines[2] and "PASS" in lines[2] and "12 s" in lines[2]
    assert "lost=0 duplicates=3 flag=yes" in lines[2]
    assert "FAIL" in lines[3] and "<< dup seen" in lines[3]
    assert "FAIL" in lines[4] and "42 s" in lines[4] and "KeyError: x" in lines[4]


def test_a_run_passes_only_with_a_passing_results_file():
    assert _run("a").passed
    assert not _run("a", passed=False).passed
    assert not _run("a", error="boom").passed
    assert not course.ChapterRun("a", True, 1.0, None).passed
    assert course.ChapterRun("a", True, 7.0, {"pass": True}).seconds == 7.0  # no seconds


def test_observed_text():
    assert course.observed_text(None) == "-"
    assert course.observed_text({"a": [1, 2], "b": 0.5}) == "a=[1,2] b=0.5"
    assert course.observed_text({"a": "x" * 50}, width=10) == "a=xxxxx..."


def test_main_without_notebooks_says_so(tmp_path, capsys):
    assert course.main(["--labs", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert "no chapter notebooks" in capsys.readouterr().err


def test_main_prints_the_table_and_fails_if_a_chapter_failed(tmp_path, monkeypatch, capsys):
    for name in ("01_a", "02_b"):
        (tmp_path / f"{name}.ipynb").write_text("{}")

    def fake_run(chapter, out, labs, small, html, kernel, extra):
        assert small and not html and extra == {"backend": "docker"}
        return _run(chapter, passed=chapter == "01_a")

    monkeypatch.setattr(course, "run_chapter", fake_run)
    code = course.main(["--labs", str(tmp_path), "--out", str(tmp_path / "o"), "--small",
                        "--no-html", "--backend", "docker"])
    out = capsys.readouterr().out
    assert code == 1
    assert "1/2 chapters passed" in out and "01_a" in out and "02_b" in out


def test_run_all_goal_is_printed_beside_the_time():
    assert course.run_all_goal(179.6) == "(goal <= 180 s: met)"
    assert course.run_all_goal(181) == "(goal <= 180 s: MISSED)"


def test_a_chapter_without_a_panel_still_leaves_an_empty_panel_record(tmp_path):
    """The book (and its browser test) tell "no panel shown" (empty record) from "not
    recorded" (no file): chapter 08 has no panel. A trivial notebook, a real kernel."""
    import json

    labs = tmp_path / "labs"
    labs.mkdir()
    cells = [{"cell_type": "code", "id": "p", "metadata": {"tags": ["parameters"]}, "outputs": [],
              "execution_count": None, "source": 'results_path = ""\n'},
             {"cell_type": "code", "id": "w", "metadata": {}, "outputs": [],
              "execution_count": None,
              "source": "import json; json.dump({'chapter': '01_x', 'pass': True}, "
                        "open(results_path, 'w'))\n"}]
    (labs / "01_x.ipynb").write_text(json.dumps(
        {"nbformat": 4, "nbformat_minor": 5, "cells": cells,
         "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}}}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "01_x.panels.jsonl").write_text('{"model_id": "from an earlier run"}\n')
    run = course.run_chapter("01_x", out, labs, html=False)
    assert run.passed, run.error
    assert (out / "01_x.panels.jsonl").read_text() == ""
