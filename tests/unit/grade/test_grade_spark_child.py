"""Exercise 05's driver side without Spark or brokers: the crash points, the recorded
commits and rows, and each shipped solution through a replay played by hand (a stand-in
DataFrame, a real SQLite file). What reaches a real query is judged on real brokers in
tests/integration/grade."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from deliverylab.grade import exercise
from deliverylab.grade import spark_child as S
from deliverylab.grade.child import load_solution
from deliverylab.grade.events import Events
from deliverylab.grade.spark_run import crash_plan
from deliverylab.history import read_json_lines
from deliverylab.values import encode

EX = exercise("05")


class Killed(BaseException):
    """Stands for the SIGKILL of the driver's process group (nothing catches that)."""


class FakeFrame:
    """What ``write_batch`` calls on a DataFrame: select, dropDuplicates, collect."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def select(self, *cols):
        return FakeFrame([{c: r[c] for c in cols} for r in self.rows])

    def dropDuplicates(self, cols):  # noqa: N802 (Spark's name)
        seen, out = set(), []
        for r in self.rows:
            key = tuple(r[c] for c in cols)
            if key not in seen:
                seen.add(key)
                out.append(r)
        return FakeFrame(out)

    def persist(self):
        return self

    def unpersist(self):
        return self

    def collect(self):
        # Spark's Rows answer both row["name"] and row.name (students write either);
        # pyspark.sql.Row is plain Python, no JVM.
        from pyspark.sql import Row

        return [Row(**r) for r in self.rows]


def batch_rows(batch: int, size: int = 4) -> list[dict]:
    out = []
    for i in range(size):
        offset = batch * size + i
        out.append({"provenance": f"in-x-0-{offset}", "topic": "in-x", "partition": 0,
                    "offset": offset, "value": encode("producer-0", offset).decode()})
    return out


def read(path: Path) -> list[dict]:
    return list(read_json_lines(path).records)


def driver(tmp_path: Path, solution: Path, process: str, fault: str | None, at: int | None,
           monkeypatch) -> tuple:
    """One driver's pieces as spark_child.run wires them, the kill a Killed exception."""
    db_path = tmp_path / "sink.db"
    if not db_path.exists():
        with sqlite3.connect(db_path) as db:
            db.execute(S.RECORDS)
        db.close()
    events = Events(str(tmp_path / "events.jsonl"), process)
    fn = load_solution(str(solution), "write_batch")
    crash = S.Crash(events, fault, at)
    conn = sqlite3.connect(db_path, check_same_thread=False)
    db = S.BatchDatabase(conn, events, crash, str(db_path))
    db.seen = conn.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()[0]
    if callable(getattr(fn.module, "setup", None)):
        fn.module.setup(db)
        db.commit()
    db.armed = True
    (tmp_path / "ckpt").mkdir(exist_ok=True)
    commits = S.Commits(events, str(tmp_path / "ckpt"))

    def killpg(pgid, sig):
        raise Killed(process)

    monkeypatch.setattr(S.os, "killpg", killpg)
    return S.foreach_batch(fn, db, events, crash, commits), db


def play(tmp_path: Path, solution: Path, fault: str, at: int, monkeypatch,
         batches: int = 4) -> list[str]:
    """A query of ``batches`` batches crashing at ``at``, restarted as the grader does;
    returns the provenance of every row."""
    write, db = driver(tmp_path, solution, "driver-0", fault, at, monkeypatch)
    start = 0
    try:
        for b in range(batches):
            try:
                write(FakeFrame(batch_rows(b)), b)
            except RuntimeError as exc:  # crash_query: the same driver restarts the query
                assert S.CRASH_TEXT in str(exc)
                write(FakeFrame(batch_rows(b)), b)
        start = batches
    except Killed:  # kill_driver: a fresh driver (a fresh module) replays from the crash
        db.close()
        start = at
    if start < batches:
        write, db = driver(tmp_path, solution, "driver-1", None, None, monkeypatch)
        for b in range(start, batches):
            write(FakeFrame(batch_rows(b)), b)
    rows = [r[0] for r in db.execute("SELECT provenance FROM records")]
    db.close()
    return rows


def test_crash_points_are_searched_over_every_batch_but_the_last():
    points = EX.points("kill_driver")
    assert [p.name for p in points] == ["batch#1", "batch#2", "batch#3"]
    # 40 values, 10 offsets per batch: 4 batches
    assert [crash_plan(EX, "kill_driver", p)["crash_at"] for p in points] == [0, 1, 2]


def test_kill_lands_right_after_the_first_database_commit_of_the_crash_batch(
        tmp_path: Path, monkeypatch):
    write, db = driver(tmp_path, EX.solutions / "wrong_marker_outside_txn.py", "driver-0",
                       "kill_driver", 1, monkeypatch)
    write(FakeFrame(batch_rows(0)), 0)
    with pytest.raises(Killed):
        write(FakeFrame(batch_rows(1)), 1)
    got = read(tmp_path / "events.jsonl")
    sends = [e for e in got if e["kind"] == "send"]
    assert len(sends) == 8 and sends[-1]["detail"] == "batch 1, database commit #3"
    assert [e["kind"] for e in got if e["kind"] == "fault"] == ["fault"]
    assert "right after your first database commit" in got[-1]["detail"]


def test_crash_query_raises_once_after_the_function_returned(tmp_path: Path, monkeypatch):
    write, _ = driver(tmp_path, EX.reference, "driver-0", "crash_query", 0, monkeypatch)
    with pytest.raises(RuntimeError, match=S.CRASH_TEXT):
        write(FakeFrame(batch_rows(0)), 0)
    write(FakeFrame(batch_rows(0)), 0)  # the replay in the same driver goes through
    faults = [e for e in read(tmp_path / "events.jsonl") if e["kind"] == "fault"]
    assert [f["fault"] for f in faults] == ["crash_query"]


def test_spark_commits_become_commit_events_once_with_their_offsets(tmp_path: Path):
    ckpt = tmp_path / "ckpt"
    for sub in ("offsets", "commits", "sources/0"):
        (ckpt / sub).mkdir(parents=True)
    (ckpt / "sources" / "0" / "0").write_text('v1\n{"in-x":{"0":0}}')
    (ckpt / "offsets" / "0").write_text('v1\n{}\n{"in-x":{"0":4}}')
    (ckpt / "commits" / "0").write_text('v1\n{}')
    events = Events(str(tmp_path / "e.jsonl"), "driver-0")
    commits = S.Commits(events, str(ckpt))
    commits.record()
    assert not read(tmp_path / "e.jsonl")  # committed before this driver started
    (ckpt / "offsets" / "1").write_text('v1\n{}\n{"in-x":{"0":8}}')
    (ckpt / "commits" / "1").write_text('v1\n{}')
    commits.record()
    commits.record()
    got = read(tmp_path / "e.jsonl")
    assert [e["detail"] for e in got] == ["commits/1 in-x/0@8"]


@pytest.mark.parametrize("fault", ["crash_query", "kill_driver"])
@pytest.mark.parametrize("at", [0, 1, 2])
def test_the_reference_writes_each_record_once(tmp_path: Path, monkeypatch, fault, at):
    rows = play(tmp_path, EX.reference, fault, at, monkeypatch)
    assert sorted(rows) == sorted(r["provenance"] for b in range(4) for r in batch_rows(b))


#: Wrong solutions whose mistake only a second driver process shows: here a "kill" is
#: replayed in this one process, where Python's string hash keeps its salt. The
#: calibration on real drivers catches them (tests/integration/grade).
ONLY_A_NEW_PROCESS_SHOWS = {"builtin_hash_key"}


@pytest.mark.parametrize("at", [0, 1, 2])
def test_each_wrong_solution_fails_the_cell_it_names(tmp_path: Path, monkeypatch, at):
    want = sorted(r["provenance"] for b in range(4) for r in batch_rows(b))
    for what, path in EX.wrong().items():
        if what in ONLY_A_NEW_PROCESS_SHOWS:
            continue
        work = tmp_path / what
        work.mkdir()
        text = path.read_text()
        cell = text.split('EXPECTED_FAILURE = "')[1].split('"')[0]
        fault, _, prop = cell.partition(" x ")
        rows = play(work, path, fault, at, monkeypatch)
        if prop == "exactly_once":
            assert len(rows) > len(set(rows)), what
        else:
            assert set(rows) < set(want), what
        assert set(rows) <= set(want), what


def test_the_starter_writes_a_replayed_batch_twice(tmp_path: Path, monkeypatch):
    rows = play(tmp_path, EX.starter, "crash_query", 1, monkeypatch)
    assert len(rows) == 16 + 4
