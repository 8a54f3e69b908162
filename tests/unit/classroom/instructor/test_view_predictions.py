"""The instructor's view of the class's predictions, from two students' results files
written by hand (as a chapter writes them: ``Chapter.to_dict`` with ``predictions``)."""

from __future__ import annotations

from pathlib import Path

from deliverylab.classroom.instructor import view as instructor

ANA_00 = """{"chapter": "00_tour", "claim": "c", "observed": {}, "pass": true, "seconds": 60,
 "checks": [{"what": "no acknowledged value is missing", "pass": true}],
 "predictions": [{"name": "00_moved", "question": "Which partitions move?", "kind": "set",
                  "predicted": [0], "actual": [0], "right": true, "source": "widget"}]}"""
BEN_00 = """{"chapter": "00_tour", "claim": "c", "observed": {}, "pass": true, "seconds": 61,
 "checks": [{"what": "no acknowledged value is missing", "pass": true}],
 "predictions": [{"name": "00_moved", "question": "Which partitions move?", "kind": "set",
                  "predicted": [0, 1, 2], "actual": [0], "right": false,
                  "source": "widget"}]}"""
ANA_09 = """{"chapter": "09_kafka_bugs", "claim": "c", "observed": {}, "pass": true,
 "seconds": 300, "checks": [{"what": "two COMMIT markers", "pass": true}],
 "predictions": [
  {"name": "09_markers", "question": "Which markers?", "kind": "choice",
   "predicted": "commit_abort", "actual": "two_commits", "right": false},
  {"name": "09_epoch", "question": "Same epoch?", "kind": "choice",
   "predicted": "same", "actual": "same", "right": true}]}"""
BEN_09 = """{"chapter": "09_kafka_bugs", "claim": "c", "observed": {}, "pass": true,
 "seconds": 280, "checks": [{"what": "two COMMIT markers", "pass": true}],
 "predictions": [
  {"name": "09_markers", "question": "Which markers?", "kind": "choice",
   "predicted": "commit_abort", "actual": "two_commits", "right": false},
  {"name": "09_epoch", "question": "Same epoch?", "kind": "choice",
   "predicted": "bumped", "actual": "same", "right": false}]}"""


def two_students(root: Path) -> list[Path]:
    files = {"ana/labs/results/00_tour.json": ANA_00,
             "ana/labs/results/09_kafka_bugs.json": ANA_09,
             "ben/results/00_tour.json": BEN_00,
             "ben/results/09_kafka_bugs.json": BEN_09}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return [root / "ana", root / "ben"]


def test_each_revealed_prediction_is_a_row_of_its_student(tmp_path: Path):
    c = instructor.collect(two_students(tmp_path))
    assert c.problems == []
    assert sorted((r["student"], r["prediction"], r["predicted"], r["right"])
                  for r in c.predictions) == [
        ("ana", "00_moved", "0", True), ("ana", "09_epoch", "same", True),
        ("ana", "09_markers", "commit_abort", False),
        ("ben", "00_moved", "0, 1, 2", False), ("ben", "09_epoch", "bumped", False),
        ("ben", "09_markers", "commit_abort", False)]


def test_the_table_counts_who_predicted_what_and_who_was_right(tmp_path: Path):
    table = instructor.prediction_counts(instructor.collect(two_students(tmp_path)))
    assert list(table.columns) == ["chapter", "prediction", "question", "predicted",
                                   "students", "right"]
    rows = [tuple(r) for r in table[["chapter", "prediction", "predicted", "students",
                                     "right"]].itertuples(index=False)]
    assert rows == [
        ("00_tour", "00_moved", "0", 1, 1),
        ("00_tour", "00_moved", "0, 1, 2", 1, 0),
        ("09_kafka_bugs", "09_epoch", "bumped", 1, 0),
        ("09_kafka_bugs", "09_epoch", "same", 1, 1),
        # both predicted it, both were wrong: the question the class should discuss
        ("09_kafka_bugs", "09_markers", "commit_abort", 2, 0)]


def test_results_without_predictions_count_nothing(tmp_path: Path):
    from .class_folders import make_class

    c = instructor.collect(make_class(tmp_path))
    assert c.predictions == [] and len(instructor.prediction_counts(c)) == 0


def test_predictions_of_the_wrong_shape_name_the_file(tmp_path: Path):
    bad = tmp_path / "eve/results/00_tour.json"
    bad.parent.mkdir(parents=True)
    bad.write_text(ANA_00.replace('"right": true, "source"', '"right": "yes", "source"'))
    c = instructor.collect([tmp_path / "eve"])
    assert c.chapters == [] and c.predictions == []
    [line] = c.problems
    assert line == (f"{bad}: 'predictions' that are not a list of "
                    "{'name', 'predicted', 'right'}")


def test_an_empty_set_reads_as_none():
    assert instructor.predicted_text([]) == "(none)"
    assert instructor.predicted_text(["two_ids", "duplicates"]) == "two_ids, duplicates"
    assert instructor.predicted_text(10) == "10"


def test_the_page_shows_the_prediction_table(tmp_path: Path):
    import pandas as pd

    collected = instructor.collect(two_students(tmp_path))
    empty = pd.DataFrame()
    view = instructor.ClassView(empty, empty, empty, pd.DataFrame(columns=["students"]),
                                collected, instructor.prediction_counts(collected))
    text = instructor.page(view)
    assert "<h2>Predictions: what the class predicted, and how many were right</h2>" in text
    table = text.split("how many were right</h2>")[1].split("</table>")[0]
    assert "commit_abort" in table and "Which markers?" in table
