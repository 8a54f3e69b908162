"""Crash points searched, calls counted, the exact redo bound and database commits seen
however they are made: hand-written events and a real SQLite connection."""

from __future__ import annotations

import sqlite3

import pytest

from deliverylab.grade import exercise
from deliverylab.grade.search import (
    CallCounter,
    CrashPoint,
    crash_points,
    db_commit,
    ordinal,
    redo_allowed,
    redo_beyond,
    redone_values,
)


def test_ordinals_read_as_english():
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]


def test_points_are_every_boundary_over_the_first_batches_in_run_order():
    got = [p.name for p in crash_points(("poll", "flush", "commit"), 2)]
    assert got == ["poll#1", "flush#1", "commit#1", "poll#2", "flush#2", "commit#2"]
    with pytest.raises(ValueError, match="boundary 'sleep' is not accepted"):
        crash_points(("sleep",), 1)


def test_each_exercise_searches_its_own_boundaries_and_other_faults_run_once():
    assert len(exercise("02").points("crash_consumer")) == 6
    assert exercise("02").points("lose_ack") == [None]
    assert [p.name for p in exercise("04").points("crash_consumer")][:4] == [
        "poll#1", "commit#1", "send_offsets#1", "commit_transaction#1"]
    assert [p.name for p in exercise("06").points("kill_after_db")] == [
        "db_commit#1", "db_commit#2", "db_commit#3"]
    assert exercise("06").points("none") == [None]


def test_a_point_parses_from_its_name_and_bad_names_are_one_line():
    assert CrashPoint.parse("flush#2") == CrashPoint("flush", 2)
    assert CrashPoint("flush", 2).label() == "after your 2nd flush"
    for bad in ("flush", "flush#0", "nap#1", "flush#x"):
        with pytest.raises(ValueError, match=f"crash point '{bad}' is not accepted"):
            CrashPoint.parse(bad)


def test_the_counter_kills_at_the_nth_call_of_its_kind_only():
    c = CallCounter(("poll", "flush", "commit"), CrashPoint("flush", 2))
    calls = ["poll", "flush", "commit", "poll", "flush", "commit"]
    due = [c.saw(k) for k in calls]
    assert due == [False, False, False, False, True, False]
    assert CallCounter(("poll",)).saw("poll") is False  # counting only: never due


def test_the_counter_names_the_point_in_the_students_words():
    c = CallCounter(("poll", "flush", "commit"), CrashPoint("flush", 2))
    for k in ["poll", "flush", "commit", "poll", "flush"]:
        c.saw(k)
    assert c.words("flush") == "after your 2nd flush, before your 2nd offset commit"
    # a loop that commits every other batch: two flushes, no commit yet
    c = CallCounter(("poll", "flush", "commit"))
    for k in ["poll", "flush", "poll", "flush"]:
        c.saw(k)
    assert c.words("flush") == "after your 2nd flush, before your 1st offset commit"
    # after the last kind of the cycle comes the first again
    c = CallCounter(("poll", "flush", "commit"))
    for k in ["poll", "flush", "commit"]:
        c.saw(k)
    assert c.words("commit") == "after your 1st offset commit, before your 2nd poll"
    one = CallCounter(("db_commit",))
    one.saw("db_commit")
    assert one.words("db_commit") == "after your 1st database commit"


def test_a_crash_the_run_never_reached_is_named_as_the_graders_shortfall():
    c = CallCounter(("poll", "flush", "commit"), CrashPoint("commit", 2))
    c.saw("commit")
    assert c.shortfall() == ("the grader could not place its crash after your 2nd offset "
                             "commit: your run made 1 offset commit call")
    assert CallCounter(("poll",)).shortfall() == ""


def ev(t: float, kind: str, values=(), process="stage-0", outcome="ok") -> dict:
    return {"t": t, "process": process, "kind": kind, "values": list(values),
            "outcome": outcome}


def test_a_crash_may_redo_only_what_was_polled_since_the_last_commit():
    events = [ev(1, "poll", ["a"]), ev(2, "poll", ["b"]), ev(3, "commit"),
              ev(4, "poll", ["c"]), ev(5, "poll", ["d"]),
              ev(4.5, "poll", ["x"], process="stage-1")]
    assert redo_allowed(events, "stage-0") == ["c", "d"]
    # a failed commit promised nothing
    events.append(ev(6, "commit", outcome="fail"))
    assert redo_allowed(events, "stage-0") == ["c", "d"]
    events.append(ev(7, "commit"))
    assert redo_allowed(events, "stage-0") == []


def test_an_off_by_one_commit_redoes_a_value_it_had_committed():
    """The loop committed m.offset() (not + 1) for the batch a, b and died right after:
    its successor reads b again. b was polled before the commit: beyond the bound."""
    events = [ev(1, "poll", ["a"]), ev(2, "poll", ["b"]), ev(3, "commit")]
    output = ["a", "b", "b"]
    assert redone_values(output) == ["b"]
    assert redo_beyond(redone_values(output), redo_allowed(events, "stage-0")) == ["b"]


def test_a_batch_written_but_not_committed_may_be_redone():
    events = [ev(1, "poll", ["a"]), ev(2, "commit"), ev(3, "poll", ["b", "c"])]
    output = ["a", "b", "c", "b", "c"]
    assert redo_beyond(redone_values(output), redo_allowed(events, "stage-0")) == []


def look(db: sqlite3.Connection, seen: list[str], last: int) -> tuple[bool, int]:
    statements, seen[:] = list(seen), []
    return db_commit(statements, db.in_transaction, db.total_changes, last)


@pytest.fixture
def db():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a)")
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    yield conn, seen
    conn.close()


def test_every_way_of_committing_a_write_is_one_commit(db):
    conn, seen = db
    last = conn.total_changes
    with conn:  # with db:
        conn.execute("INSERT INTO t VALUES (1)")
    done, last = look(conn, seen, last)
    assert done
    conn.execute("INSERT INTO t VALUES (2)")
    assert look(conn, seen, last) == (False, last)  # open: not yet
    conn.commit()  # db.commit()
    done, last = look(conn, seen, last)
    assert done
    conn.execute("BEGIN IMMEDIATE")  # SQL statements, as the correct solution
    conn.execute("INSERT INTO t VALUES (3)")
    assert not look(conn, seen, last)[0]
    conn.execute("COMMIT")
    done, last = look(conn, seen, last)
    assert done
    conn.isolation_level = None  # autocommit: each write is its own commit
    conn.execute("INSERT INTO t VALUES (4)")
    done, last = look(conn, seen, last)
    assert done
    conn.execute("BEGIN")
    conn.execute("INSERT INTO t VALUES (5)")
    conn.execute("END")
    assert look(conn, seen, last)[0]


def test_a_read_only_transaction_or_a_rollback_is_no_commit(db):
    conn, seen = db
    last = conn.total_changes
    with conn:
        conn.execute("SELECT * FROM t").fetchall()
    assert look(conn, seen, last) == (False, last)
    conn.execute("BEGIN")
    conn.execute("SELECT * FROM t").fetchall()
    conn.execute("COMMIT")
    assert look(conn, seen, last) == (False, last)
    conn.execute("INSERT INTO t VALUES (1)")
    conn.rollback()
    done, new = look(conn, seen, last)
    assert not done and new == conn.total_changes  # the rolled-back rows are forgotten
