"""What a known-wrong solution declares of itself, read without running it."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.errors import BadValue
from deliverylab.grade import EXERCISES
from deliverylab.grade.exercises import Declared, declared_failure


def test_a_declaration_reads_its_cell_and_its_point_if_any(tmp_path: Path):
    wrong = tmp_path / "wrong_x.py"
    wrong.write_text('"""doc"""\nEXPECTED_FAILURE = "crash_consumer x nothing_lost"\n'
                     'EXPECTED_POINT = "flush#2"\nraise SystemExit("never run")\n')
    assert declared_failure(wrong) == Declared("crash_consumer", "nothing_lost", "flush#2")
    wrong.write_text('EXPECTED_FAILURE = "none x exactly_once"\n')
    assert declared_failure(wrong) == Declared("none", "exactly_once", None)


@pytest.mark.parametrize("text", ['EXPECTED_FAILURE = "crash_consumer"\n', "x = 1\n"])
def test_a_missing_or_malformed_declaration_is_one_line_naming_it(tmp_path: Path, text):
    wrong = tmp_path / "wrong_x.py"
    wrong.write_text(text)
    with pytest.raises(BadValue, match=r"^EXPECTED_FAILURE=.* is not accepted; expected "
                                       r"'fault x property' in .*wrong_x\.py$"):
        declared_failure(wrong)


@pytest.mark.parametrize("exercise_id", sorted(EXERCISES))
def test_every_shipped_declaration_names_a_cell_and_a_searched_point_of_its_exercise(
        exercise_id: str):
    """The calibration grades a wrong solution at its declared point only: a point the
    grader does not search for that fault would grade nothing there."""
    ex = EXERCISES[exercise_id]
    for what, path in ex.wrong().items():
        d = declared_failure(path)
        assert d.fault in ex.faults, (what, d)
        assert d.prop in {p.name for p in ex.properties}, (what, d)
        if d.point is not None:
            assert d.point in {p.name for p in ex.points(d.fault) if p is not None}, (what, d)
