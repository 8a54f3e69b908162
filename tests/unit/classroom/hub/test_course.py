"""The course through the hub, without a hub: which chapters, with which parameters, the
verdict read from a results file, the memory windows and the tables, on hand-written
results and samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.classroom.hub import course as hc
from deliverylab.classroom.sizing.measure import Memory, Sample
from deliverylab.errors import LabError

MIB = 2**20


def results(chapter: str, passed: bool = True, checks: tuple[bool, ...] = (True, True),
            seconds: float = 51.0) -> str:
    return json.dumps({"chapter": chapter, "claim": "nothing acknowledged is lost",
                       "observed": {"lost": 0},
                       "checks": [{"what": f"check {i}", "pass": ok}
                                  for i, ok in enumerate(checks)],
                       "pass": passed, "seconds": seconds})


def test_chapters_are_taken_by_number_in_the_order_given():
    assert hc.select_chapters(["02", "00"]) == ["02_at_least_once", "00_tour"]
    assert hc.select_chapters(["00_tour"]) == ["00_tour"]


@pytest.mark.parametrize(("wanted", "says"), [
    (["11"], "chapter='11' is not accepted"),
    (["0"], "a prefix of exactly one chapter"),
    (["00", "00_tour"], "each chapter once"),
    ([], "one chapter number or more"),
])
def test_a_bad_chapter_is_refused_in_one_line(wanted: list[str], says: str):
    with pytest.raises(LabError, match=says) as err:
        hc.select_chapters(wanted)
    assert "\n" not in str(err.value)


def test_the_parameters_are_the_chapter_tests():
    p00 = hc.chapter_parameters("00_tour")
    assert p00["backend"] == "local" and p00["messages"] == 20  # course.SMALL
    assert p00["results_path"] == "results/00_tour.json"
    assert "solution" not in p00
    p02 = hc.chapter_parameters("02_at_least_once")
    assert p02["faults"] == ["lose_ack"] and p02["grade_seeds"] == 1
    assert Path(p02["solution"]).name == "reference.py" and Path(p02["solution"]).is_file()
    assert hc.results_file("02_at_least_once") == "labs/results/02_at_least_once.json"


def test_a_chapter_holds_only_if_it_ran_to_the_end_and_its_file_says_so():
    ok = hc.chapter_run("00_tour", 52.0, results("00_tour"), None)
    assert ok.passed and ok.error is None and ok.wall_seconds == 52.0
    # the notebook raised after writing a passing file: not held
    assert not hc.chapter_run("00_tour", 5, results("00_tour"), "CellFailed: x").passed
    failed = hc.chapter_run("00_tour", 5, results("00_tour", False, (True, False)), None)
    assert not failed.passed and failed.error is None
    missing = hc.chapter_run("00_tour", 5, None, None)
    assert not missing.passed and "wrote no results file" in missing.error
    broken = hc.chapter_run("00_tour", 5, "{not json", None)
    assert not broken.passed and "unreadable" in broken.error
    other = hc.chapter_run("02_at_least_once", 5, results("00_tour"), None)
    assert not other.passed and "not 02_at_least_once's" in other.error


def samples() -> list[Sample]:
    def at(t: float, ann: int, ben: int) -> Sample:
        return Sample(t, {"ann": Memory(pss=ann * MIB, rss=2 * ann * MIB),
                          "ben": Memory(pss=ben * MIB, rss=2 * ben * MIB)}, {})
    return [at(0, 100, 100), at(1, 900, 300), at(2, 700, 800), at(3, 500, 1200)]


def test_peaks_are_taken_in_each_students_window_and_at_one_instant_for_the_class():
    s = samples()
    assert hc.window_peak(s, "ann", 0.5, 2.5) == Memory(pss=900 * MIB, rss=1800 * MIB)
    assert hc.window_peak(s, "ben", 0.5, 2.5) == Memory(pss=800 * MIB, rss=1600 * MIB)
    assert hc.window_peak(s, "ann", 10, 20) is None
    assert hc.window_peak(s, "cat", 0, 3) is None
    # the class: the largest sum at one instant (t=3: 1700), not the sum of the peaks
    assert hc.class_peak(s, 0, 3) == Memory(pss=1700 * MIB, rss=3400 * MIB)
    assert hc.class_peak(s, 5, 6) is None
    assert hc.overlap([(0, 10), (2, 12), (1, 9)]) == (2, 9)
    assert hc.overlap([(0, 1), (2, 3)]) is None and hc.overlap([]) is None


def test_the_tables_show_each_student_and_each_chapters_spread():
    rows = [hc.StudentChapter("ann", hc.chapter_run("00_tour", 52, results("00_tour"), None),
                              1200 * MIB, Memory(pss=800 * MIB, rss=1000 * MIB),
                              cgroup_start=300 * MIB),
            hc.StudentChapter("ben", hc.chapter_run("00_tour", 60, results(
                "00_tour", False, (True, False)), None), 1300 * MIB, None,
                left=["4242 java"])]
    table = hc.summary_table(rows)
    ann, ben = table.splitlines()[2:]
    assert ann.split() == ["ann", "00_tour", "held", "52", "51", "300", "1200", "800",
                           "1000"]
    assert ben.split()[:9] == ["ben", "00_tour", "FAILED", "60", "51", "-", "1300", "-", "-"]
    assert "<< check 1 | left 1 processes: 4242 java" in ben
    assert hc.chapter_summary(rows) == (
        "00_tour: held for 1/2 students; wall 52-60 s; cgroup peak 1200-1300 MiB; "
        "PSS peak 800 MiB; RSS peak 1000 MiB")


def test_each_chapters_row_for_the_plan_holds_its_largest_student():
    def row(student: str, chapter: str, wall: float, cgroup: int | None, pss: int, rss: int,
            passed: bool = True) -> hc.StudentChapter:
        return hc.StudentChapter(student, hc.chapter_run(chapter, wall, results(
            chapter, passed, (passed,)), None), None if cgroup is None else cgroup * MIB,
            Memory(pss=pss * MIB, rss=rss * MIB))
    rows = [row("ann", "00_tour", 55.4, 1022, 971, 1100),
            row("ann", "07_exactly_once_sources", 182.0, 2867, 1976, 2263),
            row("ben", "00_tour", 56.04, None, 1002, 1090, passed=False)]
    rows.append(hc.StudentChapter("cat", hc.chapter_run("00_tour", 50, results("00_tour"),
                                                        None), 1045 * MIB, None))
    peaks = hc.chapter_peaks(rows, students=3)
    assert peaks == [
        {"chapter": "00_tour", "students": 3, "peak_pss": 1002 * MIB, "peak_rss": 1100 * MIB,
         "cgroup_peak": 1045 * MIB, "wall_s": 56.0, "held": False},
        {"chapter": "07_exactly_once_sources", "students": 3, "peak_pss": 1976 * MIB,
         "peak_rss": 2263 * MIB, "cgroup_peak": 2867 * MIB, "wall_s": 182.0, "held": True}]
    # nothing sampled for a chapter: its peaks are null, not zero
    alone = hc.chapter_peaks([rows[-1]], students=1)[0]
    assert (alone["peak_pss"], alone["peak_rss"], alone["held"]) == (None, None, True)


def test_saved_rows_merge_a_later_measurement_replacing_the_earlier(tmp_path: Path):
    def row(chapter: str, pss: int) -> dict:
        return {"chapter": chapter, "students": 1, "peak_pss": pss * MIB,
                "peak_rss": 2 * pss * MIB, "cgroup_peak": None, "wall_s": 10.0, "held": True}
    path = hc.save_peaks(tmp_path / "plan", "light", [row("07_exactly_once_sources", 1900),
                                                      row("00_tour", 1049)])
    assert path == tmp_path / "plan" / "chapters-light.json"
    hc.save_peaks(tmp_path / "plan", "light", [row("07_exactly_once_sources", 1976),
                                              row("01_at_most_once", 1217)])
    saved = hc.parse_peaks(path.read_text(), str(path))
    assert [(r["chapter"], r["peak_pss"] // MIB) for r in saved] == [
        ("00_tour", 1049), ("01_at_most_once", 1217), ("07_exactly_once_sources", 1976)]
    assert not (tmp_path / "plan" / "chapters-default.json").exists()


@pytest.mark.parametrize(("text", "says"), [
    ("[1]", "row 0 is not an object"),
    ('[{"chapter": "00_tour", "students": 0, "peak_pss": 1, "peak_rss": 1, '
     '"cgroup_peak": null, "wall_s": 1, "held": true}]', "students=0"),
    ('[{"chapter": "00_tour", "students": 1, "peak_pss": -1, "peak_rss": 1, '
     '"cgroup_peak": null, "wall_s": 1, "held": true}]', "peak_pss=-1"),
    ('[{"chapter": "00_tour", "students": 1, "peak_pss": 1, "peak_rss": 1, '
     '"cgroup_peak": null, "wall_s": 1, "held": "yes"}]', "held='yes'"),
])
def test_a_bad_saved_row_is_refused_naming_the_file(text: str, says: str):
    with pytest.raises(LabError, match=says) as err:
        hc.parse_peaks(text, "results/x/chapters-light.json")
    assert str(err.value).startswith("results/x/chapters-light.json: row 0")
    assert "\n" not in str(err.value)


def test_a_student_without_a_results_file_is_reported_not_dropped():
    text, unread = hc.read_results(lambda path: None, hc.results_file("00_tour"))
    assert (text, unread) == (None, None)
    run = hc.chapter_run("00_tour", 40.0, text, unread)
    assert not run.passed and "wrote no results file (labs/results/00_tour.json)" in run.error
    row = hc.StudentChapter("ann", run)
    assert "ann" in hc.summary_table([row]) and "no results file" in row.note


def test_a_results_file_that_cannot_be_read_is_the_rows_reason():
    def broken(path: str) -> str | None:
        raise LabError(f"GET {path}: HTTP 502 bad gateway")

    text, unread = hc.read_results(broken, "labs/results/00_tour.json")
    assert text is None and unread.startswith("could not read labs/results/00_tour.json: "
                                              "LabError: GET")
    assert hc.chapter_run("00_tour", 3.0, text, unread).error == unread


def test_a_student_whose_chapters_never_ran_keeps_a_failed_row_each():
    rows = hc.never_ran("ben", ["00_tour", "02_at_least_once"], "login: HTTP 403")
    assert [(r.student, r.run.chapter, r.held, r.note) for r in rows] == [
        ("ben", "00_tour", False, "login: HTTP 403"),
        ("ben", "02_at_least_once", False, "login: HTTP 403")]
    assert hc.chapter_peaks(rows, 1)[0]["held"] is False
