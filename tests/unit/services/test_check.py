"""Counting side effects on hand-written evidence: no cluster, no database."""

from __future__ import annotations

from deliverylab.checker import extra_copies
from deliverylab.history import Op
from deliverylab.services.check import count_effects, twice


def test_extra_counts_copies_beyond_the_first():
    assert extra_copies([]) == 0
    assert extra_copies(["a", "b"]) == 0
    assert extra_copies(["a", "a", "a", "b", "b"]) == 3
    assert twice(["b", "a", "b", "a", "c"]) == ["a", "b"]


def _calls(*items):
    return [{"message_id": m, "effect": e} for m, e in items]


def test_a_redone_batch_makes_duplicate_rows_calls_and_effects():
    ids = ["o:0", "o:1", "o:2"]
    rows = ["o:0", "o:1", "o:0", "o:1", "o:2"]
    calls = _calls(("o:0", True), ("o:0", True), ("o:1", True), ("o:2", True))
    ops = [Op("i0", "poll", "ok", t, (m,)) for t, m in enumerate(
        ("o:0", "o:1", "o:0", "o:1", "o:2"))]
    ops.append(Op("i0", "fault", "info", 5.0, fault="kill_after_db"))
    e = count_effects("none", ids, rows, calls, ops)
    assert (e.rows, e.duplicate_rows, e.missing_rows) == (5, 2, 0)
    assert (e.calls, e.duplicate_calls, e.effects, e.duplicate_effects) == (4, 1, 4, 1)
    assert e.redelivered == 2 and e.faults == ["kill_after_db"] and e.duplicates == 3
    assert e.twice_rows == ["o:0", "o:1"] and e.twice_effects == ["o:0"]


def test_a_replayed_key_is_a_call_but_not_an_effect():
    e = count_effects("idempotent", ["o:0"], ["o:0"],
                      _calls(("o:0", True), ("o:0", False)), [])
    assert (e.duplicate_calls, e.duplicate_effects, e.duplicates) == (1, 0, 0)


def test_a_producer_duplicate_is_one_message_at_two_offsets():
    # The input holds o:1 twice; a consumer keyed by offset writes it twice.
    e = count_effects("offset_keyed", ["o:0", "o:1", "o:1"], ["o:0", "o:1", "o:1"],
                      _calls(("o:0", True), ("o:1", True), ("o:1", True)), [])
    assert e.messages == 2 and e.input_copies == 1
    assert e.duplicate_rows == 1 and e.duplicate_effects == 1


def test_missing_rows_and_effects_are_counted_not_hidden():
    e = count_effects("none", ["o:0", "o:1"], ["o:0"], _calls(("o:0", True)),
                      [Op("i0", "commit", "fail", 1.0, error="UNKNOWN_MEMBER_ID"),
                       Op("i1", "commit", "ok", 2.0)])
    assert e.missing_rows == 1 and e.missing_effects == 1 and e.rejected_commits == 1
    assert "1 missing" in e.summary() and e.as_dict()["duplicates"] == 0
