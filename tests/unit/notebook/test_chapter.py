"""Chapter verdicts, "what you saw" and self-checks, without a cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.checker import check
from deliverylab.history import History, Read
from deliverylab.notebook.chapter import Chapter, Saw, self_check, what_you_saw

# --- the results file --------------------------------------------------------------------


def test_chapter_writes_its_results_file_and_passes(tmp_path):
    path = tmp_path / "out" / "02.json"
    ch = Chapter("02_at_least_once", "A lost ack makes a duplicate.", path)
    ch.observe(duplicates=2, pressed=["Lose an ack"])
    assert ch.expect("a lost ack made a duplicate", 2 >= 1)
    record = ch.finish()
    saved = json.loads(path.read_text())
    assert saved == record
    assert saved["chapter"] == "02_at_least_once" and saved["pass"] is True
    assert saved["observed"] == {"duplicates": 2, "pressed": ["Lose an ack"]}
    assert saved["checks"] == [{"what": "a lost ack made a duplicate", "pass": True}]
    assert isinstance(saved["seconds"], float)


def test_a_failed_claim_is_written_first_then_raised(tmp_path):
    path = tmp_path / "03.json"
    ch = Chapter("03_idempotent_producer", "No duplicate.", path)
    ch.expect("no duplicate", False)
    ch.expect("nothing lost", True)
    with pytest.raises(AssertionError, match="the claim did not hold: no duplicate"):
        ch.finish()
    saved = json.loads(path.read_text())
    assert saved["pass"] is False
    assert [c["pass"] for c in saved["checks"]] == [False, True]


def test_a_chapter_without_checks_fails(tmp_path):
    ch = Chapter("x", "claim", tmp_path / "x.json")
    with pytest.raises(AssertionError, match="no check"):
        ch.finish()
    assert json.loads((tmp_path / "x.json").read_text())["pass"] is False


# --- "what you saw" and self-checks ---------------------------------------------------------


def _result_with_a_duplicate():
    h = History()
    h.record("p", "send", "ok", ["p:0"], topic="t", partition=0, offset=0)
    reads = [Read("t", 0, 0, "p:0"), Read("t", 0, 1, "p:0")]
    return check(h, reads, allowed={"duplicates"})


def test_what_you_saw_is_generated_from_results():
    result = _result_with_a_duplicate()
    saw = what_you_saw(lost_ack=result, note="2 copies")
    assert isinstance(saw, Saw)
    text = str(saw)
    assert "lost ack: " + result.summary() in text
    assert "note: 2 copies" in text
    assert "1 value was stored more than once" in saw._repr_markdown_()


def test_self_check_never_shows_the_expected_value(capsys):
    self_check(3, 3, "the count")
    assert capsys.readouterr().out == "Correct: that is the count.\n"
    with pytest.raises(AssertionError, match="set `answer`"):
        self_check(None, 3, "the count")
    with pytest.raises(AssertionError) as wrong:
        self_check(2, 3, "the count", "look")
    assert str(wrong.value) == "answer=2 is not the count. Hint: look"
    assert "3" not in str(wrong.value)


def test_a_revealed_prediction_is_in_the_results_file(tmp_path: Path):
    ch = Chapter("00_tour", "claim", tmp_path / "r.json")
    ch.record_prediction({"name": "00_moved", "predicted": [0], "actual": [0], "right": True})
    ch.record_prediction({"name": "00_moved", "predicted": [1], "actual": [0], "right": False})
    ch.expect("x", True)
    ch.finish()
    saved = json.loads((tmp_path / "r.json").read_text())
    assert saved["predictions"] == [{"name": "00_moved", "predicted": [1], "actual": [0],
                                     "right": False}]


# --- schedules -------------------------------------------------------------------------------
