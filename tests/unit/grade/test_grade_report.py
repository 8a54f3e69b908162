"""The grader's parent side without brokers: events -> History, properties, report.

Histories and reads here are hand-written, as the checker's own unit tests are: what a
stage that committed before processing and then died would have recorded.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from deliverylab import checker as C
from deliverylab.errors import BadValue
from deliverylab.grade import exercise
from deliverylab.grade.report import Report, excerpt, replay_command
from deliverylab.grade.runner import Run, to_history
from deliverylab.history import History, Read

EX = exercise("02")
IN, OUT = "in-x", "out-x"


def events_commit_before_then_killed() -> list[dict]:
    """stage-0 polls 3 values, commits past them, writes one, is killed; stage-1 finds
    nothing left to read."""
    t = time.monotonic() - 5
    e = []
    for i in range(3):
        e.append({"t": t + 0.1 * i, "process": "stage-0", "kind": "poll",
                  "values": [f"producer-0:{i}"], "topic": IN, "partition": 0, "offset": i})
    e.append({"t": t + 0.5, "process": "stage-0", "kind": "commit", "outcome": "ok",
              "detail": f"{IN}/0@3"})
    e.append({"t": t + 0.6, "process": "stage-0", "kind": "handed",
              "values": ["producer-0:0"], "topic": OUT})
    e.append({"t": t + 0.7, "process": "stage-0", "kind": "send", "outcome": "ok",
              "values": ["producer-0:0"], "topic": OUT, "partition": 0, "offset": 0})
    e.append({"t": t + 0.8, "process": "stage-0", "kind": "handed",
              "values": ["producer-0:1"], "topic": OUT})
    e.append({"t": t + 0.9, "process": "stage-0", "kind": "fault", "fault": "crash_consumer",
              "outcome": "info", "detail": "stage-0 is SIGKILLed"})
    return e


def history_and_reads() -> tuple[History, list[Read]]:
    h = History()
    for i in range(3):
        h.record("producer-0", "send", "ok", [f"producer-0:{i}"], topic=IN, partition=0,
                 offset=i)
    to_history(events_commit_before_then_killed(), h)
    reads = [Read(IN, 0, i, f"producer-0:{i}") for i in range(3)]
    reads.append(Read(OUT, 0, 0, "producer-0:0"))
    return h, reads


def a_run(fault: str = "crash_consumer", seed: int = 1) -> Run:
    h, reads = history_and_reads()
    result = C.check(h, reads, C.ANOMALIES, pipeline=(IN, OUT))
    counts = {"unfinished": 0, "fault_missed": 0, **result.counts}
    passed = {p.name: p.holds(counts, fault) for p in EX.properties}
    return Run("02", fault, seed, counts, passed, result, h, (IN, OUT), 8.0,
               positions={"producer-0:2": ["input/0@2"]})


def test_events_become_ops_and_a_handed_value_never_reported_is_info():
    h, _ = history_and_reads()
    sends = [op for op in h if op.kind == "send" and op.topic == OUT]
    assert [(op.values, op.outcome) for op in sends] == [(("producer-0:0",), "ok"),
                                                          (("producer-0:1",), "info")]
    assert [op.kind for op in h if op.process == "stage-0"][:4] == ["poll"] * 3 + ["commit"]
    assert h.faults()[0].fault == "crash_consumer"


def test_commit_before_processing_fails_nothing_lost_only():
    run = a_run()
    # :1 was handed to the producer, never reported, not in the log; :2 never written
    assert run.counts["pipeline_missing"] == 2
    assert run.passed == {"nothing_lost": False, "one_batch_redone": True, "finishes": True}


def test_redo_budget_is_one_batch_under_a_fault_zero_without_and_exact_after_a_crash():
    prop = EX.prop("one_batch_redone")
    assert prop.holds({"pipeline_extra": 10}, "crash_consumer")
    assert not prop.holds({"pipeline_extra": 11}, "crash_consumer")
    assert not prop.holds({"pipeline_extra": 1}, "none")
    assert prop.holds({"pipeline_extra": 10}, "lose_ack")
    # one value redone that was committed before the kill: an off-by-one commit
    assert not prop.holds({"pipeline_extra": 1, "redo_beyond": 1}, "crash_consumer")


def test_excerpt_shows_the_value_its_covering_commit_and_the_crash():
    lines = excerpt(a_run(), EX.prop("nothing_lost"))
    text = "\n".join(lines)
    assert lines[0] == "value producer-0:1 (pipeline_missing):"
    assert "poll   ok   producer-0:1 at input/0@1" in text
    assert "send   info producer-0:1" in text and "never reported" in text
    assert "commit ok    input/0@3" in text
    assert "SIGKILLed" in text
    assert IN not in text  # topics by their role
    assert lines[-1] == "  read back afterwards: nowhere"  # the reads held no copy of it


def test_a_cell_may_carry_a_sharper_hint_for_one_fault():
    prop = EX.prop("one_batch_redone")
    assert prop.hint_for("lose_ack") != prop.hint_for("crash_consumer") == prop.hint


def test_report_table_replay_hint_closing_line_and_json(tmp_path: Path):
    runs = [a_run(seed=1), a_run(seed=2), a_run("none", 1)]
    solution = tmp_path / "mine.py"
    solution.write_text("def consume_loop(c, p, o, r): pass\n")
    report = Report(EX, solution, runs, 20.0)
    text = str(report)
    assert "crash_consumer  0/2 FAIL" in text
    assert report.cell("none", "one_batch_redone").passed == 1  # judged per fault
    assert replay_command(EX, solution, "crash_consumer", 1) in text
    assert EX.prop("nothing_lost").hint in text
    assert text.splitlines()[-1] == report.closing() == "4 passed, 2 failed"
    data = json.loads(report.save(tmp_path / "r.json").read_text())
    assert data["passed"] == 4 and data["failed"] == 2
    assert {c["fault"] for c in data["cells"]} == {"crash_consumer", "none"}
    crash = [f for f in data["failures"] if f["fault"] == "crash_consumer"]
    assert crash[0]["failing_seeds"] == [1, 2] and crash[0]["property"] == "nothing_lost"
    assert len(data["solution_sha256"]) == 64


def test_the_json_carries_each_runs_crash_point_per_cell(tmp_path: Path):
    from dataclasses import replace

    words = "after your 1st offset commit, before your 2nd poll"
    runs = [replace(a_run(seed=1), point="commit#1", crash=words),
            replace(a_run(seed=1), point="flush#2", crash="after your 2nd flush",
                    passed={p.name: True for p in EX.properties}),
            replace(a_run("none", 1), passed={**a_run("none", 1).passed,
                                               "nothing_lost": None})]
    solution = tmp_path / "mine.py"
    solution.write_text("def consume_loop(c, p, o, r): pass\n")
    data = Report(EX, solution, runs).to_dict()
    cells = {(c["fault"], c["property"]): c["points"] for c in data["cells"]}
    assert cells["crash_consumer", "nothing_lost"] == [
        {"seed": 1, "point": "commit#1", "crash": words, "failed": True, "judged": True},
        {"seed": 1, "point": "flush#2", "crash": "after your 2nd flush", "failed": False,
         "judged": True}]
    assert cells["none", "nothing_lost"] == [
        {"seed": 1, "point": "", "crash": "", "failed": False, "judged": False}]


def test_bad_exercise_or_solution_is_one_line():
    from deliverylab.grade import _solution

    with pytest.raises(BadValue, match="exercise='99' is not accepted"):
        exercise("99")
    with pytest.raises(BadValue, match="solution='nope.txt' is not accepted"):
        _solution(EX, "nope.txt")


def test_every_exercise_ships_a_starter_a_reference_and_three_wrong_solutions():
    from deliverylab.grade import EXERCISES

    for ex in EXERCISES.values():
        assert ex.starter.is_file() and ex.reference.is_file()
        assert len(ex.wrong()) >= 3
        for path in [ex.starter, ex.reference, *ex.wrong().values()]:
            assert f"def {ex.function}(" in path.read_text()


def test_transactional_events_keep_their_transaction():
    h = History()
    t = time.monotonic()
    to_history([
        {"t": t, "process": "stage-0", "kind": "begin_txn", "outcome": "ok",
         "txn": "stage-0/txn-1"},
        {"t": t + 0.1, "process": "stage-0", "kind": "handed", "values": ["producer-0:3"],
         "topic": OUT, "txn": "stage-0/txn-1"},
        {"t": t + 0.2, "process": "stage-0", "kind": "fault", "fault": "crash_consumer",
         "outcome": "info"}], h)
    sends = [op for op in h if op.kind == "send"]
    assert [(op.outcome, op.txn) for op in sends] == [("info", "stage-0/txn-1")]
    # a transaction that never committed is aborted: its value is not expected anywhere
    assert C.txn_fates(h) == {"stage-0/txn-1": "aborted"}


def test_a_spark_commit_labelled_with_its_batch_covers_the_reads_before_its_offsets():
    from deliverylab.grade.report import _covers
    from deliverylab.history import Op

    op = Op("driver-0", "commit", "ok", 1.0, detail="commits/3 in-x/0@12,in-x/1@9")
    assert _covers(op, "in-x", 0, 11) and _covers(op, "in-x", 1, 8)
    assert not _covers(op, "in-x", 0, 12) and not _covers(op, "in-x", 2, 0)


def test_a_runs_reason_is_its_errors_last_line_not_a_callbacks_note():
    from deliverylab.grade.report import last_words

    kept = ("Traceback (most recent call last):\n  File \"loop.py\", line 7, in report\n"
            "AttributeError: 'NoneType' object has no attribute 'code'\n"
            "(raised in your on_commit callback, which librdkafka called from inside "
            "consumer.close())\n")
    assert last_words(kept) == "AttributeError: 'NoneType' object has no attribute 'code'"
    assert last_words("timed out\n") == "timed out"
    assert last_words("(only a note)") == "(only a note)"
    assert last_words("") == ""
