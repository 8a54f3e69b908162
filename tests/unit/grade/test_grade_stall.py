"""Where the overlap faults stop the student's process, by count: 04's transaction loop
before its n-th commit_transaction (held first, as long as its consumer's own timers
take), with stand-in clients and no signal really sent (no delivery claim here: the
zombie's fate is judged on real brokers in tests/integration/grade)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from deliverylab.grade import stall as S
from deliverylab.grade.child import Events, KillPlan, StudentProducer
from deliverylab.history import read_json_lines


@pytest.mark.parametrize("conf, seconds", [
    ({"enable.auto.commit": False}, S.HOLD_MIN),
    ({"enable.auto.commit": "false"}, S.HOLD_MIN),
    ({}, 6.0),  # librdkafka's default: auto-commit on, every 5 s
    ({"enable.auto.commit": True}, 6.0),
    ({"enable.auto.commit": "true", "auto.commit.interval.ms": 1000}, 2.0),
    ({"enable.auto.commit": True, "auto.commit.interval.ms": "100"}, 1.1),
    ({"enable.auto.commit": True, "auto.commit.interval.ms": 60000}, S.HOLD_CAP),
])
def test_the_hold_lasts_one_auto_commit_interval_when_the_consumer_commits_itself(
        conf, seconds):
    assert S.hold_seconds(conf) == pytest.approx(seconds)


def test_the_hold_stays_below_the_modes_max_poll_interval():
    """Past max.poll.interval.ms the consumer would leave the group on its own: the
    stall would be another fault (and a consumer with auto-commit commits on leaving)."""
    from deliverylab.modes import TRANSACTIONAL

    assert S.HOLD_CAP * 1000 < TRANSACTIONAL.consumer["max.poll.interval.ms"]


class TxnProducer:
    """A stand-in transactional producer: records its calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit")


def read(path: Path) -> list[dict]:
    return list(read_json_lines(path).records)


def test_the_zombie_stall_holds_then_stops_before_the_planned_commit_transaction(
        tmp_path: Path, monkeypatch):
    sent: list[tuple[int, str]] = []
    held: list[float] = []
    calls: list[str] = []
    inner = TxnProducer()
    inner.calls = calls
    monkeypatch.setattr(S.os, "kill", lambda pid, sig: (sent.append(sig),
                                                         calls.append("SIGSTOP")))
    monkeypatch.setattr(S.time, "sleep", lambda s: (held.append(s), calls.append("hold")))
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    producer = StudentProducer(inner, events, KillPlan(events),
                               S.TxnStall(events, 2, hold=6.0))
    for _ in range(3):
        producer.begin_transaction()
        producer.commit_transaction(30)
    # held, stopped, then (resumed) its commit goes on: the broker fences it, not the lab
    assert calls == ["begin", "commit", "begin", "hold", "SIGSTOP", "commit", "begin",
                     "commit"]
    assert sent == [signal.SIGSTOP] and held == [6.0]
    got = [e for e in read(tmp_path / "e.jsonl")
           if e["kind"] in ("held", "fault", "resumed")]
    assert [e["kind"] for e in got] == ["held", "fault", "resumed"]
    assert got[1]["fault"] == "zombie_producer"
    assert got[1]["words"].startswith("stalled before your 2nd commit_transaction")
    # the stall sits inside the open transaction: txn-2 began and has not ended
    kinds = [(e["kind"], e.get("txn")) for e in read(tmp_path / "e.jsonl")]
    assert kinds.index(("begin_txn", "stage-0/txn-2")) < kinds.index(("fault", None))
    assert kinds.index(("fault", None)) < kinds.index(("commit_txn", "stage-0/txn-2"))


def test_the_zombie_stall_never_fires_on_other_calls_nor_twice(tmp_path: Path, monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr(S.os, "kill", lambda pid, sig: sent.append(sig))
    monkeypatch.setattr(S.time, "sleep", lambda s: None)
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    stall = S.TxnStall(events, 1)
    stall.before("send_offsets", 1)
    assert sent == [] and not stall.fired
    stall.before("commit_transaction", 1)
    stall.before("commit_transaction", 1)
    assert sent == [signal.SIGSTOP] and stall.fired
