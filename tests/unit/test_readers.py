"""readers without a cluster: stand-ins answer as a broker would at its awkward moments.

- ``bounds``: a partition whose commit marker lands mid-question (ListOffsets from a log
  that gains its marker after the n-th request: the race a real broker gives at random).
- the read-back: a new leader that cannot give its watermarks yet (OFFSET_NOT_AVAILABLE
  after a failover, which chapter 01's partitioned-leader cell met on containers), a
  read that stalls (it must raise, never hand part of a partition on), and ``expect``
  (a count that must arrive: read again until a complete read holds it).
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import IsolationLevel, KafkaError, KafkaException
from confluent_kafka.admin import OffsetSpec

from deliverylab import readers, values
from deliverylab.errors import BadValue, ClusterNotReady, TimedOut


class MarkerLandsMidway:
    """One partition: one transactional record, its marker written after ``after`` requests.

    Before the marker: high watermark 1, LSO 0 (held back). After: HW 2, LSO 2.
    """

    def __init__(self, after: int) -> None:
        self.after = after
        self.asked = 0

    def admin(self) -> MarkerLandsMidway:
        return self

    def list_topics(self, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics={"t": SimpleNamespace(partitions={0: None})})

    def list_offsets(self, request: dict, isolation_level: IsolationLevel,
                     request_timeout: float) -> dict:
        landed = self.asked >= self.after
        self.asked += 1
        if isinstance(next(iter(request.values())), OffsetSpec.earliest().__class__):
            offset = 0
        elif isolation_level == IsolationLevel.READ_COMMITTED:
            offset = 2 if landed else 0
        else:
            offset = 2 if landed else 1
        answer = SimpleNamespace(result=lambda: SimpleNamespace(offset=offset))
        return {tp: answer for tp in request}


@pytest.mark.parametrize("after", [0, 1, 2, 3])
def test_the_stable_offset_never_comes_out_above_the_high_watermark(after: int) -> None:
    (b,) = readers.bounds(MarkerLandsMidway(after), "t")
    assert b["last_stable_offset"] <= b["high_watermark"], b


def test_wait_stable_returns_only_a_settled_view() -> None:
    (b,) = readers.wait_stable(MarkerLandsMidway(2), "t", timeout=5)
    assert b["last_stable_offset"] == b["high_watermark"] == 2


# --- the read-back ------------------------------------------------------------------------


class Msg:
    """A consumed record, or a partition-EOF event (``eof=True``)."""

    def __init__(self, partition: int, offset: int, value: bytes | None = None,
                 eof: bool = False, topic: str = "t") -> None:
        self._t, self._p, self._o, self._v, self._eof = topic, partition, offset, value, eof

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def value(self) -> bytes | None:
        return self._v

    def key(self) -> bytes:
        return b"k"

    def timestamp(self) -> tuple[int, int]:
        return (1, 1000 + self._o)

    def error(self) -> KafkaError | None:
        return KafkaError(KafkaError._PARTITION_EOF) if self._eof else None


class Log:
    """A stand-in Consumer factory: each read (a new Consumer) gets the next log in
    ``reads``, a list of per-partition (low, high, [messages]); the watermark request
    fails ``stalls`` times first (a leader not caught up)."""

    def __init__(self, *reads: dict[int, tuple[int, int, list[Msg]]], stalls: int = 0,
                 code: int = KafkaError.OFFSET_NOT_AVAILABLE) -> None:
        self.reads, self.stalls, self.code = list(reads), stalls, code
        self.asked = self.opened = self.closed = 0
        self.assigned: list[tuple[str, int, int]] = []

    def __call__(self, conf: dict) -> Log:
        self.log = self.reads[min(self.opened, len(self.reads) - 1)]
        self.opened += 1
        return self

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        return SimpleNamespace(topics={topic: SimpleNamespace(partitions=dict.fromkeys(
            self.log))})

    def get_watermark_offsets(self, tp, timeout: float) -> tuple[int, int]:
        self.asked += 1
        if self.asked <= self.stalls:
            raise KafkaException(KafkaError(self.code))
        low, high, _ = self.log[tp.partition]
        return low, high

    def assign(self, tps: list) -> None:
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in tps]
        self.queue = [m for tp in tps for m in self.log[tp.partition][2]]

    def consume(self, n: int, timeout: float) -> list[Msg]:
        taken, self.queue = self.queue[:n], self.queue[n:]
        return taken

    def close(self) -> None:
        self.closed += 1


def _v(seq: int) -> bytes:
    return values.encode("p", seq)


def test_a_leader_not_caught_up_is_asked_again(monkeypatch):
    log = Log({0: (0, 0, [])}, stalls=2)
    monkeypatch.setattr(readers, "Consumer", log)
    assert readers.read_back("127.0.0.1:1", ["t"], "read_uncommitted", 10, partition=0) == []
    assert log.asked == 3 and log.closed == 1


def test_a_leader_that_never_answers_is_a_timeout_naming_it(monkeypatch):
    log = Log({0: (0, 0, [])}, stalls=10**6)
    monkeypatch.setattr(readers, "Consumer", log)
    with pytest.raises(ClusterNotReady, match="watermarks of t/0.*OFFSET_NOT_AVAILABLE"):
        readers.read_back("127.0.0.1:1", ["t"], "read_uncommitted", 1, partition=0)
    assert log.closed == 1


def test_a_read_goes_from_each_log_start_to_its_end(monkeypatch):
    log = Log({0: (2, 4, [Msg(0, 2, _v(2)), Msg(0, 3, b"not a lab value")]),
               1: (0, 1, [Msg(1, 0, _v(0))]),
               2: (0, 0, [])})  # empty: not even assigned
    monkeypatch.setattr(readers, "Consumer", log)
    reads = readers.read_back("127.0.0.1:1", ["t"])
    assert [(r.partition, r.offset, r.value) for r in reads] == [
        (0, 2, "p:2"), (0, 3, None), (1, 0, "p:0")]
    assert sorted(log.assigned) == [("t", 0, 2), ("t", 1, 0)]
    (rec, *_) = readers.read_records("127.0.0.1:1", ["t"], partition=0)
    assert (rec.offset, rec.key, rec.value, rec.timestamp_ms) == (2, b"k", _v(2), 1002)


def test_an_end_of_partition_ends_a_read_whose_last_offsets_are_markers(monkeypatch):
    # read_committed: offset 1 is the commit marker, never delivered; EOF says "the end"
    monkeypatch.setattr(readers, "Consumer", Log({0: (0, 2, [Msg(0, 0, _v(0)),
                                                              Msg(0, 2, eof=True)])}))
    assert [r.value for r in readers.read_back("127.0.0.1:1", ["t"])] == ["p:0"]


def test_a_read_that_stalls_raises_and_hands_nothing_on(monkeypatch):
    monkeypatch.setattr(readers, "Consumer", Log({0: (0, 3, [Msg(0, 0, _v(0))]),
                                                   1: (0, 1, [Msg(1, 0, _v(1))])}))
    with pytest.raises(readers.ReadTimeout, match=r"did not reach the end of t/0 .*"
                       r"\(2 records read\)") as err:
        readers.read_back("127.0.0.1:1", ["t"], timeout=0.3)
    assert isinstance(err.value, TimedOut) and err.value.what == "the end of t/0"


def test_expect_reads_again_until_the_count_arrives(monkeypatch):
    short = {0: (0, 1, [Msg(0, 0, _v(0))])}
    whole = {0: (0, 2, [Msg(0, 0, _v(0)), Msg(0, 1, _v(1))])}
    log = Log(short, whole)
    monkeypatch.setattr(readers, "Consumer", log)
    assert len(readers.read_records("127.0.0.1:1", ["t"], expect=2, timeout=10)) == 2
    assert log.opened == 2


def test_expect_that_never_arrives_is_a_timeout_naming_the_count(monkeypatch):
    monkeypatch.setattr(readers, "Consumer", Log({0: (0, 1, [Msg(0, 0, _v(0))])}))
    with pytest.raises(readers.ReadTimeout, match="3 records in t .*last complete read "
                       "held 1"):
        readers.read_back("127.0.0.1:1", ["t"], expect=3, timeout=1)


@pytest.mark.parametrize("kwargs, bad", [
    ({"partition": -1}, "partition=-1"), ({"partition": "0"}, "partition='0'"),
    ({"topics": ["a", "b"], "partition": 0}, "partition=0"),
    ({"expect": -1}, "expect=-1"), ({"isolation": "committed"}, "isolation='committed'")])
def test_bad_arguments_are_named_before_any_read(kwargs, bad):
    args = {"target": "127.0.0.1:1", "topics": ["t"], **kwargs}
    with pytest.raises(BadValue, match=bad):
        readers.read_back(**args)
