"""The instructor's view of the graded code, from two students' grade files written by
hand (as ``Report.to_dict`` writes them, each cell's runs with their crash points), and
one file from before the grader named its crash points."""

from __future__ import annotations

import html
from pathlib import Path

from deliverylab.classroom.instructor import view as instructor
from deliverylab.classroom.instructor.grades import COLUMNS, grade_rows, point_counts

from .class_folders import write

FLUSH2 = "after your 2nd flush, before your 2nd offset commit"
COMMIT1 = "after your 1st offset commit, before your 2nd poll"


def run(point: str, crash: str, failed: bool, seed: int = 1) -> dict:
    return {"seed": seed, "point": point, "crash": crash, "failed": failed, "judged": True}


def cell(fault: str, prop: str, runs: list[dict]) -> dict:
    failing = [r["seed"] for r in runs if r["failed"]]
    return {"fault": fault, "property": prop, "passed": len(runs) - len(failing),
            "runs": len(runs), "state": "FAIL" if failing else "ok",
            "failing_seeds": failing, "points": runs}


def two_students(root: Path) -> list[Path]:
    """ana's loop commits before it writes: the kill after her 1st commit loses values
    (both seeds), the one after her 2nd flush does not. ben's commits one offset short:
    his runs fail 'one_batch_redone' at flush#2 (seed 2 only) and at commit#1."""
    ana = {"exercise": "02", "cells": [
        cell("crash_consumer", "nothing_lost", [
            run("flush#2", FLUSH2, False), run("commit#1", COMMIT1, True),
            run("flush#2", FLUSH2, False, 2), run("commit#1", COMMIT1, True, 2)]),
        cell("crash_consumer", "one_batch_redone", [
            run("flush#2", FLUSH2, False), run("commit#1", COMMIT1, False)]),
        cell("lose_ack", "nothing_lost", [run("", "", False)])]}
    ben = {"exercise": "02", "cells": [
        cell("crash_consumer", "nothing_lost", [
            run("flush#2", FLUSH2, False), run("commit#1", COMMIT1, False)]),
        cell("crash_consumer", "one_batch_redone", [
            run("flush#2", FLUSH2, False), run("commit#1", COMMIT1, True),
            run("flush#2", FLUSH2, True, 2), run("commit#1", COMMIT1, True, 2)]),
        cell("lose_ack", "nothing_lost", [run("", "", False)])]}
    write(root / "ana/labs/results/grades/02.json", ana)
    write(root / "ben/results/grades/02.json", ben)
    return [root / "ana", root / "ben"]


def test_each_run_is_a_row_at_its_crash_point(tmp_path: Path):
    c = instructor.collect(two_students(tmp_path))
    assert c.problems == []
    ana = [(r["fault"], r["property"], r["point"], r["failed"]) for r in c.points
           if r["student"] == "ana"]
    assert ana[:4] == [("crash_consumer", "nothing_lost", "flush#2", 0),
                       ("crash_consumer", "nothing_lost", "commit#1", 1),
                       ("crash_consumer", "nothing_lost", "flush#2", 0),
                       ("crash_consumer", "nothing_lost", "commit#1", 1)]
    assert len(c.points) == 14 and len(c.cells) == 6


def test_the_table_counts_per_cell_and_crash_point_whose_runs_failed(tmp_path: Path):
    table = point_counts(instructor.collect(two_students(tmp_path)).points)
    assert list(table.columns) == COLUMNS
    rows = [tuple(r) for r in table[["fault", "property", "point", "students_failed",
                                     "students", "runs_failed", "runs", "who"]]
            .itertuples(index=False)]
    assert rows == [
        # crash points in the order a run meets them: the 1st batch before the 2nd
        ("crash_consumer", "nothing_lost", "commit#1", 1, 2, 2, 3, "ana"),
        ("crash_consumer", "nothing_lost", "flush#2", 0, 2, 0, 3, ""),
        ("crash_consumer", "one_batch_redone", "commit#1", 1, 2, 2, 3, "ben"),
        ("crash_consumer", "one_batch_redone", "flush#2", 1, 2, 1, 3, "ben"),
        ("lose_ack", "nothing_lost", "", 0, 2, 0, 2, "")]
    words = dict(zip(table["point"], table["crash"], strict=False))
    assert words == {"commit#1": COMMIT1, "flush#2": FLUSH2, "": ""}


def test_an_old_grade_file_without_crash_points_shows_the_cell_only(tmp_path: Path):
    from .class_folders import CRASH, LOST_ACK, grade, make_class

    write(tmp_path / "eve/results/grades/02.json",
          grade("02", {LOST_ACK: (1, 3), CRASH: (0, 3)}))
    c = instructor.collect([tmp_path / "eve"])
    assert c.problems == []
    table = point_counts(c.points)
    assert [tuple(r) for r in table[["fault", "point", "students_failed", "runs_failed",
                                     "runs"]].itertuples(index=False)] == [
        ("lose_ack", "", 1, 2, 3), ("crash_consumer", "", 1, 3, 3)]
    # and the four students of the instructor's other tests: ben and dee caught
    counts = point_counts(instructor.collect(make_class(tmp_path / "class")).points)
    caught = {(r.fault, r.students_failed, r.who) for r in counts.itertuples()}
    assert caught == {("lose_ack", 2, "ben, dee"), ("crash_consumer", 1, "ben")}


def test_a_grade_file_whose_runs_name_crash_points_shows_them(tmp_path: Path):
    """As the grader wrote its files before the cells carried ``points``: the crash
    point of each run in the top-level ``runs``, with a verdict per property."""
    def top(point: str, crash: str, lost: bool | None) -> dict:
        return {"fault": "crash_consumer", "seed": 1, "point": point, "crash": crash,
                "passed": {"nothing_lost": None if lost is None else not lost}}

    data = {"exercise": "02", "cells": [
        {"fault": "crash_consumer", "property": "nothing_lost", "passed": 1, "runs": 3,
         "failing_seeds": [1]}],
        "runs": [top("flush#2", FLUSH2, False), top("commit#1", COMMIT1, True),
                 top("poll#2", "", None)]}
    write(tmp_path / "fay/results/grades/02.json", data)
    table = point_counts(instructor.collect([tmp_path / "fay"]).points)
    assert [tuple(r) for r in table[["point", "crash", "students_failed", "runs_failed",
                                     "runs"]].itertuples(index=False)] == [
        ("commit#1", COMMIT1, 1, 1, 1), ("flush#2", FLUSH2, 0, 0, 1), ("poll#2", "", 0, 0, 1)]


def test_a_cell_whose_points_are_not_runs_names_the_cell():
    import pytest

    bad = {"exercise": "02", "cells": [{"fault": "crash_consumer", "property": "finishes",
                                        "passed": 1, "runs": 1,
                                        "points": [{"point": "flush#2", "failed": "no"}]}]}
    with pytest.raises(ValueError, match="cell crash_consumer x finishes: 'points' that"):
        grade_rows("ana", bad)


def test_the_page_shows_the_crash_point_table(tmp_path: Path):
    import pandas as pd

    collected = instructor.collect(two_students(tmp_path))
    empty = pd.DataFrame()
    view = instructor.ClassView(empty, empty, empty, pd.DataFrame(columns=["students"]),
                                collected, instructor.prediction_counts(collected),
                                point_counts(collected.points))
    text = instructor.page(view)
    head = "<h2>Graded code: where the crash landed, and how many students' runs failed "
    assert head in text
    table = text.split(head)[1].split("</table>")[0]
    assert "commit#1" in table and html.escape(COMMIT1) in table
