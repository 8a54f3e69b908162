"""Exercise 06's payment half: the student's client, the crash right after its call, and
the judgement of the service's call log -- on the service's own CallLog in this process
(the HTTP transport stood in) and real SQLite; no cluster. What a graded run does on real
brokers is proved by tests/integration/grade's calibration."""

from __future__ import annotations

import json
import os
import sqlite3
import types
from pathlib import Path

import pytest

from deliverylab.grade.database import StudentDatabase
from deliverylab.grade.events import Events, KillPlan
from deliverylab.grade.exercises import exercise
from deliverylab.grade.http_call import Payments, effect_counts
from deliverylab.grade.search import CrashPoint
from deliverylab.history import History
from deliverylab.services.http import CallLog

SOLUTIONS_06 = Path(__file__).resolve().parents[3] / "solutions" / "06_idempotent_handler"
ORDER = {"order_id": "producer-0:7", "amount": 7}


class Died(BaseException):
    """Stands for the SIGKILL the plan sends its own process."""


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def dying(monkeypatch):
    def kill(pid, sig):
        raise Died()

    monkeypatch.setattr(os, "kill", kill)


def test_pay_records_the_call_then_counts_it_as_a_boundary(tmp_path: Path, dying):
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    plan = KillPlan(events, CrashPoint("http_call", 2), ("http_call", "db_commit"),
                    "kill_after_http")
    service = CallLog(tmp_path / "calls.jsonl")
    pay = Payments("", events, plan, "run-1", send=service.handle)
    assert pay.pay(ORDER, key="k") == {"payment": 1, "replayed": False}
    with pytest.raises(Died):  # killed right after the service answered the 2nd call
        pay.pay(ORDER, key="k")
    got = read(tmp_path / "e.jsonl")
    assert [(e["kind"], e.get("key"), e["detail"]) for e in got[:2]] == [
        ("http_call", "k", "Idempotency-Key 'k': payment 1"),
        ("http_call", "k", "Idempotency-Key 'k': payment 1 (replayed: no new payment)")]
    assert got[-1]["kind"] == "fault" and got[-1]["words"] == (
        "after your 2nd call to the payment service, before your 1st database commit")
    logged = read(tmp_path / "calls.jsonl")
    assert [(c["run"], c["message_id"], c["instance"], c["effect"]) for c in logged] == [
        ("run-1", "producer-0:7", "stage-0", True), ("run-1", "producer-0:7", "stage-0",
                                                     False)]


@pytest.mark.parametrize("key", [7, b"k", ""])
def test_pay_names_a_key_that_is_no_header_value(tmp_path: Path, key):
    pay = Payments("", Events(str(tmp_path / "e.jsonl"), "stage-0"),
                   send=CallLog(tmp_path / "c.jsonl").handle)
    with pytest.raises(ValueError, match=r"^key=.* is not accepted; expected a non-empty "
                       r"string"):
        pay.pay(ORDER, key=key)
    with pytest.raises(ValueError, match=r"^order=.* is not accepted"):
        pay.pay("producer-0:7")
    assert not (tmp_path / "c.jsonl").exists()  # nothing reached the service


def _handle(tmp_path: Path, solution: str, process: str, service: CallLog,
            where: tuple[str, int, int], point: CrashPoint | None = None) -> bool:
    """One instance handles ORDER's message (at ``where``) with the solution, killed at
    ``point``; True if it was killed. The database file and the service are the run's."""
    path = tmp_path / "effects.db"
    if not path.exists():
        with sqlite3.connect(path) as conn:
            conn.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
        conn.close()
    module = types.ModuleType("student")
    exec((SOLUTIONS_06 / solution).read_text(), module.__dict__)
    events = Events(str(tmp_path / f"{process}.jsonl"), process)
    plan = KillPlan(events, point, ("http_call", "db_commit"), "kill")
    db = StudentDatabase(sqlite3.connect(path, timeout=5), events, plan)
    try:
        if hasattr(module, "setup"):
            module.setup(db)
            db.commit()
        db.armed, db.count, db.message = True, 1, ORDER["order_id"]
        module.handle(db, ORDER["order_id"], dict(ORDER), where,
                      Payments("", events, plan, "run", send=service.handle))
    except Died:
        return True
    finally:
        db.close()
    return False


def _effects(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.jsonl"  # no log: nothing reached the service
    return [c["message_id"] for c in read(log) if c["effect"]] if log.exists() else []


CORRECT = sorted(p.name for p in SOLUTIONS_06.glob("*.py")
                 if p.name == "reference.py" or p.name.startswith("correct_"))


@pytest.mark.parametrize("kind", ["http_call", "db_commit"])
@pytest.mark.parametrize("solution", CORRECT)
def test_a_correct_handler_pays_once_when_killed_and_redelivered(tmp_path: Path, dying,
                                                                 solution, kind):
    # Killed right after its call (or its commit), the message is handled again by a
    # successor (same offset), then a producer's duplicate arrives (another offset).
    service = CallLog(tmp_path / "calls.jsonl")
    assert _handle(tmp_path, solution, "stage-0", service, ("in", 0, 7), CrashPoint(kind, 1))
    assert not _handle(tmp_path, solution, "stage-1", service, ("in", 0, 7))
    assert not _handle(tmp_path, solution, "stage-1", service, ("in", 0, 8))
    assert _effects(tmp_path) == ["producer-0:7"]


@pytest.mark.parametrize("solution", ["wrong_pay_no_key.py", "wrong_pay_uuid_key.py"])
def test_a_key_that_does_not_name_the_message_pays_twice_after_a_kill_after_the_call(
        tmp_path: Path, dying, solution):
    service = CallLog(tmp_path / "calls.jsonl")
    assert _handle(tmp_path, solution, "stage-0", service, ("in", 0, 7),
                   CrashPoint("http_call", 1))
    assert not _handle(tmp_path, solution, "stage-1", service, ("in", 0, 7))
    assert _effects(tmp_path) == ["producer-0:7"] * 2


def test_an_offset_key_pays_a_producers_duplicate_twice(tmp_path: Path, dying):
    service = CallLog(tmp_path / "calls.jsonl")
    solution = "wrong_pay_offset_key.py"
    assert _handle(tmp_path, solution, "stage-0", service, ("in", 0, 7),
                   CrashPoint("http_call", 1))
    assert not _handle(tmp_path, solution, "stage-1", service, ("in", 0, 7))
    assert _effects(tmp_path) == ["producer-0:7"]  # a redelivery: the same offset, key
    assert not _handle(tmp_path, solution, "stage-1", service, ("in", 0, 8))
    assert _effects(tmp_path) == ["producer-0:7"] * 2


def test_paying_after_the_commit_only_for_a_new_claim_never_pays_after_a_kill(
        tmp_path: Path, dying):
    service = CallLog(tmp_path / "calls.jsonl")
    solution = "wrong_pay_after_commit.py"
    assert _handle(tmp_path, solution, "stage-0", service, ("in", 0, 7),
                   CrashPoint("db_commit", 1))
    assert not _handle(tmp_path, solution, "stage-1", service, ("in", 0, 7))
    assert _effects(tmp_path) == []


def test_the_payment_solutions_name_the_cells_that_catch_them():
    ex = exercise("06")
    declared = {p.name: p.read_text().split('EXPECTED_FAILURE = "')[1].split('"')[0]
                for p in SOLUTIONS_06.glob("wrong_pay_*.py")}
    assert declared == {
        "wrong_pay_no_key.py": "kill_after_http x one_effect_each",
        "wrong_pay_uuid_key.py": "kill_after_http x one_effect_each",
        "wrong_pay_offset_key.py": "lose_ack x one_effect_each",
        "wrong_pay_after_commit.py": "kill_after_db x no_missing_effects"}
    names = {p.name for p in ex.properties}
    assert all(v.split(" x ")[0] in ex.faults and v.split(" x ")[1] in names
               for v in declared.values())


def test_effect_counts_judges_rows_and_the_services_log():
    # Rows against what the handler polled: a value polled twice and written twice is
    # redelivered and a duplicate row; one never written is missing. Payments: a call
    # the service applied twice (no key, or two keys) is a duplicate effect; a replay of
    # a known key is a call, not an effect; an order with no applied call is unpaid.
    history = History()
    a, b, c = "p-0:1", "p-0:2", "p-0:3"
    history.record("instance-0", "poll", "ok", [a, b])
    history.record("instance-1", "poll", "ok", [b, c])
    calls = [{"message_id": a, "effect": True}, {"message_id": a, "effect": True},
             {"message_id": b, "effect": True}, {"message_id": b, "effect": False}]
    counts: dict[str, int] = {}
    examples = effect_counts(counts, [a, b, c], [a, b, b], history, calls)
    assert counts == {"duplicate_rows": 1, "missing_rows": 1, "duplicate_effects": 1,
                      "missing_effects": 1, "http_calls": 4, "input_copies": 0,
                      "redelivered": 1}
    assert examples == {"duplicate_rows": [{"value": b}], "missing_rows": [{"value": c}],
                        "duplicate_effects": [{"value": a}],
                        "missing_effects": [{"value": c}]}
    # the exercise's properties read those counts
    ex = exercise("06")
    assert ex.prop("one_effect_each").holds(counts, "kill_after_http") is False
    assert ex.prop("no_missing_effects").holds(counts, "kill_after_db") is False
    assert ex.prop("one_effect_each").holds({"duplicate_effects": 0}, "none") is True
    assert ex.prop("no_missing_effects").holds({"missing_effects": 0}, "none") is True


def test_a_failing_effect_cell_s_excerpt_shows_each_call_of_the_value_with_its_key(
        tmp_path: Path):
    # The child's events as the parent turns them into History ops, and the report's
    # excerpt of a duplicate payment: both calls, their keys, and the kill between them.
    from deliverylab.grade.report import excerpt
    from deliverylab.grade.runner import Run, to_history

    v = ORDER["order_id"]
    events = [
        {"t": 1.0, "process": "stage-0", "kind": "poll", "values": [v], "topic": "in",
         "partition": 0, "offset": 7},
        {"t": 1.1, "process": "stage-0", "kind": "http_call", "values": [v], "message": v,
         "key": None, "detail": "no idempotency key: payment 8"},
        {"t": 1.2, "process": "stage-0", "kind": "fault", "fault": "kill_after_http",
         "outcome": "info", "detail": "stage-0 is SIGKILLed after your 1st call"},
        {"t": 2.0, "process": "stage-1", "kind": "poll", "values": [v], "topic": "in",
         "partition": 0, "offset": 7},
        {"t": 2.1, "process": "stage-1", "kind": "http_call", "values": [v], "message": v,
         "key": None, "detail": "no idempotency key: payment 9"}]
    history = History()
    to_history(events, history)
    assert [op.kind for op in history] == ["poll", "http_call", "fault", "poll", "http_call"]
    ex = exercise("06")
    counts = {"duplicate_effects": 1}
    run = Run("06", "kill_after_http", 1, counts, ex.verdicts("kill_after_http", counts),
              history=history, topics=("in", "out"),
              examples={"duplicate_effects": [{"value": v}]})
    lines = excerpt(run, ex.prop("one_effect_each"))
    assert lines[0] == f"value {v} (duplicate_effects):"
    calls = [ln for ln in lines if "http_call" in ln]
    assert len(calls) == 2 and all("no idempotency key" in ln for ln in calls)
    assert any("kill_after_http" in ln or "SIGKILLed" in ln for ln in lines)
