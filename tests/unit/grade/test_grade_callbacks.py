"""A student's delivery callback that raises, inside the grader's child: raised as
theirs, with its own type and line, after the producer call that served it -- never
inside librdkafka, where confluent-kafka mangles it (a SystemError on Python < 3.12).

Stand-in producers serve the reports the way librdkafka does (from inside flush,
poll, commit_transaction); one test runs a real librdkafka producer against
librdkafka's in-process mock cluster (bench/client_callbacks.py), no Kafka needed."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from deliverylab.grade.callbacks import StudentCallbacks
from deliverylab.grade.child import StudentProducer, StudentRaised, call_student, load_solution
from deliverylab.grade.events import Events, KillPlan
from deliverylab.values import encode


class Msg:
    """A delivered message, as a delivery report hands it over."""

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 4


class Serving:
    """A stand-in producer that serves its delivery reports from inside its blocking
    calls, as librdkafka does (flush, poll, commit_transaction)."""

    def __init__(self) -> None:
        self.reports: list[Any] = []
        self.calls: list[str] = []

    def produce(self, topic, value, key, on_delivery=None):
        self.reports.append(on_delivery)

    def _serve(self, call: str) -> int:
        self.calls.append(call)
        reports, self.reports = self.reports, []
        for report in reports:
            report(None, Msg())
        return 0

    def __len__(self) -> int:  # what librdkafka still holds: the reports not served
        return len(self.reports)

    def flush(self, timeout: float = -1) -> int:
        return self._serve("flush")

    def poll(self, timeout: float = -1) -> int:
        return self._serve("poll")

    def begin_transaction(self) -> None:
        self.calls.append("begin")

    def commit_transaction(self, timeout: float = -1) -> None:
        self._serve("commit_transaction")


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def producer(tmp_path: Path, inner: Any) -> StudentProducer:
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    return StudentProducer(inner, events, KillPlan(events))


def offset_above_none(err, msg):  # the student's callback: a TypeError raised by C code
    return msg.offset() >= None


@pytest.mark.parametrize("call", ["flush", "poll"])
def test_a_callback_that_raises_is_raised_after_the_call_as_the_students(tmp_path, call):
    inner = Serving()
    p = producer(tmp_path, inner)
    p.produce("out", encode("producer-0", 1), b"k", on_delivery=offset_above_none)
    with pytest.raises(TypeError, match="'>=' not supported") as caught:
        getattr(p, call)(10)  # served inside the call, raised when it returns
    assert inner.calls == [call]
    assert f"from inside producer.{call}()" in caught.value.__notes__[0]
    # the report itself was recorded first: the value reached the broker
    assert [e["kind"] for e in read(tmp_path / "e.jsonl")] == ["handed", "send"]
    getattr(p, call)(10)  # raised once: the next call is clean


def test_a_callback_error_served_by_commit_transaction_follows_the_brokers_answer(tmp_path):
    inner = Serving()
    p = producer(tmp_path, inner)
    p.begin_transaction()
    p.produce("out", encode("producer-0", 1), b"k", on_delivery=offset_above_none)
    with pytest.raises(TypeError):
        p.commit_transaction(30)
    kinds = [(e["kind"], e.get("outcome")) for e in read(tmp_path / "e.jsonl")]
    # the transaction did commit (recorded as the broker answered), then theirs raised
    assert kinds == [("begin_txn", "ok"), ("handed", None), ("send", "ok"),
                     ("commit_txn", "ok")]


def test_a_kafka_exception_in_a_callback_still_passes_through_into_the_client(tmp_path):
    fatal = KafkaException(KafkaError(KafkaError._FENCED, "fenced", fatal=True))

    def raises_fatal(err, msg):
        raise fatal

    inner = Serving()
    p = producer(tmp_path, inner)
    p.produce("out", encode("producer-0", 1), b"k", callback=raises_fatal)
    with pytest.raises(KafkaException):  # out of the client's own serving, as before
        inner.flush()
    callbacks = StudentCallbacks()
    callbacks.check("flush")  # nothing kept: nothing raised


def test_the_students_traceback_names_their_callbacks_line_and_their_call(tmp_path):
    solution = tmp_path / "loop.py"
    solution.write_text(
        "def report(err, msg):\n"
        "    return msg.offset() >= None\n"
        "\n"
        "def transaction_loop(consumer, producer, output_topic, running):\n"
        "    producer.produce(output_topic, b'v', key=b'k', on_delivery=report)\n"
        "    producer.flush(10)\n")
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    fn = load_solution(str(solution), "transaction_loop", events)
    p = StudentProducer(Serving(), events, KillPlan(events))
    with pytest.raises(StudentRaised):
        call_student(events, str(solution), fn, None, p, "out", lambda: True)
    raised = read(tmp_path / "e.jsonl")[-1]
    assert raised["kind"] == "raised"
    text = raised["detail"]
    assert "line 6, in transaction_loop" in text and "line 2, in report" in text
    assert "TypeError: '>=' not supported" in text and "delivery callback" in text
    assert "child.py" not in text and "callbacks.py" not in text
    assert "SystemError" not in text


def _mock_cluster():
    """librdkafka's own in-process mock broker (bench/client_callbacks.py drives it)."""
    path = Path(__file__).resolve().parents[3] / "bench" / "client_callbacks.py"
    spec = importlib.util.spec_from_file_location("client_callbacks_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.MockCluster()


def test_a_real_producers_flush_raises_the_students_error_not_the_clients_systemerror(
        tmp_path):
    """The real client: confluent-kafka (up to 2.16.1, Python 3.11) turns a C-raised
    error in a callback into a SystemError out of flush(); through the child's wrapper
    the student gets their TypeError."""
    from confluent_kafka import Producer

    from deliverylab.clients import config

    mock = _mock_cluster()
    mock.create_topic("out")
    p = producer(tmp_path, Producer(config(mock.bootstrap)))
    p.produce("out", encode("producer-0", 1), b"k", on_delivery=offset_above_none)
    with pytest.raises(TypeError, match="'>=' not supported"):
        p.flush(15)
    assert [e["outcome"] for e in read(tmp_path / "e.jsonl") if e["kind"] == "send"] == [
        "ok"]


# --- the consumer's callbacks: CONSUMER_SETTINGS' and subscribe()'s ---------------------
#
# Each case runs the child's own run() in this process on librdkafka's mock cluster (or,
# for the callbacks of a consumer that cannot connect, against a closed port), around a
# hand-written student loop whose callback compares with None: a TypeError raised by C
# code, which confluent-kafka 2.16.1 on Python 3.11 turns into the SystemError (and a
# Python-raised one loses the callback's line): test_without_the_guard_... below.

CLOSED = "127.0.0.1:1"  # nothing listens: librdkafka reports and logs refused connects

LOOP = '''
import time

def consume_loop(consumer, producer, output_topic, running):
    {subscribe}
    slept = False
    while running():
        msgs = [m for m in consumer.consume(num_messages=10, timeout=0.5) if not m.error()]
        for msg in msgs:
            producer.produce(output_topic, msg.value(), key=msg.key())
        producer.flush(10)
        if msgs and not {auto}:
            consumer.commit(asynchronous=False)
        if msgs and {sleep} and not slept:  # past max.poll.interval.ms: the group moves on
            time.sleep(2.5)
            slept = True
'''

#: name: (CONSUMER_SETTINGS, subscribe() keyword or "", the callback's arguments,
#: connects, and the calls that may serve it).
CASES = {
    "on_commit": ('{"enable.auto.commit": True, "auto.commit.interval.ms": 100, '
                  '"on_commit": callback}', "", "err, partitions", True,
                  ("consume", "close")),
    "error_cb": ('{"error_cb": callback, "reconnect.backoff.ms": 10}', "", "err", False,
                 ("consume",)),
    "stats_cb": ('{"statistics.interval.ms": 100, "stats_cb": callback}', "", "text", True,
                 ("consume", "close")),
    "logger": ('{"logger": Logger(), "reconnect.backoff.ms": 10}', "", "level, *args",
               False, ("consume",)),
    "on_assign": ("{}", "on_assign", "consumer, partitions", True, ("consume",)),
    # consume too: on a loaded host the mock group can rebalance while the loop consumes
    # (seen beside a grading job: the revoke came from consume(), not from close()).
    "on_revoke": ("{}", "on_revoke", "consumer, partitions", True, ("consume", "close")),
    "on_lost": ('{"session.timeout.ms": 1000, "max.poll.interval.ms": 1000, '
                '"heartbeat.interval.ms": 100}', "on_lost", "consumer, partitions", True,
                ("consume", "close")),  # close: the loop may have ended by the next poll
}


def _source(name: str, topic: str, body: str) -> str:
    settings, rebalance, params, _, _ = CASES[name]
    args = params.split(", ")
    if name == "logger":
        head = "class Logger:\n    def log(self, level, *args):\n"
        indent = "        "
    else:
        head = f"def callback({params}):\n"
        indent = "    "
    subscribe = (f"consumer.subscribe([{topic!r}], {rebalance}=callback)" if rebalance
                 else "pass")
    arg = {"logger": "level", "error_cb": "err.code()"}.get(name, args[0])
    return (head + indent + body.format(arg=arg)
            + f"\n\nCONSUMER_SETTINGS = {settings}\n"
            + LOOP.format(subscribe=subscribe, auto=name == "on_commit",
                          sleep=name == "on_lost"))


RAISES = "return {arg} >= None  # raises"
NOTES = "seen = open(__file__ + '.calls', 'a').write(repr({arg})[:40] + chr(10))"


@pytest.fixture(scope="module")
def mock():
    """One mock cluster for these tests (it lives as long as the process): each test
    has topics and a group of its own."""
    cluster = _mock_cluster()
    cluster.group_rebalance_delay(0)
    return cluster


def _run(tmp_path: Path, mock, name: str, body: str, timeout: float = 20):
    from confluent_kafka import Producer

    from deliverylab.grade import child

    topic = f"in-{tmp_path.name}"
    connects = CASES[name][3]
    ends = {0: 0}
    if connects:
        mock.create_topic(topic, 2)
        mock.create_topic(f"out-{tmp_path.name}")
        p = Producer({"bootstrap.servers": mock.bootstrap})
        for i in range(6):
            p.produce(topic, encode("producer-0", i), b"k", partition=i % 2)
        p.flush(10)
        ends = {0: 3, 1: 3}
    solution = tmp_path / "loop.py"
    solution.write_text(_source(name, topic, body))
    spec = {"solution": str(solution), "function": "consume_loop", "process": "stage-0",
            "bootstrap": mock.bootstrap if connects else CLOSED, "input": topic,
            "output": f"out-{tmp_path.name}", "group": f"g-{tmp_path.name}",
            "events": str(tmp_path / "e.jsonl"), "ends": ends, "timeout": timeout,
            "full_batches": False, "producer": {"linger.ms": 5},
            "consumer": {"auto.offset.reset": "earliest", "enable.auto.commit": False}}
    return child.run(spec), read(tmp_path / "e.jsonl"), solution


@pytest.mark.parametrize("name", list(CASES))
def test_a_raising_consumer_callback_is_recorded_as_the_students_error(tmp_path, mock,
                                                                      name):
    code, events, solution = _run(tmp_path, mock, name, RAISES)
    from deliverylab.grade.child import RAISED

    assert code == RAISED
    text = [e for e in events if e["kind"] == "raised"][-1]["detail"]
    line = next(i for i, ln in enumerate(solution.read_text().splitlines(), 1)
                if ln.endswith("# raises"))
    assert f'loop.py", line {line}, in ' in text  # the callback's own line
    assert "TypeError: '>=' not supported between instances of" in text
    assert "SystemError" not in text and "child.py" not in text
    label = "logger" if name in ("logger", "error_cb", "stats_cb") else f"{name} callback"
    label = name if name in ("error_cb", "stats_cb") else label
    calls = "|".join(CASES[name][4])
    assert re.search(rf"raised in your {label}, which librdkafka called from inside "
                     rf"consumer\.({calls})\(\)", text), text


@pytest.mark.parametrize("name", list(CASES))
def test_a_consumer_callback_that_does_not_raise_changes_nothing(tmp_path, mock, name):
    connects = CASES[name][3]
    code, events, solution = _run(tmp_path, mock, name, NOTES, 20 if connects else 2)
    assert code == 0 and not [e for e in events if e["kind"] == "raised"]
    assert Path(str(solution) + ".calls").read_text().strip()  # it was called
    if connects:  # the loop copied its input, and (auto-commit) the lab saw the commits
        assert sum(e["kind"] == "send" and e["outcome"] == "ok" for e in events) >= 6
        assert any(e["kind"] == "stopped" for e in events)
    if name == "on_commit":
        assert [e for e in events if e["kind"] == "commit" and e.get("how") == "auto"]
    if not connects:  # it ran to its deadline, reporting and logging
        assert any(e["kind"] == "deadline" for e in events)


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="confluent-kafka restores a "
                    "callback's exception whole on 3.12+ (PyErr_GetRaisedException)")
@pytest.mark.parametrize("raised", ["c", "python"])
def test_without_the_guard_confluent_kafka_mangles_a_rebalance_callbacks_error(mock,
                                                                               raised):
    """Why subscribe()'s callbacks are guarded too: through a bare Consumer on Python
    3.11 a C-raised error comes out of consume() as the SystemError, and a Python-raised
    one keeps its type but not a frame of the callback."""
    from confluent_kafka import Consumer

    topic = f"bare-{raised}"
    mock.create_topic(topic)

    def assigned(consumer, partitions):
        if raised == "c":
            return len(partitions) >= None
        raise ValueError("mine")

    c = Consumer({"bootstrap.servers": mock.bootstrap, "group.id": topic})
    c.subscribe([topic], on_assign=assigned)
    try:
        with pytest.raises(Exception) as caught:
            for _ in range(20):
                c.consume(10, 0.5)
    finally:
        c.close()
    if raised == "c":
        assert caught.type is SystemError and "not a BaseException subclass" in str(
            caught.value)
    else:
        assert caught.type is ValueError
        assert "assigned" not in [f.name for f in traceback.extract_tb(caught.tb)]


def test_throttle_cb_is_guarded_like_the_others():
    """librdkafka's mock broker sends no throttle, so this callback is called by hand;
    the consumer takes the guarded one (built here, never connected)."""
    from confluent_kafka import Consumer

    def throttled(event):
        return event.throttle_time >= None

    callbacks = StudentCallbacks("consumer")
    conf = callbacks.settings({"throttle_cb": throttled})
    Consumer({**conf, "group.id": "g"}).close()  # confluent-kafka accepts it
    conf["throttle_cb"](type("ThrottleEvent", (), {"throttle_time": 0.5})())
    with pytest.raises(TypeError, match="'>=' not supported") as caught:
        callbacks.check("poll")
    assert "your throttle_cb, which librdkafka called from inside consumer.poll()" in (
        caught.value.__notes__[0])
    assert "throttled" in [f.name for f in traceback.extract_tb(caught.tb)]
    callbacks.check("poll")  # raised once


def test_an_error_c_code_left_set_under_a_result_is_kept_too():
    """confluent-kafka's KafkaError compared with None returns False and leaves a
    TypeError set: the callback returns normally, the error still pending."""
    callbacks = StudentCallbacks("consumer")
    conf = callbacks.settings({"error_cb": lambda err: err == None})  # noqa: E711
    conf["error_cb"](KafkaError(KafkaError._TRANSPORT))
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        callbacks.check("consume")


def test_theirs_runs_after_the_labs_on_commit_not_instead():
    got = []
    conf = StudentCallbacks("consumer").settings(
        {"on_commit": lambda err, offsets: got.append(("theirs", offsets))},
        on_commit=lambda err, offsets: got.append(("lab", offsets)))
    conf["on_commit"](None, [1])
    assert got == [("lab", [1]), ("theirs", [1])]
    assert StudentCallbacks().settings({}, on_commit=print)["on_commit"] is print


def test_a_handlers_consumer_settings_callback_is_the_students_error(tmp_path):
    """06: the lab's loop calls consume(); a callback of the student's
    CONSUMER_SETTINGS that raised in there is recorded as theirs."""
    import sqlite3

    from deliverylab.grade.child import run_handler

    solution = tmp_path / "handler.py"
    solution.write_text("def on_error(err):\n    return err.code() >= None\n\n"
                        "def handle(db, message_id, order, where, payments):\n    pass\n")
    module = load_solution(str(solution), "handle").module
    callbacks = StudentCallbacks("consumer")
    conf = callbacks.settings({"error_cb": module.on_error})

    class Failing:  # a consumer whose fetch serves a transport error report
        def consume(self, n, timeout):
            conf["error_cb"](KafkaError(KafkaError._TRANSPORT))
            return []

    sqlite3.connect(tmp_path / "db").close()
    events = Events(str(tmp_path / "e.jsonl"), "stage-0")
    with pytest.raises(StudentRaised):
        run_handler({"database": str(tmp_path / "db"), "function": "handle",
                     "solution": str(solution)}, events, Failing(), module, lambda: True,
                    payments=object(), callbacks=callbacks)
    text = read(tmp_path / "e.jsonl")[-1]["detail"]
    assert 'line 2, in on_error' in text and "TypeError" in text
    assert "your error_cb, which librdkafka called from inside consumer.consume()" in text


MIXED = '''
import time

seen = []  # the offsets of every on_commit report: the lab records first, then this


def reported(err, partitions):
    seen.extend(tp.offset for tp in partitions)


CONSUMER_SETTINGS = {"enable.auto.commit": True, "auto.commit.interval.ms": 1000,
                     "on_commit": reported}

def consume_loop(consumer, producer, output_topic, running):
    batches = 0
    while running():
        msgs = [m for m in consumer.consume(num_messages=3, timeout=0.5) if not m.error()]
        if msgs and batches == 0:
            consumer.commit(asynchronous=False)  # the first batch by hand, at once
        for msg in msgs:
            producer.produce(output_topic, msg.value(), key=msg.key())
        producer.flush(10)
        if msgs:
            batches += 1
        if batches == 2:  # the second batch is the timer's: served until it reported
            deadline = time.monotonic() + 10
            while 6 not in seen and time.monotonic() < deadline:
                consumer.consume(num_messages=1, timeout=0.2)
'''


def _one_partition_spec(tmp_path: Path, mock, loop: str, values: int,
                        consumer: dict) -> dict:
    """A child spec for ``loop`` over one input partition holding ``values`` values."""
    from confluent_kafka import Producer

    topic = f"in-{tmp_path.name}"
    mock.create_topic(topic, 1)
    mock.create_topic(f"out-{tmp_path.name}")
    p = Producer({"bootstrap.servers": mock.bootstrap})
    for i in range(values):
        p.produce(topic, encode("producer-0", i), b"k", partition=0)
    p.flush(10)
    solution = tmp_path / "loop.py"
    solution.write_text(loop)
    return {"solution": str(solution), "function": "consume_loop", "process": "stage-0",
            "bootstrap": mock.bootstrap, "input": topic, "output": f"out-{tmp_path.name}",
            "group": f"g-{tmp_path.name}", "events": str(tmp_path / "e.jsonl"),
            "ends": {0: values}, "timeout": 20, "full_batches": False,
            "producer": {"linger.ms": 5}, "consumer": consumer}


def test_timer_commits_after_an_explicit_commit_are_recorded(tmp_path, mock):
    """confluent-kafka's synchronous commit() never calls on_commit (it takes its own
    return callback: Consumer.c's commit_queue), and the grader's commits are all
    synchronous: a timer commit after one must still be recorded, not taken for the
    explicit commit's report."""
    from deliverylab.grade import child

    spec = _one_partition_spec(tmp_path, mock, MIXED, 6, {"auto.offset.reset": "earliest"})
    assert child.run(spec) == 0
    events = read(tmp_path / "e.jsonl")
    loop = events[:next(i for i, e in enumerate(events) if e["kind"] == "stopped")]
    commits = [e for e in loop if e["kind"] == "commit"]  # before close()'s own commit
    explicit = [i for i, e in enumerate(commits) if e.get("how") is None]
    assert explicit, commits  # the first batch's, by hand
    # The timer's commit of the second batch, after it: recorded, not taken for a report
    # the explicit commit never gets (a timer commit before it, on a slow machine, is
    # recorded too and changes nothing here).
    assert any(e.get("how") == "auto" and e["outcome"] == "ok" and e["detail"].endswith("@6")
               for e in commits[explicit[0] + 1:]), commits


COMMITS_GIVEN = '''
from confluent_kafka import TopicPartition

CONSUMER_SETTINGS = {"enable.auto.offset.store": False}

def consume_loop(consumer, producer, output_topic, running):
    done = False
    while running():
        msgs = [m for m in consumer.consume(num_messages=3, timeout=0.5) if not m.error()]
        if msgs and not done:  # three consumed; the placeholder below is the commit
            COMMIT
            done = True
'''


#: The loop stores the first of three and makes an offset-less commit.
STORES_LESS = COMMITS_GIVEN.replace("COMMIT", "consumer.store_offsets(message=msgs[0])\n"
                                    "            consumer.commit(asynchronous=False)")


def committed(mock, group: str, topic: str) -> int:
    """The offset the broker holds for ``group`` on ``topic``'s partition 0."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": mock.bootstrap, "group.id": group})
    try:
        return c.committed([TopicPartition(topic, 0)], 10)[0].offset
    finally:
        c.close()


def test_an_offset_less_commit_is_recorded_with_the_stored_offsets_not_the_position(
        tmp_path, mock):
    """librdkafka's offset-less commit sends what is *stored*; a loop that stores less
    than it consumed commits less than its position. The History must say what the
    broker got (offset 1), not the position (3): the grader judges what was promised."""

    from deliverylab.grade import child

    spec = _one_partition_spec(tmp_path, mock, STORES_LESS, 3, {
        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    topic, group = spec["input"], spec["group"]
    assert child.run(spec) == 0  # it consumed all three: caught up
    commits = [e for e in read(tmp_path / "e.jsonl") if e["kind"] == "commit"]
    assert [(e["outcome"], e["detail"]) for e in commits if e.get("how") is None] == [
        ("ok", f"{topic}/0@1")], commits
    assert committed(mock, group, topic) == 1  # and that is what the broker holds


@pytest.mark.parametrize("commit", [
    "consumer.commit(message=msgs[1], asynchronous=False)",
    "consumer.commit(offsets=[TopicPartition(msgs[0].topic(), 0, 2)], asynchronous=False)",
    "consumer.commit(message=msgs[1])",  # asynchronous: the grader waits for it anyway
], ids=["message", "offsets", "message-async"])
def test_a_commit_of_a_message_or_of_offsets_is_recorded_as_the_broker_holds_it(
        tmp_path, mock, commit):
    """A message's commit is its offset + 1, offsets given are committed as given: the
    History says what the broker holds, whichever way the loop named it."""

    from deliverylab.grade import child

    spec = _one_partition_spec(tmp_path, mock, COMMITS_GIVEN.replace("COMMIT", commit), 3,
                               {"auto.offset.reset": "earliest", "enable.auto.commit": False})
    topic, group = spec["input"], spec["group"]
    assert child.run(spec) == 0
    commits = [e for e in read(tmp_path / "e.jsonl") if e["kind"] == "commit"]
    assert [(e["outcome"], e["detail"]) for e in commits if e.get("how") is None] == [
        ("ok", f"{topic}/0@2")], commits
    assert committed(mock, group, topic) == 2


def test_an_offset_less_commit_with_nothing_stored_is_a_failed_commit(tmp_path, mock):
    """Nothing stored, nothing sent: librdkafka raises (_NO_OFFSET), the History records
    a failed commit, and the student's exception ends the run as theirs."""
    from deliverylab.grade import child

    loop = COMMITS_GIVEN.replace("COMMIT", "consumer.commit(asynchronous=False)")
    spec = _one_partition_spec(tmp_path, mock, loop, 3, {
        "auto.offset.reset": "earliest", "enable.auto.commit": False})
    assert child.run(spec) == child.RAISED
    commits = [e for e in read(tmp_path / "e.jsonl") if e["kind"] == "commit"]
    assert [(e["outcome"], e["detail"]) for e in commits if e.get("how") is None] == [
        ("fail", "the stored offsets")], commits
    assert "_NO_OFFSET" in commits[0]["error"] or "No offset" in commits[0]["error"], commits
