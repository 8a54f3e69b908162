"""The instructor's view, reading hand-written student folders (no Spark here: the
counting is checked with Spark in tests/integration/classroom/test_instructor.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.classroom.instructor import view as instructor
from deliverylab.errors import BadValue

from .class_folders import make_class, write


def test_collect_reads_every_student_where_the_chapters_write(tmp_path: Path):
    c = instructor.collect(make_class(tmp_path))
    assert c.students == ["ana", "ben", "cy", "dee"]
    ran = {(r["student"], r["chapter"]): (r["held"], r["checks_held"], r["checks"])
           for r in c.chapters}
    assert ran == {("ana", "00_tour"): (True, 1, 1),
                   ("ana", "02_at_least_once"): (True, 2, 2),
                   ("ben", "02_at_least_once"): (False, 1, 2),
                   ("dee", "01_at_most_once"): (True, 1, 1)}
    graded = {(r["student"], r["chapter"]): (r["grade_passed"], r["grade_failed"])
              for r in c.chapters if r["grade_passed"] is not None}
    assert graded == {("ana", "02_at_least_once"): (9, 0), ("ben", "02_at_least_once"): (7, 2)}
    caught = sorted((r["student"], r["fault"]) for r in c.cells if r["caught"])
    assert caught == [("ben", "crash_consumer"), ("ben", "lose_ack"), ("dee", "lose_ack")]


def test_every_bad_file_gets_one_line_naming_it(tmp_path: Path):
    c = instructor.collect(make_class(tmp_path))
    assert len(c.problems) == 2
    broken, shapeless = sorted(c.problems)
    assert broken.startswith(str(tmp_path / "ben/labs/results/03_idempotent_producer.json"))
    assert "not readable JSON" in broken
    assert shapeless.startswith(str(tmp_path / "dee/results/04_transactions.json"))
    assert "without a 'chapter' name and 'checks'" in shapeless
    assert c.skipped == [str(tmp_path / "dee/results/09_matrix.json")]


def test_a_grade_file_of_the_wrong_shape_is_named(tmp_path: Path):
    write(tmp_path / "eve/results/grades/04.json", {"exercise": "04", "cells": [{"x": 1}]})
    c = instructor.collect([tmp_path / "eve"])
    assert c.cells == [] and len(c.problems) == 1
    assert "grades/04.json: a grade result without" in c.problems[0]


def test_missing_folders_and_twins_are_named_not_dropped(tmp_path: Path):
    (tmp_path / "a" / "ana").mkdir(parents=True)
    (tmp_path / "b" / "ana").mkdir(parents=True)
    c = instructor.collect([tmp_path / "nobody", tmp_path / "a" / "ana", tmp_path / "b" / "ana"])
    assert c.students == ["ana"]
    assert c.problems[0] == (f"{tmp_path / 'nobody'}: not a folder "
                             "(expected a student's home folder)")
    assert "a second folder for student 'ana'" in c.problems[1]


def test_the_newest_of_two_runs_of_a_chapter_counts(tmp_path: Path):
    import os

    from .class_folders import chapter

    home = tmp_path / "fay"
    write(home / "results/02_at_least_once.json", chapter("02_at_least_once", {"x": False}))
    write(home / "labs/results/02_at_least_once.json", chapter("02_at_least_once", {"x": True}))
    os.utime(home / "results/02_at_least_once.json", (1, 1))
    [row] = instructor.collect([home]).chapters
    assert row["held"] is True and row["file"].endswith("labs/results/02_at_least_once.json")


def test_the_page_must_be_html(tmp_path: Path):
    with pytest.raises(BadValue, match="a path ending in .html"):
        instructor.main([str(tmp_path), "--out", str(tmp_path / "x.txt")])


def test_the_hubs_user_prefix_is_taken_off_the_names(tmp_path: Path):
    (tmp_path / "dlab-ana").mkdir()
    assert instructor.collect([tmp_path / "dlab-ana"], prefix="dlab-").students == ["ana"]
