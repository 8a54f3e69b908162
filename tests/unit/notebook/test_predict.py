"""Predictions: committed once, refused before a commit, revealed part by part, recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.errors import BadValue, LabError
from deliverylab.notebook.chapter import Chapter
from deliverylab.notebook.predict import Prediction, PredictionMissing, Question, compare, reveal

NUMBER = Question("05_replayed", "How many records twice?", "number", concept="offsets/N.")
CHOICE = Question("09_epoch", "Same epoch?", "choice",
                  (("same", "the same epoch"), ("bumped", "a higher epoch")),
                  concept="protocol 1 keeps one epoch.",
                  why={"same": "one epoch per session.", "bumped": "protocol 2 does this."})
SET = Question("00_moved", "Which partitions move?", "set",
               tuple((p, f"partition {p}") for p in range(4)), concept="per-partition leaders.")


def test_the_parameter_is_the_chapters_name_for_it():
    assert SET.parameter == "predict_moved" and NUMBER.parameter == "predict_replayed"


def test_a_reveal_refuses_in_one_line_until_a_prediction_is_committed():
    p = Prediction(NUMBER)
    with pytest.raises(PredictionMissing) as refused:
        reveal(p, 10)
    assert "\n" not in str(refused.value)
    assert "commit your prediction first" in str(refused.value)
    assert "-p predict_replayed" in str(refused.value)
    assert not p.revealed
    assert refused.value._render_traceback_() == [f"PredictionMissing: {refused.value}"]


def test_a_parameter_commits_at_once_and_locks_the_widget():
    p = Prediction(SET, [2, 0], choices=range(3))
    assert p.committed and p.value == [0, 2] and p.source == "parameter"
    assert p.button.disabled and all(box.disabled for box in p.inputs[0].children)
    assert "committed (the run's parameter): partition 0, partition 2" in p.status_text
    with pytest.raises(LabError, match="already committed"):
        p.commit([1])


def test_the_commit_button_reads_the_widget_and_shows_bad_input_under_it():
    p = Prediction(NUMBER)
    p.inputs[0].value = "ten"
    p.button.click()
    assert not p.committed
    assert "predict_replayed='ten' is not accepted; expected a number" in p.status_text
    p.inputs[0].value = "10"
    p.button.click()
    assert p.value == 10 and p.source == "widget"


def test_a_choice_and_a_set_from_the_widget():
    choice = Prediction(CHOICE)
    choice.button.click()
    assert not choice.committed and "pick one first" in choice.status_text
    choice.inputs[0].value = "bumped"
    choice.button.click()
    assert choice.value == "bumped"
    moved = Prediction(SET, choices=range(3))
    assert [b.description for b in moved.inputs[0].children] == [
        "partition 0", "partition 1", "partition 2"]
    moved.inputs[0].children[1].value = True
    moved.button.click()
    assert moved.value == [1]


def test_bad_values_are_named_with_what_is_accepted():
    with pytest.raises(BadValue, match=r"predict_epoch='maybe' is not accepted; expected "
                                       r"one of 'same', 'bumped'"):
        Prediction(CHOICE, "maybe")
    with pytest.raises(BadValue, match="predict_moved item=3 is not accepted"):
        Prediction(SET, [3], choices=range(3))
    with pytest.raises(BadValue, match="expected a number"):
        Prediction(NUMBER, True)


def test_a_number_says_how_far_off_and_gives_the_concept():
    wrong = compare(NUMBER, 5, 10)
    assert not wrong.right and wrong.parts == [("the number",
                                                "the run gave 5 more than you said")]
    assert "The idea: offsets/N." in str(wrong)
    assert "verdict: not what happened" in str(wrong)
    assert "verdict: 2 of 4 parts right" in str(compare(SET, [0, 1], [0, 2], choices=range(4)))
    assert compare(NUMBER, 10, 10).right
    assert compare(Question("x_y", "?", "number", tolerance=1), 9, 10).right


def test_a_wrong_choice_meets_why_both_outcomes_are_what_they_are():
    shown = compare(CHOICE, "bumped", "same")
    assert not shown.right
    text = shown._repr_markdown_()
    assert "**the same epoch** (what happened): one epoch per session." in text
    assert "**a higher epoch** (your prediction): protocol 2 does this." in text
    assert "**The idea.** protocol 1 keeps one epoch." in text


def test_a_set_says_which_part_was_right():
    shown = compare(SET, [0, 1], [0, 2], choices=range(4))
    assert not shown.right
    assert shown.parts == [("partition 0", "right: you said so, and it happened"),
                           ("partition 1", "not so: you predicted it, it did not happen"),
                           ("partition 2", "missed: it happened, you did not predict it")]
    assert (shown.parts_right, shown.parts_total) == (2, 4)  # 0 in both, 3 in neither
    assert compare(SET, [], [], choices=range(4)).right


def test_a_reveal_is_recorded_in_the_chapters_results_file(tmp_path: Path):
    chapter = Chapter("00_tour", "claim", tmp_path / "00.json")
    p = Prediction(SET, [0], chapter=chapter, choices=range(3))
    shown = reveal(p, [0, 1])
    assert p.revealed and "see what differed" in p.status_text
    chapter.expect("held", True)
    chapter.finish()
    [entry] = json.loads((tmp_path / "00.json").read_text())["predictions"]
    assert entry == {"name": "00_moved", "question": "Which partitions move?", "kind": "set",
                     "predicted": [0], "actual": [0, 1], "right": False, "parts_right": 2,
                     "parts": 3, "source": "parameter"}
    assert shown.to_dict()["right"] is False


def test_an_actual_outcome_outside_the_question_is_a_bug_named_in_one_line():
    p = Prediction(CHOICE, "same")
    with pytest.raises(BadValue, match="actual outcome of 09_epoch='third'"):
        reveal(p, "third")


def test_papermill_sees_the_question_and_the_state_as_text():
    p = Prediction(CHOICE, "same")
    text = p._repr_mimebundle_()["text/plain"]
    assert text == ("Predict first: Same epoch?\ncommitted (the run's parameter): the same "
                    "epoch. Now run the next cells.")
