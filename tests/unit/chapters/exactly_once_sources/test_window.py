"""window (07): the committed position at the kill, from Connect's offsets records."""

import json

import pytest

from deliverylab.chapters.exactly_once_sources import window as W
from deliverylab.chapters.exactly_once_sources.window import (
    OffsetRecord,
    committed_before,
    kill_mid_stream,
    parse_offset_record,
)
from deliverylab.errors import LabError


def _key(name):
    return json.dumps([name, {"filename": "/tmp/x.txt"}]).encode()


def test_offset_records_are_parsed_and_others_ignored():
    rec = parse_offset_record(_key("a"), b'{"position": 840}', 1000)
    assert rec == OffsetRecord("a", 840, 1000)
    assert parse_offset_record(_key("a"), None, 5).position is None  # tombstone
    assert parse_offset_record(b"not json", b"{}", 5) is None
    assert parse_offset_record(b'{"a": 1}', b"{}", 5) is None


def test_the_position_at_the_kill_is_the_last_one_written_before_it():
    recs = [OffsetRecord("a", 100, 1000), OffsetRecord("b", 999, 1500),
            OffsetRecord("a", 300, 2000), OffsetRecord("a", 500, 3500)]  # 3500: successor
    assert committed_before(recs, "a", 3000) == 300
    assert committed_before(recs, "a", 900) is None
    assert committed_before(recs, "c", 9999) is None


class _Connect:
    exactly_once = False
    workers = [object(), object()]


@pytest.mark.parametrize("lines, kill_after", [(100, 100), (100, 0), (100, 150)])
def test_a_kill_outside_the_stream_is_refused(lines, kill_after):
    with pytest.raises(LabError, match="kill_after"):
        kill_mid_stream(None, _Connect(), lines, kill_after)


def test_the_flushes_a_worker_logged_are_read_for_one_connector_only():
    log = "\n".join([
        "[09:38:46,732] INFO  WorkerSourceTask{id=plain-window-1-0} Committing offsets for 0 "
        "acknowledged messages (WorkerSourceTask)",
        "[09:38:48,760] INFO  WorkerSourceTask{id=plain-window-12-0} Committing offsets for 7 "
        "acknowledged messages (WorkerSourceTask)",
        "[09:38:48,761] INFO  something else",
        "[09:38:50,790] INFO  WorkerSourceTask{id=plain-window-1-0} Committing offsets for 60 "
        "acknowledged messages (WorkerSourceTask)"])
    assert W.commit_lines(log, "plain-window-1") == [("09:38:46,732", 0), ("09:38:50,790", 60)]
    assert W.commit_lines(log, "plain-window-12") == [("09:38:48,760", 7)]
    assert W.commit_lines("", "x") == []


# ------------------------------------------------------------ with exactly-once support
ENDS = [10, 20, 30, 40, 50]  # five lines of 10 bytes


@pytest.mark.parametrize("position, aborted", [(30, 2), (None, 5), (0, 5), (50, 0), (10, 4)])
def test_a_kill_inside_an_open_transaction_aborts_the_lines_past_the_committed_position(
        position, aborted):
    p = W.predict_open_kill(ENDS, position)
    assert p.aborted == p.read_uncommitted_duplicates == aborted
    assert p.read_committed_duplicates == 0
    assert p.committed_while_down == 5 - aborted


@pytest.mark.parametrize("ends, position, name", [
    (ENDS, 25, "position"),  # not a line end: not this file's connector
    (ENDS, 60, "position"),
    ([10, 30, 20], 10, "ends"),  # not increasing
    ([10, 10], 10, "ends"),
])
def test_a_prediction_from_a_position_that_is_no_line_end_is_refused(ends, position, name):
    with pytest.raises(LabError, match=f"^{name}="):
        W.predict_open_kill(ends, position)


class _EosConnect:
    exactly_once = True
    workers = [object(), object()]


@pytest.mark.parametrize("connect, kill_after, match", [
    (_EosConnect(), 100, "kill_after"), (_EosConnect(), 0, "kill_after"),
    (_Connect(), 50, "connect"),  # no exactly-once support
])
def test_a_kill_in_an_open_transaction_is_refused_outside_the_stream_or_without_eos(
        connect, kill_after, match):
    with pytest.raises(LabError, match=f"^{match}="):
        W.kill_in_open_transaction(None, connect, 100, kill_after, 3000)


class _Runs:
    """Just what the freeze loop asks of Runs: counts, the Nemesis, the cluster."""

    cluster = None

    def __init__(self):
        self.ops = []
        self.nemesis = self

    def wait_count(self, topic, isolation, at_least, timeout):
        return at_least

    def apply(self, fault, **args):
        self.ops.append(fault)


class _Task:
    def task_worker(self, name):
        return 1


def _bounds_seq(monkeypatch, held):
    """W.bounds answers with these HW - LSO gaps, one per freeze."""
    answers = iter(held)
    monkeypatch.setattr(W, "bounds", lambda target, topic: [
        {"partition": 0, "high_watermark": 100, "last_stable_offset": 100 - next(answers)}])


def test_a_freeze_that_finds_no_open_transaction_thaws_appends_and_freezes_again(
        monkeypatch, tmp_path):
    _bounds_seq(monkeypatch, [0, 0, 7])
    runs, source = _Runs(), W.SourceFile(tmp_path / "f.txt")
    source.append(30)
    got = W._freeze_inside(runs, _Task(), "c", "t", source, 3000, tries=5, chunk=10,
                           pace_s=0, settle_s=0)
    assert got == (3, 1, 7)  # third freeze, worker 1, 7 records held open
    assert runs.ops == ["pause_worker", "resume_worker"] * 2 + ["pause_worker"]
    assert len(source.ends) == 50  # 10 more lines after each freeze that found none


def test_no_open_transaction_in_any_freeze_refuses_the_interval(monkeypatch, tmp_path):
    _bounds_seq(monkeypatch, [0, 0, 0])
    runs, source = _Runs(), W.SourceFile(tmp_path / "f.txt")
    source.append(10)
    with pytest.raises(LabError, match="^interval_ms=1000 is not accepted; expected a longer"):
        W._freeze_inside(runs, _Task(), "c", "t", source, 1000, tries=3, chunk=10,
                         pace_s=0, settle_s=0)
    assert runs.ops.count("pause_worker") == runs.ops.count("resume_worker") == 3


def test_a_window_run_names_the_margins_its_lesson_rests_on():
    from deliverylab.chapters.exactly_once_sources.window import WindowRun

    run = WindowRun(2000, 150, 1890, [100] * 150, predicted=40, found=40,
                    flushes=[("12:00:01,000", 0), ("12:00:03,000", 60), ("12:00:05,000", 50)])
    # the empty flush (0 records) committed nothing: two windows closed before the kill
    assert run.margins() == {"window: offset flushes with records before the kill": 2,
                             "window: lines past the committed position at the kill": 40}
    late = WindowRun(2000, 150, None, [100] * 150, predicted=150, found=150,
                     flushes=[("12:00:01,000", 0)])
    assert late.margins()["window: offset flushes with records before the kill"] == 0
