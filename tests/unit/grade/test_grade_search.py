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
    parse_offsets,
    redo_allowed,
    redo_beyond,
    redo_bound,
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
    # each crash fault of 06 its own boundary: the service's answer, or the commit
    assert [p.name for p in exercise("06").points("kill_after_http")] == [
        "http_call#1", "http_call#2", "http_call#3"]
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


def polled(t: float, offsets: range, partition: int = 0, topic: str = "in") -> list[dict]:
    """One poll event per message, as the child writes them: value ``p<P>-<offset>``."""
    return [{"t": t + i * 0.001, "process": "stage-0", "kind": "poll", "topic": topic,
             "partition": partition, "offset": o, "values": [f"p{partition}-{o}"],
             "outcome": "ok"} for i, o in enumerate(offsets)]


def vals(offsets: range, partition: int = 0) -> list[str]:
    return [f"p{partition}-{o}" for o in offsets]


def stored(t: float, detail: str) -> dict:
    return {"t": t, "process": "stage-0", "kind": "store_offsets", "outcome": "ok",
            "detail": detail}


def auto(t: float, detail: str) -> dict:
    """An on_commit report of auto-commit's timer, as the child records it."""
    return {"t": t, "process": "stage-0", "kind": "commit", "outcome": "ok", "how": "auto",
            "detail": detail}


ONE_BATCH = exercise("02").prop("one_batch_redone")


def judged(events: list[dict], committed: dict | None, redone: list[str]) -> dict[str, int]:
    """The counts the runner gives the property for one crash run."""
    bound = redo_bound(events, "stage-0", committed)
    return {"pipeline_extra": len(redone),
            "redo_beyond": len(redo_beyond(redone, bound.allowed)),
            "redo_owed": len(set(redone) & set(bound.owed))}


def autocommit_loop() -> list[dict]:
    """The correct store_offsets + auto-commit loop, killed on its first commit report.

    Batches of 10 (offsets 0-9, 10-19, 20-29) are each written, then stored; the timer's
    report of its commit of the first store comes behind the messages fetched before it,
    during the 4th consume(): the kill (commit#1). What the group had committed by then
    is the broker's to say, not the report's."""
    return [*polled(1, range(0, 10)), stored(1.5, "in/0@10"),
            *polled(2, range(10, 20)), stored(2.5, "in/0@20"),
            *polled(3, range(20, 30)), stored(3.5, "in/0@30"),
            auto(4, "in/0@10")]


def test_a_store_the_group_had_not_committed_at_the_kill_is_owed_not_the_loops_redo():
    """The false failure: the group had committed only the first store when the process
    died; the successor redoes 20 values, stored by the loop, still owed by the timer.
    They are within the bound and excused from the one batch."""
    events = autocommit_loop()
    redone = vals(range(10, 30))
    bound = redo_bound(events, "stage-0", {("in", 0): 10})
    assert bound.allowed == redone and bound.owed == redone
    assert ONE_BATCH.holds(judged(events, {("in", 0): 10}, redone), "crash_consumer")
    # three stores owed (nothing committed yet): 30 redone, every one owed
    assert ONE_BATCH.holds(judged(events, {("in", 0): -1001}, vals(range(0, 30))),
                           "crash_consumer")


def test_what_the_group_had_committed_may_not_be_redone_whatever_the_reports_said():
    """The timer had committed the third store too, its report never reached the
    History: the broker says so, and a redo of the second batch would be beyond."""
    events = autocommit_loop()
    bound = redo_bound(events, "stage-0", {("in", 0): 30})
    assert bound.allowed == [] and bound.owed == []
    counts = judged(events, {("in", 0): 30}, vals(range(10, 20)))
    assert counts["redo_beyond"] == 10 and not ONE_BATCH.holds(counts, "crash_consumer")


def test_an_auto_commit_report_is_no_promise_of_the_loop():
    """With librdkafka's own offset store (auto-commit left on), the timer commits what
    was fetched, done or not: its report clears nothing, excuses nothing. A loop that
    never commits redoes everything: two batches and more fail."""
    events = [*polled(1, range(0, 10)), auto(1.5, "in/0@10"), *polled(2, range(10, 20))]
    bound = redo_bound(events, "stage-0", {("in", 0): 10})
    assert bound.allowed == vals(range(0, 20)) and bound.owed == []
    assert not ONE_BATCH.holds(judged(events, {("in", 0): 10}, vals(range(0, 20))),
                               "crash_consumer")


def test_a_loop_that_stores_late_gets_no_excuse_for_what_it_had_not_stored():
    """Stores every other batch (commits too late): killed after writing the 3rd batch,
    the 2nd was never stored. Whatever the timer owed, 20 values are the loop's own."""
    events = [*polled(1, range(0, 10)), *polled(2, range(10, 20)), stored(2.5, "in/0@20"),
              *polled(3, range(20, 30)), *polled(4, range(30, 40))]
    # the group had the store: the 3rd and 4th batches are redone, none owed
    counts = judged(events, {("in", 0): 20}, vals(range(20, 40)))
    assert counts == {"pipeline_extra": 20, "redo_beyond": 0, "redo_owed": 0}
    assert not ONE_BATCH.holds(counts, "crash_consumer")
    # the group did not: 40 redone, the 20 stored are owed, the 20 unstored are not
    counts = judged(events, {("in", 0): -1001}, vals(range(0, 40)))
    assert counts["redo_owed"] == 20 and not ONE_BATCH.holds(counts, "crash_consumer")


def test_a_store_that_covers_one_partition_excuses_nothing_on_the_others():
    """store_offsets(message=msgs[-1]) stores the last message's partition only: the
    other partition's values are not owed; once the group has the store, redoing them
    is beyond the bound (polled before a kept promise)."""
    events = [*polled(1, range(0, 4), partition=1), *polled(1.1, range(0, 6), partition=2),
              stored(1.5, "in/2@6"), *polled(2, range(6, 16), partition=2)]
    redone = [*vals(range(0, 4), 1), *vals(range(6, 16), 2)]
    assert redo_bound(events, "stage-0", {("in", 2): -1001}).owed == vals(range(0, 6), 2)
    counts = judged(events, {("in", 2): -1001}, redone)
    assert counts["redo_owed"] == 0 and not ONE_BATCH.holds(counts, "crash_consumer")
    counts = judged(events, {("in", 2): 6}, redone)
    assert counts["redo_beyond"] == 4 and not ONE_BATCH.holds(counts, "crash_consumer")


def test_an_off_by_one_store_is_caught_as_an_off_by_one_commit():
    """store_offsets(offsets=[TopicPartition(t, p, m.offset())]): the store names 9 for
    a batch at offsets 0-9; the group committed it; the successor reads 9 again, polled
    before a promise the broker kept: beyond the bound."""
    events = [*polled(1, range(0, 10)), stored(1.5, "in/0@9"), *polled(2, range(10, 20))]
    counts = judged(events, {("in", 0): 9}, vals(range(9, 20)))
    assert counts["redo_beyond"] == 1 and not ONE_BATCH.holds(counts, "crash_consumer")


def test_a_commit_the_loop_made_is_a_promise_whatever_the_broker_shows():
    """commit() is made synchronously by the child: recorded ok, it had reached the
    broker. A commit every third batch gets no excuse: 20 written values redone."""
    events = [*polled(1, range(0, 10)), ev(1.5, "commit"), *polled(2, range(10, 20)),
              *polled(3, range(20, 30))]
    assert redo_bound(events, "stage-0", None) == redo_bound(events, "stage-0", {})
    counts = judged(events, None, vals(range(10, 30)))
    assert counts == {"pipeline_extra": 20, "redo_beyond": 0, "redo_owed": 0}
    assert not ONE_BATCH.holds(counts, "crash_consumer")
    assert ONE_BATCH.holds(judged(events, None, vals(range(20, 30))), "crash_consumer")


def test_offsets_parse_from_the_childs_detail_and_bad_ones_are_one_line():
    assert parse_offsets("in-x.1/0@6,in-x.1/2@14") == {("in-x.1", 0): 6, ("in-x.1", 2): 14}
    assert parse_offsets(None) == {} == parse_offsets("")
    with pytest.raises(ValueError, match="offsets 'in@6' are not accepted"):
        parse_offsets("in@6")


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


@pytest.mark.parametrize("sql, wrote", [
    ("INSERT INTO orders VALUES (?, ?)", True),
    ("  insert or ignore into processed (message_id) values (?)", True),
    ("REPLACE INTO t VALUES (1)", True),
    ("UPDATE t SET a = 1", True),
    ("DELETE FROM t", True),
    ("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x", True),
    ("BEGIN IMMEDIATE; INSERT INTO t VALUES (1); COMMIT", True),  # a script
    ("-- INSERT in a comment\nSELECT 1", False),
    ("SELECT replace(order_id, 'a', 'b') FROM orders", False),
    ("SELECT 1 FROM handled WHERE message_id = ?", False),
    ("BEGIN IMMEDIATE", False),
    ("COMMIT", False),
    ("CREATE TABLE IF NOT EXISTS t (a)", False),
    ("", False),
])
def test_writes_names_the_statements_that_write_rows(sql, wrote):
    from deliverylab.grade.search import writes

    assert writes(sql) is wrote
