"""A student's delivery callback that raises, inside the grader's child: raised as
theirs, with its own type and line, after the producer call that served it -- never
inside librdkafka, where confluent-kafka mangles it (a SystemError on Python < 3.12).

Stand-in producers serve the reports the way librdkafka does (from inside flush,
poll, commit_transaction); one test runs a real librdkafka producer against
librdkafka's in-process mock cluster (bench/client_callbacks.py), no Kafka needed."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from deliverylab.grade.callbacks import StudentCallbacks
from deliverylab.grade.child import (
    Events,
    KillPlan,
    StudentProducer,
    StudentRaised,
    call_student,
    load_solution,
)
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
