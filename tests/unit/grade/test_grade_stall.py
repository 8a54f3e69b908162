"""Where the overlap faults stop the student's process, by count: 04's transaction loop
before its n-th commit_transaction (held first, until its consumer's auto-commit timer
has committed what it has to), with stand-in clients and no signal really sent (no
delivery claim here: the zombie's fate is judged on real brokers in
tests/integration/grade)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from deliverylab.grade import stall as S
from deliverylab.grade.child import StudentProducer
from deliverylab.grade.events import Events, KillPlan
from deliverylab.history import read_json_lines


@pytest.mark.parametrize("conf, auto", [
    ({"enable.auto.commit": False}, False),
    ({"enable.auto.commit": "false"}, False),
    ({"enable.auto.commit": 0}, False),
    ({}, True),  # librdkafka's default: auto-commit on
    ({"enable.auto.commit": True}, True),
    ({"enable.auto.commit": "true"}, True),
])
def test_a_consumer_auto_commits_as_librdkafka_reads_its_setting(conf, auto):
    assert S.auto_commits(conf) is auto


def test_the_hold_stays_below_the_modes_max_poll_interval():
    """Past max.poll.interval.ms the consumer would leave the group on its own: the
    stall would be another fault (and a consumer with auto-commit commits on leaving).
    And above librdkafka's default auto-commit interval (5 s): a timer fires within."""
    from deliverylab.modes import TRANSACTIONAL

    assert 5.0 < S.HOLD_CAP
    # each read of the group's offsets is bounded by what is left of the cap
    assert (S.HOLD_CAP + 1.0) * 1000 < TRANSACTIONAL.consumer["max.poll.interval.ms"]


class Assigned:
    """A stand-in consumer: its assignment and positions (-1001: nothing fetched)."""

    def __init__(self, positions: dict[int, int]) -> None:
        self.positions = positions

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition("in", p) for p in sorted(self.positions)]

    def position(self, parts: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions[tp.partition])
                for tp in parts]


class Group:
    """A stand-in for the group's offsets: ``landing[i]`` is what the i-th read sees
    (the last one from then on); a ``KafkaException`` in it is raised, as a read that
    timed out."""

    def __init__(self, landing: list) -> None:
        self.landing, self.reads, self.asked, self.closed = landing, 0, [], False

    def __call__(self, parts: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        seen = self.landing[min(self.reads, len(self.landing) - 1)]
        self.reads += 1
        self.asked.append(([(tp.topic, tp.partition) for tp in parts], timeout))
        if isinstance(seen, Exception):
            raise seen
        return [TopicPartition(tp.topic, tp.partition, seen.get(tp.partition, -1001))
                for tp in parts]

    def close(self) -> None:
        self.closed = True


def test_the_timer_is_to_commit_the_position_or_what_the_loop_stored():
    consumer = Assigned({0: 14, 1: -1001, 2: 9})
    assert S.TimerCommit(consumer, Group([{}])).due() == {("in", 0): 14, ("in", 2): 9}
    stored = {("in", 0): 10}
    assert S.TimerCommit(consumer, Group([{}]), stored).due() == {("in", 0): 10}


def test_the_timer_and_its_reader_follow_the_students_settings():
    consumer = Assigned({0: 14})
    assert S.timer_commit(consumer, "b:9092", {"enable.auto.commit": False,
                                               "group.id": "g"}, {}) is None
    timer = S.timer_commit(consumer, "b:9092", {"group.id": "g"}, {("in", 0): 3})
    assert timer is not None and timer.due() == {("in", 0): 14}  # auto store: position
    timer = S.timer_commit(consumer, "b:9092", {"group.id": "g", "enable.auto.offset.store":
                                                "false"}, {("in", 0): 3})
    assert timer is not None and timer.due() == {("in", 0): 3}  # the loop's store
    # The group's offsets are read read_uncommitted, by the group's id: a read_committed
    # read asks for stable offsets, refused while the held transaction's are pending.
    reader = timer.committed
    assert isinstance(reader, S.GroupOffsets)
    assert reader.conf["isolation.level"] == "read_uncommitted"
    assert reader.conf["group.id"] == "g" and reader.conf["bootstrap.servers"] == "b:9092"
    reader.close()  # never opened: nothing to close, no connection made


def test_the_wait_ends_when_every_partition_has_what_the_timer_commits():
    group = Group([{0: 10, 2: 5}, {0: 14, 2: 5}, {0: 14, 2: 9}])
    timer = S.TimerCommit(Assigned({0: 14, 2: 9}), group)
    assert timer.wait(timer.due(), cap=5.0) is True
    assert group.reads == 3  # not before the last partition had it
    assert timer.last == {("in", 0): 14, ("in", 2): 9}
    assert all(parts == [("in", 0), ("in", 2)] and 0 < t <= S.READ_WITHIN
               for parts, t in group.asked)


def test_a_commit_past_what_is_due_covers_it_and_nothing_due_is_no_wait():
    group = Group([{0: 20}])
    assert S.TimerCommit(Assigned({0: 14}), group).wait({("in", 0): 14}, cap=5.0)
    idle = Group([{}])
    assert S.TimerCommit(Assigned({0: -1001}), idle).wait({}, cap=5.0)
    assert idle.reads == 0


def test_a_timer_that_never_commits_ends_the_wait_at_its_cap_and_a_failed_read_is_retried():
    timed_out = KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))
    group = Group([timed_out, {0: 10}])
    timer = S.TimerCommit(Assigned({0: 14}), group)
    assert timer.wait(timer.due(), cap=0.5) is False
    assert group.reads >= 3 and timer.last == {("in", 0): 10}


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


def test_the_zombie_stall_holds_until_the_timer_committed_then_stops_before_the_commit(
        tmp_path: Path, monkeypatch):
    sent: list[tuple[int, str]] = []
    calls: list[str] = []
    inner = TxnProducer()
    inner.calls = calls
    monkeypatch.setattr(S.os, "kill", lambda pid, sig: (sent.append(sig),
                                                         calls.append("SIGSTOP")))
    monkeypatch.setattr(S.time, "sleep", lambda s: None)  # wait_until's rounds: instant

    class Landing(Group):
        def __call__(self, parts, timeout):
            calls.append("read")
            return super().__call__(parts, timeout)

        def close(self):
            calls.append("close")

    group = Landing([{0: 10}, {0: 10}, {0: 14}])  # the timer's commit lands at read 3
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    producer = StudentProducer(inner, events, KillPlan(events),
                               S.TxnStall(events, 2, S.TimerCommit(Assigned({0: 14}), group)))
    for _ in range(3):
        producer.begin_transaction()
        producer.commit_transaction(30)
    # held until the group had the position, the reader closed, stopped, then (resumed)
    # its commit goes on: the broker fences it, not the lab
    assert calls == ["begin", "commit", "begin", "read", "read", "read", "close", "SIGSTOP",
                     "commit", "begin", "commit"]
    assert sent == [signal.SIGSTOP]
    got = [e for e in read(tmp_path / "e.jsonl")
           if e["kind"] in ("held", "fault", "resumed")]
    assert [e["kind"] for e in got] == ["held", "fault", "resumed"]
    assert got[0]["awaited"] == "in/0@14"
    assert got[1]["fault"] == "zombie_producer" and got[1]["hold"] == "committed"
    assert 0 <= got[1]["held_s"] < 1 and "in/0@14" in got[1]["detail"]
    assert got[1]["words"].startswith("stalled before your 2nd commit_transaction")
    # the stall sits inside the open transaction: txn-2 began and has not ended
    kinds = [(e["kind"], e.get("txn")) for e in read(tmp_path / "e.jsonl")]
    assert kinds.index(("begin_txn", "stage-0/txn-2")) < kinds.index(("fault", None))
    assert kinds.index(("fault", None)) < kinds.index(("commit_txn", "stage-0/txn-2"))


def test_a_hold_whose_timer_never_commits_ends_at_the_cap_and_says_so(tmp_path: Path,
                                                                      monkeypatch):
    monkeypatch.setattr(S.os, "kill", lambda pid, sig: None)
    monkeypatch.setattr(S, "HOLD_CAP", 0.3)
    group = Group([{0: 10}])
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    stall = S.TxnStall(events, 1, S.TimerCommit(Assigned({0: 14}), group))
    stall.before("commit_transaction", 1)
    fault = next(e for e in read(tmp_path / "e.jsonl") if e["kind"] == "fault")
    assert fault["hold"] == "cap" and fault["held_s"] >= 0.3 and group.closed
    assert "in/0@10" in fault["detail"]  # what the group had when the hold ended


def test_with_no_auto_commit_the_hold_is_the_fixed_minimum(tmp_path: Path, monkeypatch):
    held: list[float] = []
    monkeypatch.setattr(S.os, "kill", lambda pid, sig: None)
    monkeypatch.setattr(S.time, "sleep", held.append)
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    S.TxnStall(events, 1).before("commit_transaction", 1)
    assert held == [S.HOLD_MIN]
    fault = next(e for e in read(tmp_path / "e.jsonl") if e["kind"] == "fault")
    assert fault["hold"] == "no_timer"


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


def test_a_real_consumers_timer_commit_is_awaited_through_the_groups_offsets():
    """librdkafka's own timer and the lab's reader of the group's offsets, against
    librdkafka's in-process mock cluster (bench/client_callbacks.py): the wait ends
    when the timer has committed the consumer's position, well inside the cap. (The
    mock has no pending transactional offsets: why the reader is read_uncommitted is
    shown on real brokers, by exercise 04's calibration.)"""
    import importlib.util
    import time

    from confluent_kafka import Consumer, Producer

    from deliverylab.clients import close_consumer, config

    path = Path(__file__).resolve().parents[3] / "bench" / "client_callbacks.py"
    spec = importlib.util.spec_from_file_location("client_callbacks_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    mock = bench.MockCluster()
    mock.create_topic("in", 2)
    producer = Producer(config(mock.bootstrap))
    for i in range(12):
        producer.produce("in", b"v", partition=i % 2)
    assert producer.flush(10) == 0
    conf = {"group.id": "g", "auto.offset.reset": "earliest", "enable.auto.commit": True,
            "auto.commit.interval.ms": 1000}
    consumer = Consumer(config(mock.bootstrap, **conf))
    consumer.subscribe(["in"])
    try:
        got = 0
        for _ in range(30):  # the mock group's join, then the 12 values
            got += sum(not m.error() for m in consumer.consume(12 - got, 0.5))
            if got == 12:
                break
        assert got == 12
        timer = S.timer_commit(consumer, mock.bootstrap, conf, {})
        assert timer is not None
        due = timer.due()
        assert due == {("in", 0): 6, ("in", 1): 6}
        started = time.monotonic()
        assert timer.wait(due, cap=5.0) is True
        assert time.monotonic() - started < 5.0 and timer.last == due
        timer.close()
    finally:
        close_consumer(consumer, timeout=10)
