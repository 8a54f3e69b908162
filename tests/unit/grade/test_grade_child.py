"""The child's recording wrappers, with stand-in clients (no delivery claim is made
here: what reaches Kafka is judged on real brokers in tests/integration/grade)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deliverylab.grade.child import StudentConsumer, StudentProducer, load_solution
from deliverylab.grade.events import Events, KillPlan
from deliverylab.history import read_json_lines
from deliverylab.values import encode


class FakeMsg:
    def __init__(self, seq: int, partition: int = 0) -> None:
        self.seq, self._partition = seq, partition

    def error(self):
        return None

    def value(self):
        return encode("producer-0", self.seq)

    def topic(self):
        return "in"

    def partition(self):
        return self._partition

    def offset(self):
        return self.seq


class FakeConsumer:
    def __init__(self) -> None:
        self.commits: list[dict] = []

    def consume(self, n, timeout):
        return [FakeMsg(i) for i in range(n)]

    def commit(self, **kw):
        """As a synchronous commit answers: what the broker committed."""
        from confluent_kafka import TopicPartition

        self.commits.append(kw)
        if "message" in kw:
            m = kw["message"]
            return [TopicPartition(m.topic(), m.partition(), m.offset() + 1)]
        return list(kw.get("offsets") or [])

    def store_offsets(self, **kw):
        if not kw:
            raise TypeError("expected message or offsets")
        self.commits.append({"stored": kw})


class Trickle(FakeConsumer):
    """Hands over what its fetches have queued: ``chunks[i]`` on the i-th call, however
    many were asked for (a consume() whose timeout ran out before the rest arrived)."""

    def __init__(self, chunks: list[list[FakeMsg]]) -> None:
        super().__init__()
        self.chunks, self.asked = list(chunks), []

    def consume(self, n, timeout):
        self.asked.append((n, timeout))
        got = self.chunks.pop(0) if self.chunks else []
        assert len(got) <= n
        return got


class FakeProducer:
    def __init__(self) -> None:
        self.reports = []

    def produce(self, topic, value, key, on_delivery=None):
        self.reports.append(on_delivery)


def payments(tmp_path: Path, events: Events, plan: KillPlan | None = None,
             service=None):
    """The student's payment client over the payment service's own CallLog (``service``,
    shared by the instances of one run; a fresh one logging to calls.jsonl if None), in
    this process (the HTTP transport stood in): its keys and effects are the real ones."""
    from deliverylab.grade.http_call import Payments
    from deliverylab.services.http import CallLog

    service = service or CallLog(tmp_path / "calls.jsonl")
    return Payments("", events, plan, "run", send=service.handle)


def read(path: Path) -> list[dict]:
    return list(read_json_lines(path).records)


def test_polls_and_commits_are_recorded_and_every_commit_is_synchronous(tmp_path: Path):
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    fake = FakeConsumer()
    c = StudentConsumer(fake, events, KillPlan(events))
    msgs = c.consume(num_messages=3, timeout=0.1)
    c.commit(message=msgs[-1])  # asynchronous=True by default in confluent-kafka
    assert fake.commits == [{"asynchronous": False, "message": msgs[-1]}]
    got = read(tmp_path / "e.jsonl")
    assert [e["kind"] for e in got] == ["poll"] * 3 + ["commit"]
    assert got[0]["values"] == ["producer-0:0"] and got[-1]["detail"] == "in/0@3"


def test_a_partition_the_broker_refused_is_recorded_as_not_committed(tmp_path: Path):
    """A synchronous commit that returns may still carry a partition's refusal (its
    ``error``): that partition was not committed, the others were."""
    from types import SimpleNamespace

    class Refusing(FakeConsumer):
        def commit(self, **kw):
            self.commits.append(kw)
            return [SimpleNamespace(topic="in", partition=0, offset=3, error=None),
                    SimpleNamespace(topic="in", partition=1, offset=5,
                                    error="REBALANCE_IN_PROGRESS")]

    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    c = StudentConsumer(Refusing(), events, KillPlan(events))
    c.commit()
    got = [(e["outcome"], e["detail"], e.get("error")) for e in read(tmp_path / "e.jsonl")]
    assert got == [("fail", "in/1@5", "REBALANCE_IN_PROGRESS"), ("ok", "in/0@3", None)]


def test_a_commit_that_committed_nothing_is_a_failure_and_no_crash_point(tmp_path: Path,
                                                                        monkeypatch):
    """Every partition refused, or an answer without an offset: recorded as failed, and
    a kill planned "after the 1st offset commit" waits for one that committed."""
    from types import SimpleNamespace

    from deliverylab.grade.search import CrashPoint

    answers = [[SimpleNamespace(topic="in", partition=0, offset=3, error="NOT_COORDINATOR")],
               [SimpleNamespace(topic="in", partition=0, offset=-1001, error=None)]]

    class Answering(FakeConsumer):
        def commit(self, **kw):
            return answers.pop(0)

    killed: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append(sig))
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    plan = KillPlan(events, CrashPoint.parse("commit#1"), cycle=("commit",))
    c = StudentConsumer(Answering(), events, plan)
    c.commit()
    c.commit()
    assert killed == []  # neither was the 1st commit: nothing was committed
    got = [(e["outcome"], e["detail"], e.get("error")) for e in read(tmp_path / "e.jsonl")]
    assert got == [("fail", "in/0@3", "NOT_COORDINATOR"),
                   ("fail", "the stored offsets",
                    "nothing committed: the answer holds no offset")], got


def test_a_store_is_recorded_with_the_offsets_librdkafka_stores(tmp_path: Path):
    """A message's store is its offset + 1 (as librdkafka stores it); offsets given are
    recorded as given (an off-by-one store stays off by one in the History)."""
    from confluent_kafka import TopicPartition

    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    fake = FakeConsumer()
    c = StudentConsumer(fake, events, KillPlan(events))
    msgs = c.consume(num_messages=3, timeout=0.1)
    c.store_offsets(msgs[-1])
    c.store_offsets(offsets=[TopicPartition("in", 0, 2)])
    with pytest.raises(TypeError):
        c.store_offsets()
    assert fake.commits[0] == {"stored": {"message": msgs[-1]}}
    got = [e for e in read(tmp_path / "e.jsonl") if e["kind"] == "store_offsets"]
    assert [e["detail"] for e in got] == ["in/0@3", "in/0@2"]


def test_with_auto_commit_a_store_is_the_loops_offset_commit(tmp_path: Path):
    """Auto-commit sends what the loop stored: the store is the crash point "after your
    offset commit", counted when the call returns (the timer's reports reach the loop
    batches late). Without auto-commit a store is not a commit: commit() is."""
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    plan = KillPlan(events, cycle=("poll", "flush", "commit"))
    plan.auto_commit = True
    c = StudentConsumer(FakeConsumer(), events, plan)
    c.store_offsets(c.consume(num_messages=3, timeout=0.1)[-1])
    assert plan.counter.counts["commit"] == 1 and plan.stores == 1
    assert plan.counter.words("commit", "store_offsets, sent by auto-commit") == (
        "after your 1st offset commit (store_offsets, sent by auto-commit), "
        "before your 2nd poll")
    plan = KillPlan(events, cycle=("poll", "flush", "commit"))
    c = StudentConsumer(FakeConsumer(), events, plan)
    c.store_offsets(c.consume(num_messages=3, timeout=0.1)[-1])
    assert plan.counter.counts["commit"] == 0
    c.commit(message=FakeMsg(2))
    assert plan.counter.counts["commit"] == 1


def test_a_short_batch_is_filled_while_input_is_left(tmp_path: Path):
    """full_batches: librdkafka had queued one partition's 4 messages when the timeout
    ran out; the wrapper waits for the rest, so the batch the loop gets is 10 -- and,
    no partition holding 10, spans partitions. Recorded as one poll boundary."""
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    fake = Trickle([[FakeMsg(i, 3) for i in range(4)], [], [FakeMsg(i, 5) for i in range(6)]])
    c = StudentConsumer(fake, events, KillPlan(events, cycle=("poll",)), left=lambda: True)
    got = c.consume(num_messages=10, timeout=0.5)
    assert [(m.partition(), m.offset()) for m in got] == [
        *((3, i) for i in range(4)), *((5, i) for i in range(6))]
    assert fake.asked == [(10, 0.5), (6, 0.1), (6, 0.1)]
    assert c._plan.counter.counts["poll"] == 1
    assert len([e for e in read(tmp_path / "e.jsonl") if e["kind"] == "poll"]) == 10


def test_a_batch_is_left_short_when_no_input_is_left_or_nothing_came(tmp_path: Path):
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    # the last message of the input came: the last batch is what is left, and the next
    # consume() waits only briefly (serving what is due), not its whole timeout
    answers = iter([True, False, False, False])
    fake = Trickle([[FakeMsg(0)], [], [], []])
    c = StudentConsumer(fake, events, KillPlan(events), left=lambda: next(answers))
    assert len(c.consume(num_messages=10, timeout=0.5)) == 1 and len(fake.asked) == 1
    assert c.consume(num_messages=10, timeout=0.5) == [] and fake.asked[-1] == (10, 0.1)
    assert c.consume(num_messages=10) == [] and fake.asked[-1] == (10, 0.1)
    # nothing at all within the timeout while input is left: empty, no further wait
    fake = Trickle([[], [FakeMsg(0)]])
    c = StudentConsumer(fake, events, KillPlan(events), left=lambda: True)
    assert c.consume(num_messages=10, timeout=0.5) == [] and len(fake.asked) == 1
    # without full_batches, consume() hands on librdkafka's batches as they come
    fake = Trickle([[FakeMsg(0)], [FakeMsg(1)]])
    c = StudentConsumer(fake, events, KillPlan(events))
    assert len(c.consume(num_messages=10, timeout=0.5)) == 1


def test_more_than_one_batch_per_consume_is_refused_in_one_line(tmp_path: Path):
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    c = StudentConsumer(FakeConsumer(), events, KillPlan(events))
    with pytest.raises(ValueError, match="num_messages=500 is not accepted"):
        c.consume(num_messages=500, timeout=1)


def test_a_delivery_report_is_recorded_then_handed_to_the_students_callback(tmp_path: Path):
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    fake = FakeProducer()
    p = StudentProducer(fake, events, KillPlan(events))
    seen = []
    p.produce("out", encode("producer-0", 7), b"k", on_delivery=lambda e, m: seen.append(e))
    fake.reports[0](None, type("M", (), {"partition": lambda s: 1, "offset": lambda s: 4})())
    assert seen == [None]
    kinds = [(e["kind"], e.get("outcome"), e.get("offset")) for e in read(tmp_path / "e.jsonl")]
    assert kinds == [("handed", None, None), ("send", "ok", 4)]


def test_load_solution_names_a_missing_function(tmp_path: Path):
    f = tmp_path / "s.py"
    f.write_text("CONSUMER_SETTINGS = {'enable.auto.commit': True}\ndef other(): pass\n")
    with pytest.raises(SystemExit, match="defines no function consume_loop"):
        load_solution(str(f), "consume_loop")
    f.write_text("CONSUMER_SETTINGS = {'enable.auto.commit': True}\n"
                 "def consume_loop(c, p, o, r): pass\n")
    assert load_solution(str(f), "consume_loop").consumer_settings == {
        "enable.auto.commit": True}


def test_the_handler_loop_calls_the_handler_per_message_and_records_database_commits(
        tmp_path: Path):
    import sqlite3
    import types

    from deliverylab.grade.child import run_handler

    db_path = tmp_path / "effects.db"
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
    module = types.ModuleType("student")
    exec((Path(__file__).resolve().parents[3] / "solutions" / "06_idempotent_handler"
          / "reference.py").read_text(), module.__dict__)

    class TwoBatches(FakeConsumer):
        def __init__(self) -> None:
            super().__init__()
            self.calls = 0

        def consume(self, n, timeout):
            self.calls += 1
            return [FakeMsg(0), FakeMsg(1)] if self.calls <= 2 else []  # batch redelivered

    consumer = TwoBatches()
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    polls = iter([True, True, False])
    run_handler({"database": str(db_path), "function": "handle"}, events, consumer, module,
                lambda: next(polls), payments=payments(tmp_path, events))
    rows = sqlite3.connect(db_path).execute("SELECT order_id FROM orders").fetchall()
    assert sorted(r[0] for r in rows) == ["producer-0:0", "producer-0:1"]  # deduplicated
    paid = [(c["message_id"], c["key"], c["effect"]) for c in read(tmp_path / "calls.jsonl")]
    assert paid == [("producer-0:0", "producer-0:0", True), ("producer-0:1", "producer-0:1",
                                                             True)]
    got = read(tmp_path / "e.jsonl")
    # setup(db)'s call is said, so the parent sees a successor waiting in it on a lock
    assert [e["kind"] for e in got][:4] == ["setup", "set_up", "poll", "http_call"]
    writes = [e for e in got if e["kind"] == "db_write"]
    # the redelivered batch's transactions wrote nothing: they are no database commits
    assert [w["values"] for w in writes] == [["producer-0:0"], ["producer-0:1"]]
    assert [e["kind"] for e in got].count("commit") == 2
    assert consumer.commits[0]["offsets"][-1].offset == 2


def test_transactions_are_recorded_and_their_values_tagged(tmp_path: Path):
    class TxnFake(FakeProducer):
        def begin_transaction(self):
            pass

        def send_offsets_to_transaction(self, offsets, metadata, timeout):
            pass

        def commit_transaction(self, timeout):
            pass

    events = Events(str(tmp_path / "e.jsonl"), "stage-1")
    p = StudentProducer(TxnFake(), events, KillPlan(events))
    p.begin_transaction()
    p.produce("out", encode("producer-0", 1), b"k")
    from confluent_kafka import TopicPartition

    p.send_offsets_to_transaction([TopicPartition("in", 0, 2)], object(), 30)
    p.commit_transaction(30)
    got = [(e["kind"], e.get("txn"), e.get("detail")) for e in read(tmp_path / "e.jsonl")]
    assert got == [("begin_txn", "stage-1/txn-1", None), ("handed", "stage-1/txn-1", None),
                   ("send_offsets", "stage-1/txn-1", "in/0@2"),
                   ("commit_txn", "stage-1/txn-1", None)]


class Died(BaseException):
    """Stands for the SIGKILL the plan sends its own process."""


def dying(monkeypatch) -> None:

    def kill(pid, sig):
        raise Died()

    monkeypatch.setattr(os, "kill", kill)


def test_the_plan_kills_right_after_the_planned_flush_and_says_where(tmp_path: Path,
                                                                     monkeypatch):
    from deliverylab.grade.search import CrashPoint

    dying(monkeypatch)
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    plan = KillPlan(events, CrashPoint("flush", 2), ("poll", "flush", "commit"))

    class Flushing(FakeProducer):
        def flush(self, timeout=None):
            return 0

        def __len__(self):
            return 0

    c = StudentConsumer(FakeConsumer(), events, plan)
    p = StudentProducer(Flushing(), events, plan)
    p.flush(30)  # an empty batch's flush (nothing produced): no boundary
    c.consume(2, 0.1)
    p.produce("out", b"1", None)
    p.flush(30)
    c.commit(message=FakeMsg(1))
    p.flush(30)  # nothing since the last: not the 2nd flush either
    c.consume(2, 0.1)
    p.produce("out", b"2", None)
    with pytest.raises(Died):
        p.flush(30)
    fault = [e for e in read(tmp_path / "e.jsonl") if e["kind"] == "fault"]
    assert fault[0]["point"] == "flush#2"
    assert fault[0]["words"] == "after your 2nd flush, before your 2nd offset commit"


def test_a_database_commit_made_by_sql_statements_is_counted_and_killed_at(
        tmp_path: Path, monkeypatch):
    import sqlite3

    from deliverylab.grade.database import StudentDatabase
    from deliverylab.grade.search import CrashPoint

    dying(monkeypatch)
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    plan = KillPlan(events, CrashPoint("db_commit", 2), ("db_commit",), "kill_after_db")
    conn = sqlite3.connect(tmp_path / "d.db")
    db = StudentDatabase(conn, events, plan)
    db.isolation_level = None  # the student's setting reaches the connection
    assert conn.isolation_level is None
    db.execute("CREATE TABLE t (a)")
    db.armed = True
    db.execute("SELECT count(*) FROM t").fetchone()  # a lookup commits nothing
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO t VALUES (1)")
    db.execute("COMMIT")  # the correct solution, once failed
    cur = db.cursor()
    cur.execute("BEGIN")
    cur.execute("INSERT INTO t VALUES (2)")
    with pytest.raises(Died):
        cur.execute("END")
    got = read(tmp_path / "e.jsonl")
    assert [e["detail"] for e in got if e["kind"] == "db_write"] == [
        "database commit #1", "database commit #2"]
    assert got[-1]["words"] == "after your 2nd database commit"


def test_the_students_traceback_shows_their_frames_only(tmp_path: Path):
    from deliverylab.grade.child import StudentRaised, call_student, load_solution

    f = tmp_path / "s.py"
    f.write_text("def consume_loop(c, p, o, r):\n    return {}['missing']\n")
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    fn = load_solution(str(f), "consume_loop", events)
    with pytest.raises(StudentRaised):
        call_student(events, str(f), fn, 1, 2, 3, 4)
    raised = read(tmp_path / "e.jsonl")[-1]
    assert raised["kind"] == "raised"
    text = raised["detail"]
    assert text.startswith("Traceback (your code):") and "line 2, in consume_loop" in text
    assert text.endswith("KeyError: 'missing'") and "child.py" not in text
    f.write_text("import no_such_module_here\ndef consume_loop(c, p, o, r): pass\n")
    with pytest.raises(StudentRaised):  # module-level code is the student's too
        load_solution(str(f), "consume_loop", events)


SOLUTIONS_06 = Path(__file__).resolve().parents[3] / "solutions" / "06_idempotent_handler"


def _student(path: Path):
    import types

    module = types.ModuleType("student")
    exec(path.read_text(), module.__dict__)
    return module


def test_the_stall_stops_the_process_before_its_first_write_of_the_planned_message(
        tmp_path: Path, monkeypatch):
    import signal
    import sqlite3

    from deliverylab.grade.database import StudentDatabase
    from deliverylab.grade.stall import Stall

    sent: list[int] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: sent.append(sig))
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    db = StudentDatabase(sqlite3.connect(tmp_path / "d.db"), events, stall=Stall(events, 2))
    db.execute("CREATE TABLE t (a)")
    db.armed = True
    for n, value in ((1, "producer-0:0"), (2, "producer-0:1")):
        db.count, db.message = n, value
        db.execute("SELECT 1 FROM t WHERE a = ?", (value,)).fetchone()  # a read: no stall
        assert sent == []
        with db:
            db.cursor().execute("INSERT INTO t VALUES (?)", (value,))
        assert sent == ([signal.SIGSTOP] if n == 2 else [])
    db.execute("INSERT INTO t VALUES (3)")  # once only
    assert sent == [signal.SIGSTOP]
    got = [e for e in read(tmp_path / "e.jsonl") if e["kind"] != "db_write"]
    assert [(e["kind"], e.get("message")) for e in got] == [
        ("fault", "producer-0:1"), ("resumed", "producer-0:1")]
    assert got[0]["fault"] == "stall_consumer"
    assert got[0]["words"].startswith("stalled before your first database write for "
                                      "message #2")


def overlap(tmp_path: Path, solution: Path, monkeypatch, grace: float = 0.5
            ) -> tuple[list[str], list[dict]]:
    """The overlap fault's protocol with real SQLite, threads for processes: the first
    instance's handler stops before its first write of the message; a successor
    handles the same message meanwhile; the first resumes once the successor handled
    it, or ``grace`` seconds later (the successor waits on its lock), and finishes its
    call. Returns the orders' ids and the payment service's log; raises what either
    handler raised."""
    import sqlite3
    import threading

    from deliverylab.grade.database import StudentDatabase
    from deliverylab.grade.stall import Stall

    path = tmp_path / "effects.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
    conn.close()
    from deliverylab.services.http import CallLog

    module = _student(solution)
    message, order = "producer-0:7", {"order_id": "producer-0:7", "amount": 7}
    service = CallLog(tmp_path / "calls.jsonl")  # one payment service, both instances
    raised: list[BaseException] = []

    def instance(name: str, stall: Stall | None) -> None:
        events = Events(str(tmp_path / f"{name}.jsonl"), name)
        db = StudentDatabase(sqlite3.connect(path, timeout=5), events, stall=stall)
        try:
            if hasattr(module, "setup"):
                module.setup(db)
                db.commit()
            db.armed, db.count, db.message = True, 1, message
            module.handle(db, message, order, ("in", 0, 7),
                          payments(tmp_path, events, service=service))
        except BaseException as exc:  # noqa: BLE001 -- handed to the test
            raised.append(exc)
        finally:
            db.close()

    successor = threading.Thread(target=instance, args=("stage-1", None))

    def stop(pid, sig):  # SIGSTOP: the successor runs while this one is stopped
        successor.start()
        successor.join(grace)

    monkeypatch.setattr(os, "kill", stop)
    instance("stage-0", Stall(Events(str(tmp_path / "stall.jsonl"), "stage-0"), 1))
    successor.join(10)
    assert not successor.is_alive(), "the successor never finished: a deadlock"
    if raised:
        raise raised[0]
    assert read(tmp_path / "stall.jsonl")[0]["kind"] == "fault"  # the stall was placed
    rows = sqlite3.connect(path).execute("SELECT order_id FROM orders").fetchall()
    return [r[0] for r in rows], read(tmp_path / "calls.jsonl")


def _declared(path: Path) -> str:
    """A wrong solution's EXPECTED_FAILURE, read without running it."""
    import ast

    return next((n.value.value for n in ast.parse(path.read_text()).body
                 if isinstance(n, ast.Assign)
                 and getattr(n.targets[0], "id", "") == "EXPECTED_FAILURE"), "")


@pytest.mark.parametrize("solution", sorted(p.name for p in SOLUTIONS_06.glob("*.py")
                                            if p.name == "reference.py"
                                            or p.name.startswith("correct_")))
def test_a_correct_handler_makes_one_row_when_two_instances_overlap(tmp_path: Path,
                                                                    monkeypatch, solution):
    # correct_begin_immediate holds the write lock through the stall: its successor
    # waits at BEGIN IMMEDIATE until the first resumes (after the grace), then sees the
    # mark; the others take no lock before their first write.
    rows, calls = overlap(tmp_path, SOLUTIONS_06 / solution, monkeypatch)
    assert rows == ["producer-0:7"]
    assert [c["message_id"] for c in calls if c["effect"]] == ["producer-0:7"]  # paid once


OVERLAP_WRONG = sorted(p.name for p in SOLUTIONS_06.glob("wrong_*.py")
                       if _declared(p).startswith("stall_consumer x"))


def test_the_overlap_faults_wrong_solutions_are_the_checks_outside_the_transaction():
    assert OVERLAP_WRONG == ["wrong_check_then_insert.py", "wrong_select_inside_with.py"]


@pytest.mark.parametrize("solution", OVERLAP_WRONG)
def test_a_check_outside_the_writes_transaction_makes_two_rows_when_instances_overlap(
        tmp_path: Path, monkeypatch, solution):
    assert overlap(tmp_path, SOLUTIONS_06 / solution, monkeypatch)[0] == ["producer-0:7"] * 2


def test_under_the_overlap_fault_a_refused_offset_commit_is_recorded_and_the_loop_goes_on(
        tmp_path: Path):
    import sqlite3

    from confluent_kafka import KafkaError, KafkaException

    from deliverylab.grade.child import run_handler

    db_path = tmp_path / "effects.db"
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
    module = _student(SOLUTIONS_06 / "reference.py")

    class Refusing(FakeConsumer):
        def consume(self, n, timeout):
            return [FakeMsg(0), FakeMsg(1)]

        def commit(self, **kw):
            super().commit(**kw)
            if len(self.commits) == 1:  # the group moved on: the batch is redelivered
                raise KafkaException(KafkaError(KafkaError.UNKNOWN_MEMBER_ID))

    spec = {"database": str(db_path), "function": "handle"}
    events = Events(str(tmp_path / "a.jsonl"), "stage-1")
    with pytest.raises(KafkaException):  # outside the overlap fault: the grader's error
        run_handler(spec, events, Refusing(), module, iter([True, False]).__next__,
                    payments=payments(tmp_path, events))
    consumer = Refusing()
    events = Events(str(tmp_path / "e.jsonl"), "stage-1")
    run_handler({**spec, "overlap": True}, events, consumer, module,
                iter([True, True, False]).__next__, payments=payments(tmp_path, events))
    commits = [e for e in read(tmp_path / "e.jsonl") if e["kind"] == "commit"]
    assert [c["outcome"] for c in commits] == ["fail", "ok"]
    assert "UNKNOWN_MEMBER_ID" in commits[0]["error"]
    assert len(consumer.commits) == 2


def test_a_stalled_instance_ends_right_after_the_call_it_stalled_in(tmp_path: Path,
                                                                   monkeypatch):
    import sqlite3

    from deliverylab.grade.child import run_handler
    from deliverylab.grade.stall import Stall

    monkeypatch.setattr(os, "kill", lambda pid, sig: None)  # resumed at once
    db_path = tmp_path / "effects.db"
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
    consumer = FakeConsumer()  # hands over 10 messages a call, for ever
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    run_handler({"database": str(db_path), "function": "handle", "overlap": True}, events,
                consumer, _student(SOLUTIONS_06 / "reference.py"), lambda: True,
                stall=Stall(events, 2), payments=payments(tmp_path, events))
    got = read(tmp_path / "e.jsonl")
    assert [e["message"] for e in got if e["kind"] == "handled"] == [
        "producer-0:0", "producer-0:1"]
    assert [tp.offset for tp in consumer.commits[0]["offsets"]] == [1, 2]
    assert len(consumer.commits) == 1


#: What a student's process must not import: the grader's own side (what it grades
#: with, its report and compare, its cluster, nemesis, proxy and read-back; chapter 06's
#: judgement and the payment service's server) and Spark, pandas and matplotlib. Its
#: package (grade/__init__.py, run first by ``python -m``) loads them on first use.
NOT_THE_CHILDS = ("deliverylab.grade.runner", "deliverylab.grade.report",
                  "deliverylab.grade.exercises", "deliverylab.grade.precheck",
                  "deliverylab.grade.compare", "deliverylab.grade.spark_run",
                  "deliverylab.grade.spark_server", "deliverylab.nemesis",
                  "deliverylab.cluster", "deliverylab.proxy", "deliverylab.readers",
                  "deliverylab.services.check", "deliverylab.spark", "http.server",
                  "pyspark", "pandas", "matplotlib")


def test_the_child_process_imports_only_the_students_side(unneeded_imports):
    assert unneeded_imports("deliverylab.grade.child", NOT_THE_CHILDS) == []
