"""The child process that runs a student's code: ``python -m deliverylab.grade.child spec``.

Why a process of its own: a crash fault must be a real ``SIGKILL`` of *the student's*
process -- mid-loop, with whatever its producer still holds in memory -- and a student
bug (an endless loop, an exception) must not take the grader down with it.

Clients record, checkers judge: the student never calls the Recorder. The consumer and
producer handed to their function are thin wrappers around real librdkafka clients that
write one JSON line per thing that happened (``poll``, ``handed`` to the producer,
``send`` from its delivery report, ``commit``, ``fault``) to the run's events file; the
parent turns those lines into History ops (:func:`deliverylab.grade.runner.to_history`).
Every line is written through at once, so it survives the ``SIGKILL`` that ends the run.

The kill plan (``kill_after_commits``, ``kill_at_value``) is the seeded crash: the
process SIGKILLs itself right after its n-th offset commit returned, or when it hands
its k-th value to the producer, whichever comes first.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from ..clients import config
from ..history import outcome_of
from ..values import decode

#: Most messages one ``consume()`` may return: the contract's batch, so that "a crash
#: redoes at most one batch" means the same thing for every solution.
MAX_BATCH = 10


class Events:
    """The run's events file: one JSON line per event, written through at once."""

    def __init__(self, path: str, process: str) -> None:
        self.file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115
        self.process = process

    def write(self, kind: str, **fields: Any) -> None:
        line = {"t": time.monotonic(), "process": self.process, "kind": kind, **fields}
        self.file.write(json.dumps(line) + "\n")


def _value_text(raw: bytes | str | None) -> str | None:
    try:
        return str(decode(raw)) if raw is not None else None
    except ValueError:
        return None


def _offsets_text(offsets: list[TopicPartition]) -> str:
    return ",".join(f"{tp.topic}/{tp.partition}@{tp.offset}" for tp in offsets)


class KillPlan:
    """The seeded crash: SIGKILL after the n-th commit, or at the k-th value handed.

    ``counts`` says which call is "a commit": the consumer's ``commit`` (exercise 02)
    or the producer's ``commit_transaction`` (exercise 04)."""

    def __init__(self, events: Events, after_commits: int | None,
                 at_value: int | None, counts: str = "commit") -> None:
        self.events = events
        self.after_commits, self.at_value, self.counts = after_commits, at_value, counts
        self.commits = 0
        self.handed = 0

    def _kill(self, why: str) -> None:
        self.events.write("fault", fault="crash_consumer", outcome="info",
                          detail=f"{self.events.process} is SIGKILLed {why}")
        self.events.file.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def committed(self, call: str = "commit") -> None:
        if call != self.counts:
            return
        self.commits += 1
        if self.after_commits is not None and self.commits >= self.after_commits:
            self._kill(f"right after its {self.counts} #{self.commits} returned")

    def handing(self) -> None:
        self.handed += 1
        if self.at_value is not None and self.handed >= self.at_value:
            self._kill(f"while handing its value #{self.handed} to the producer")


class StudentConsumer:
    """A librdkafka ``Consumer`` that records what it delivers and commits.

    Everything else passes through. Commits are made synchronously whatever
    ``asynchronous`` says, so that a crash "right after your commit" is a crash after
    a commit that reached the broker.
    """

    def __init__(self, consumer: Consumer, events: Events, plan: KillPlan) -> None:
        self._c, self._events, self._plan = consumer, events, plan

    def __getattr__(self, name: str) -> Any:
        return getattr(self._c, name)

    def _record(self, msgs: list[Any]) -> list[Any]:
        for m in msgs:
            if m is not None and not m.error():
                value = _value_text(m.value())
                self._events.write("poll", values=[value] if value else [], topic=m.topic(),
                                   partition=m.partition(), offset=m.offset())
        return msgs

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        if not isinstance(num_messages, int) or not 1 <= num_messages <= MAX_BATCH:
            raise ValueError(f"num_messages={num_messages!r} is not accepted; expected a "
                             f"whole number from 1 to {MAX_BATCH} (the exercise's batch)")
        return self._record(self._c.consume(num_messages, timeout))

    def poll(self, timeout: float | None = None) -> Any:
        msg = self._c.poll(timeout) if timeout is not None else self._c.poll()
        self._record([msg])
        return msg

    def commit(self, message: Any = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> Any:
        if offsets is not None:
            what = _offsets_text(offsets)
        elif message is not None:
            what = _offsets_text([TopicPartition(message.topic(), message.partition(),
                                                 message.offset() + 1)])
        else:  # the stored offsets: by default, one past each message consumed
            what = _offsets_text([tp for tp in self._c.position(self._c.assignment())
                                  if tp.offset >= 0])
        kwargs: dict[str, Any] = {"asynchronous": False}
        if offsets is not None:
            kwargs["offsets"] = offsets
        elif message is not None:
            kwargs["message"] = message
        try:
            result = self._c.commit(**kwargs)
        except Exception as exc:
            self._events.write("commit", outcome="fail", detail=what, error=str(exc))
            raise
        self._events.write("commit", outcome="ok", detail=what)
        self._plan.committed("commit")
        return result


class StudentProducer:
    """A librdkafka ``Producer`` whose every value's delivery report is recorded, and
    (transactional) every transaction's begin, offsets, commit and abort, each value
    tagged with the transaction it was written in."""

    def __init__(self, producer: Producer, events: Events, plan: KillPlan) -> None:
        self._p, self._events, self._plan = producer, events, plan
        self._txn: str | None = None
        self._txns = 0

    def begin_transaction(self, *args: Any) -> Any:
        result = self._p.begin_transaction(*args)
        self._txns += 1
        self._txn = f"{self._events.process}/txn-{self._txns}"
        self._events.write("begin_txn", outcome="ok", txn=self._txn)
        return result

    def _end(self, kind: str, call: Callable, *args: Any, detail: str | None = None) -> Any:
        txn = self._txn
        try:
            result = call(*args)
        except Exception as exc:
            err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            definite = err is not None and (err.fatal() or err.txn_requires_abort())
            self._events.write(kind, outcome="fail" if definite else "info", txn=txn,
                               error=str(exc), detail=detail)
            raise
        self._events.write(kind, outcome="ok", txn=txn, detail=detail)
        return result

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: Any,
                                    *args: Any) -> Any:
        return self._end("send_offsets", self._p.send_offsets_to_transaction, offsets,
                         metadata, *args, detail=_offsets_text(offsets))

    def commit_transaction(self, *args: Any) -> Any:
        result = self._end("commit_txn", self._p.commit_transaction, *args)
        self._txn = None
        self._plan.committed("commit_transaction")
        return result

    def abort_transaction(self, *args: Any) -> Any:
        result = self._end("abort_txn", self._p.abort_transaction, *args)
        self._txn = None
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._p, name)

    def __len__(self) -> int:
        return len(self._p)

    def produce(self, topic: str, value: Any = None, key: Any = None, *args: Any,
                on_delivery: Callable | None = None, callback: Callable | None = None,
                **kwargs: Any) -> None:
        user = on_delivery or callback
        text = _value_text(value)
        self._plan.handing()

        txn = self._txn

        def report(err: KafkaError | None, msg: Any) -> None:
            ok = err is None
            self._events.write(
                "send", outcome=outcome_of(err), values=[text] if text else [], topic=topic,
                partition=msg.partition() if ok else None,
                offset=msg.offset() if ok else None,  # None: acked implicitly (clients.py)
                error=str(err) if err is not None else None, txn=txn)
            if user is not None:
                user(err, msg)

        self._events.write("handed", values=[text] if text else [], topic=topic, txn=txn)
        self._p.produce(topic, value, key, *args, on_delivery=report, **kwargs)


class StudentDatabase:
    """The handler's database: a ``sqlite3`` connection whose commits are recorded (as
    ``db_write`` of the message being handled) and counted for the crash plan."""

    def __init__(self, conn: sqlite3.Connection, events: Events,
                 after_commits: int | None) -> None:
        self._conn, self._events, self.after_commits = conn, events, after_commits
        self.commits = 0
        self.message: str | None = None
        self.armed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def _committed(self) -> None:
        if not self.armed:
            return
        self.commits += 1
        self._events.write("db_write", outcome="ok", values=[self.message] if self.message
                           else [], detail=f"database commit #{self.commits}")
        if self.after_commits is not None and self.commits >= self.after_commits:
            self._events.write("fault", fault="kill_after_db", outcome="info",
                               detail=f"{self._events.process} is SIGKILLed right after "
                               f"database commit #{self.commits}, before its offset commit")
            self._events.file.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    def commit(self) -> None:
        self._conn.commit()
        self._committed()

    def __enter__(self) -> StudentDatabase:
        self._conn.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        result = self._conn.__exit__(*exc)
        if exc[0] is None:
            self._committed()
        return result


def run_handler(spec: dict[str, Any], events: Events, consumer: Consumer,
                module: Any, running: Callable[[], bool]) -> None:
    """The lab's own consumer loop around a student's per-message handler: poll a
    batch, call the handler for each message, then commit the batch's offsets."""
    db = StudentDatabase(sqlite3.connect(spec["database"], timeout=30), events,
                         spec.get("kill_after_db_commits"))
    setup = getattr(module, "setup", None)
    if callable(setup):
        setup(db)
        db.commit()
    db.armed = True
    handle = getattr(module, spec["function"])
    while running():
        msgs = [m for m in consumer.consume(MAX_BATCH, 0.5) if not m.error()]
        for m in msgs:
            value = _value_text(m.value())
            events.write("poll", values=[value] if value else [], topic=m.topic(),
                         partition=m.partition(), offset=m.offset())
            if value is None:
                continue
            db.message = value
            handle(db, value, {"order_id": value, "amount": decode(m.value()).seq},
                   (m.topic(), m.partition(), m.offset()))
        if msgs:
            offsets = [TopicPartition(m.topic(), m.partition(), m.offset() + 1)
                       for m in msgs]
            consumer.commit(offsets=offsets, asynchronous=False)
            events.write("commit", outcome="ok", detail=_offsets_text(offsets))
    db.close()


def load_solution(path: str, function: str) -> Callable:
    """The student's function, from their file; one clear line if it is not there."""
    spec = importlib.util.spec_from_file_location("student_solution", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"solution={path!r} is not accepted; expected a .py file")
    module: ModuleType = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, function, None)
    if not callable(fn):
        raise SystemExit(f"{path} defines no function {function}(); the exercise's "
                         "contract asks for one")
    module_settings = getattr(module, "CONSUMER_SETTINGS", {}) or {}
    fn.consumer_settings = dict(module_settings)  # type: ignore[attr-defined]
    fn.module = module  # type: ignore[attr-defined]
    return fn


def caught_up(consumer: Consumer, ends: dict[int, int], topic: str) -> bool:
    """Does this member own every input partition, positioned at its end?"""
    assignment = consumer.assignment()
    if {tp.partition for tp in assignment if tp.topic == topic} != set(ends):
        return False
    for tp in consumer.position(assignment):
        offset = tp.offset
        if offset < 0:  # nothing fetched here yet: the group's committed offset
            offset = consumer.committed([tp], timeout=5)[0].offset
        if offset < ends[tp.partition]:
            return False
    return True


def run(spec: dict[str, Any]) -> int:
    """Run the student's loop once, as the spec says; returns the exit code."""
    events = Events(spec["events"], spec["process"])
    plan = KillPlan(events, spec.get("kill_after_commits"), spec.get("kill_at_value"),
                    spec.get("commit_call", "commit"))
    fn = load_solution(spec["solution"], spec["function"])
    consumer_conf = {**spec["consumer"], **fn.consumer_settings,
                     "group.id": spec["group"]}
    consumer = Consumer(config(spec["bootstrap"], **consumer_conf))
    producer = Producer(config(spec["bootstrap"], **spec["producer"]))
    if "transactional.id" in spec["producer"]:  # the lab's part: this instance's epoch
        producer.init_transactions(30)
        events.write("init_txn", outcome="ok", detail=spec["producer"]["transactional.id"])
    ends = {int(p): int(o) for p, o in spec["ends"].items()}
    deadline = time.monotonic() + float(spec["timeout"])
    last_check = [0.0, False]

    def running() -> bool:
        """False once the input is processed (checked at most 5 times a second)."""
        now = time.monotonic()
        if now > deadline:
            return False
        if now - last_check[0] >= 0.2:
            last_check[:] = [now, caught_up(consumer, ends, spec["input"])]
        return not last_check[1]

    consumer.subscribe([spec["input"]])
    events.write("start", detail=" ".join(f"{k}={v}" for k, v in sorted(consumer_conf.items())
                                          if k != "group.id"))
    if spec.get("kind") == "handler":
        run_handler(spec, events, consumer, fn.module, running)
        events.write("end", detail="the loop returned")
        consumer.close()
        return 0
    fn(StudentConsumer(consumer, events, plan), StudentProducer(producer, events, plan),
       spec["output"], running)
    events.write("end", detail="the loop returned")
    consumer.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m deliverylab.grade.child SPEC.json", file=sys.stderr)
        return 2
    return run(json.loads(Path(args[0]).read_text()))


if __name__ == "__main__":
    sys.exit(main())
