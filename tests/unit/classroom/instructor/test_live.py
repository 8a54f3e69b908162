"""The dashboard page on hand-written results: one row per student and chapter (a
student with nothing run yet still has one), what caught whom, memory against the cap
or said to be not measured, and a page that reloads itself."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.classroom.instructor.class_folders import make_class

from deliverylab.classroom.instructor import live as dashboard
from deliverylab.classroom.instructor import view as instructor
from deliverylab.classroom.instructor.live import StudentState


def _collected(tmp_path: Path) -> instructor.Collected:
    return instructor.collect(make_class(tmp_path))


def test_one_row_per_student_and_chapter_with_what_caught_them(tmp_path: Path):
    rows = {(r["student"], r["chapter"]): r
            for r in dashboard.student_rows(_collected(tmp_path))}
    assert rows[("ana", "02_at_least_once")]["claim"] == "held"
    ben = rows[("ben", "02_at_least_once")]
    assert ben["claim"] == "FAILED 1/2"
    assert ben["graded"] == "0 of 2 cells passed"
    assert "lose_ack x one_batch_redone" in ben["caught"]
    dee = rows[("dee", "02")]  # graded, the chapter's own file not there: still a row
    assert dee["claim"] == "graded, chapter not run"
    assert dee["caught"] == "lose_ack x one_batch_redone"
    assert not any(s == "cy" for s, _ in rows)  # nothing run: no chapter row


def test_the_page_lists_every_student_and_reloads_itself(tmp_path: Path):
    collected = _collected(tmp_path)
    states = [StudentState("ana", "running", 812 * 2**20, 3 * 2**30),
              StudentState("ben", "stopped", None, 3 * 2**30, "not measured: no cgroup"),
              StudentState("cy", "running", 100 * 2**20, None),
              StudentState("dee", "running", None, None, "not measured: docker")]
    text = dashboard.page(collected, states, refresh_s=7)
    assert "<meta http-equiv='refresh' content='7'>" in text
    assert "The class, live: 4 students" in text
    assert "data-student='cy' data-chapter=''" in text and "nothing run yet" in text
    assert text.count("data-student='ana'") == len(
        [r for r in collected.chapters if r["student"] == "ana"])
    assert "812 MiB of 3072 MiB (26%)" in text
    assert "not measured: no cgroup" in text and "100 MiB (no cap)" in text
    assert "<table id='catching'>" in text and "lose_ack" in text
    assert "Could not read (2)" in text


def test_the_chapter_a_student_is_in_is_the_one_they_wrote_last(tmp_path: Path):
    home = tmp_path / "eve"
    for name, mtime in (("00_tour", 200.0), ("01_at_most_once", 100.0)):
        path = home / "labs/results" / f"{name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"chapter": name, "checks": [{"what": "x", "pass": True}],
                                    "pass": True}))
        import os
        os.utime(path, (mtime, mtime))
    rows = dashboard.student_rows(instructor.collect([home]))
    assert dashboard.current_chapter(rows, "eve") == "00_tour"


def test_missed_predictions_count_the_students_who_predicted_wrong():
    c = instructor.Collected(students=["a", "b", "c"])
    for who, right in (("a", False), ("b", False), ("c", True)):
        c.predictions.append({"student": who, "chapter": "02", "prediction": "dups",
                              "question": "q", "predicted": "none", "right": right})
    [row] = dashboard.missed_predictions(c).to_dict("records")
    assert (row["prediction"], row["wrong"], row["students"]) == ("dups", 2, 3)
