"""The instructor's view counted by Spark over hand-written student folders: the
progress table, the grade counts, the fault cells that catch the most students, the
page with its plot and its list of unreadable files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.classroom.instructor.class_folders import make_class

from deliverylab.classroom.instructor import view as instructor

pytestmark = [pytest.mark.spark]


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory) -> instructor.ClassView:
    root = tmp_path_factory.mktemp("class")
    return instructor.tables(instructor.collect(make_class(root)))


def test_one_table_which_chapters_each_student_ran_and_what_held(view):
    t = view.progress
    assert list(t.index) == ["ana", "ben", "cy", "dee"]  # cy ran nothing: still listed
    assert list(t.columns) == ["00_tour", "01_at_most_once", "02_at_least_once"]
    assert t.at["ana", "02_at_least_once"] == "held"
    assert t.at["ben", "02_at_least_once"] == "FAILED 1/2"
    assert t.at["dee", "01_at_most_once"] == "held"
    assert list(t.loc["cy"]) == ["", "", ""]


def test_graded_exercises_pass_counts(view):
    g = {(r.student, r.exercise): (r.cells_passed, r.cells)
         for r in view.grades.itertuples()}
    assert g[("ana", "02")] == (2, 2)
    assert g[("ben", "02")] == (0, 2)
    assert g[("dee", "02")] == (1, 2)
    assert g[("ben", "02_at_least_once")] == (7, 9)  # the counts the chapter observed


def test_the_fault_cells_that_catch_the_most_students_come_first(view):
    rows = [(r.fault, r.students, list(r.who)) for r in view.catching_cells.itertuples()]
    assert rows == [("lose_ack", 2, ["ben", "dee"]), ("crash_consumer", 1, ["ben"])]
    [hard] = list(view.hardest_checks.itertuples())
    assert (hard.check, hard.students) == ("nothing acknowledged was lost", 1)


def test_the_page_shows_the_class_the_plot_and_what_could_not_be_read(view, tmp_path: Path):
    text = instructor.page(view)
    assert "<h1>The class: 4 students</h1>" in text
    assert "data:image/png;base64," in text
    assert "FAILED 1/2" in text and "lose_ack" in text
    assert "Nothing run yet: cy" in text
    assert "Could not read (2)" in text and "03_idempotent_producer.json" in text
    assert "Other JSON skipped" in text and "09_matrix.json" in text
    png = tmp_path / "class.png"
    instructor.plot(view, save=png)
    assert png.stat().st_size > 5000
