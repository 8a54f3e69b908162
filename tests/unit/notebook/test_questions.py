"""The course's questions: every outcome function on hand-written evidence."""

from __future__ import annotations

import pandas as pd
import pytest

from deliverylab.errors import LabError
from deliverylab.history import History
from deliverylab.notebook import params, questions
from deliverylab.notebook.chapter import Chapter, number


def test_every_question_has_a_concept_and_a_chapter_parameter():
    for q in questions.QUESTIONS.values():
        assert q.concept, q.name
        chapter = next(c for c in params.SPECS if number(c) == q.name.split("_", 1)[0])
        assert params.SPECS[chapter][q.parameter].question == q.name


def test_predict_binds_the_question_to_the_chapter():
    ch = Chapter("09_kafka_bugs", "claim")
    p = questions.predict(ch, "epoch", "same")
    assert p.question.name == "09_epoch" and p.chapter is ch and p.value == "same"


def test_a_committed_prediction_is_not_asked_again_when_its_cell_runs_again():
    ch = Chapter("05_spark_pipeline", "claim")
    first = questions.predict(ch, "replayed")
    assert questions.predict(ch, "replayed") is not first  # nothing committed: asked anew
    second = questions.predict(ch, "replayed")
    second.commit(10)
    assert questions.predict(ch, "replayed") is second and second.value == 10


def test_moved_partitions_are_those_whose_leader_changed():
    assert questions.moved_partitions({0: 1, 1: 2, 2: 1}, {0: 3, 1: 2, 2: 2}) == [0, 2]


def _send(h: History, value: str, t: float) -> None:
    h.record("producer-0", "send", "ok", [value], topic="t", partition=0, time=t)


def test_lost_phases_place_each_lost_value_by_when_it_was_acknowledged():
    h = History()
    _send(h, "producer-0:0", 1.0)
    h.record("nemesis", "fault", "info", fault="pause_followers", time=2.0)
    _send(h, "producer-0:1", 2.5)
    _send(h, "producer-0:2", 2.6)
    h.record("nemesis", "fault", "info", fault="kill_leader", time=3.0)
    _send(h, "producer-0:3", 3.01)  # the old leader, its SIGKILL on the way
    _send(h, "producer-0:4", 4.0)  # the new leader's first acknowledgement
    _send(h, "producer-0:5", 4.1)
    in_log = {"producer-0:0", "producer-0:2", "producer-0:4", "producer-0:5"}
    assert questions.lost_phases(h, "t", in_log) == ["while_paused"]
    assert questions.lost_phases(h, "t", in_log - {"producer-0:0", "producer-0:5"}) == [
        "before_pause", "while_paused", "after_kill"]
    assert questions.lost_phases(h, "t", in_log | {"producer-0:1", "producer-0:3"}) == []
    with pytest.raises(LabError, match="no pause_followers and kill_leader"):
        questions.lost_phases(History(), "t", set())


def _dump(rows):
    return pd.DataFrame(rows, columns=["offset", "producer_id", "producer_epoch", "sequence",
                                       "control", "marker"])


def test_restart_statements_from_a_dump():
    restarted = _dump([(0, 7, 0, 0, False, None), (1, 7, 0, 1, False, None),
                       (2, 8, 0, 0, False, None), (3, 8, 0, 1, False, None)])
    assert questions.restart_statements(restarted, 2) == ["two_ids", "restart_at_0",
                                                          "duplicates"]
    one = _dump([(0, 7, 0, 0, False, None), (1, 7, 0, 1, False, None)])
    assert questions.restart_statements(one, 0) == ["refused"]


def test_the_markers_and_epochs_on_disk():
    stale = _dump([(0, 5, 0, 0, False, None), (1, 5, 0, -1, True, "COMMIT"),
                   (2, 5, 0, 1, False, None), (3, 5, 0, -1, True, "COMMIT")])
    assert questions.markers(stale) == "two_commits" and questions.epochs(stale) == "same"
    fixed = _dump([(0, 5, 0, 0, False, None), (1, 5, 0, -1, True, "COMMIT"),
                   (2, 5, 1, 0, False, None), (3, 5, 1, -1, True, "ABORT")])
    assert questions.markers(fixed) == "commit_abort" and questions.epochs(fixed) == "bumped"
    assert questions.markers(_dump([])) == "other"


def test_the_cost_variants_ranked_from_the_rows():
    rows = [{"kind": "produce", "variant": v, "records_s": r, "e2e_p95_ms": e}
            for v, r, e in (("acks=0", 900, 20), ("txn 10ms", 300, 60),
                            ("txn 1000ms", 800, 1500), ("txn 50ms", 100, 9000))]
    rows.append({"kind": "ctp", "variant": "acks=1", "records_s": 1, "e2e_p95_ms": 1e6})
    assert questions.slowest_e2e(rows) == "txn 1000ms"  # txn 50ms: not a choice
    assert questions.lowest_throughput(rows) == "txn 10ms"
