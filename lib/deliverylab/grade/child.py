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

The crash is searched (:mod:`deliverylab.grade.search`): the spec names a point
(``flush#2``) and the process SIGKILLs itself right after that call of the student's
returned, counted, never timed. A student's exception is recorded with its traceback
(``raised``) and the child exits with :data:`RAISED`: the parent judges no delivery
property of code that did not run to its end.
"""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..clients import close_consumer, config
from ..history import offsets_detail, outcome_of
from ..values import decode
from .callbacks import NONE_GIVEN, StudentCallbacks, student_traceback
from .database import StudentDatabase
from .events import Events, KillPlan, value_text
from .http_call import Payments
from .search import CrashPoint
from .stall import Stall, TxnStall, auto_commits, timer_commit

#: Most messages one ``consume()`` may return: the contract's batch, so that "a crash
#: redoes at most one batch" means the same thing for every solution.
MAX_BATCH = 10
#: Seconds of each further wait for the rest of a short batch (``full_batches``).
FILL_WAIT = 0.1


class StudentConsumer:
    """A librdkafka ``Consumer`` that records what it delivers and commits.

    Everything else passes through. Commits are made synchronously whatever
    ``asynchronous`` says, so that a crash "right after your commit" is a crash after
    a commit that reached the broker.

    ``left`` (an exercise's ``full_batches``) says whether this process has input left
    to get: while it does, a ``consume(n)`` that got some messages but fewer than n waits
    for the rest, so a batch is n messages whenever n are left -- whatever librdkafka's
    fetches had queued when the call's timeout ran out; once it has none, ``consume()``
    waits at most ``FILL_WAIT`` (``running()`` is False by then). A ``consume()`` that got
    nothing while input is left returns empty at its timeout, as librdkafka's does.
    """

    def __init__(self, consumer: Consumer, events: Events, plan: KillPlan,
                 left: Callable[[], bool] | None = None,
                 callbacks: StudentCallbacks | None = None) -> None:
        self._c, self._events, self._plan, self._left = consumer, events, plan, left
        self._callbacks = callbacks or StudentCallbacks("consumer")  # raised as theirs

    def __getattr__(self, name: str) -> Any:  # close(), subscribe(): their callbacks
        return self._callbacks.passing(name, getattr(self._c, name))

    def _record(self, msgs: list[Any]) -> list[Any]:
        got = False
        for m in msgs:
            if m is not None and not m.error():
                got = True
                value = value_text(m.value())
                self._events.write("poll", values=[value] if value else [], topic=m.topic(),
                                   partition=m.partition(), offset=m.offset())
        if got:  # a poll that handed the student messages is a boundary
            self._plan.after("poll")
        return msgs

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        if not isinstance(num_messages, int) or not 1 <= num_messages <= MAX_BATCH:
            raise ValueError(f"num_messages={num_messages!r} is not accepted; expected a "
                             f"whole number from 1 to {MAX_BATCH} (the exercise's batch)")
        return self._record(self._callbacks.served("consume", self._fetch, num_messages,
                                                   timeout))

    def _fetch(self, num_messages: int, timeout: float) -> list[Any]:
        if self._left is not None and not self._left():  # nothing left to get: a short
            # wait, serving what is due (an on_commit report), not the whole timeout
            short = (min(timeout, FILL_WAIT) if isinstance(timeout, (int, float))
                     and timeout >= 0 else FILL_WAIT)
            return list(self._c.consume(num_messages, short))
        msgs = list(self._c.consume(num_messages, timeout))
        while msgs and len(msgs) < num_messages and self._left is not None and self._left():
            msgs += self._c.consume(num_messages - len(msgs), FILL_WAIT)
        return msgs

    def poll(self, timeout: float | None = None) -> Any:
        msg = self._callbacks.served("poll", self._c.poll, *(
            [] if timeout is None else [timeout]))
        self._record([msg])
        return msg

    def commit(self, message: Any = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> Any:
        """Recorded from the broker's answer, not from the call: an offset-less commit
        sends the *stored* offsets (with ``enable.auto.offset.store`` off, what the loop
        stored, which may be less than it consumed), and a partition the broker refused
        was not committed though the call returned. Only a commit that committed
        something is a crash point ("after your 2nd offset commit")."""
        if offsets is not None:
            asked = offsets_detail(offsets)
        elif message is not None:
            asked = offsets_detail([TopicPartition(message.topic(), message.partition(),
                                                  message.offset() + 1)])
        else:
            asked = "the stored offsets"
        kwargs: dict[str, Any] = {"asynchronous": False}
        if offsets is not None:
            kwargs["offsets"] = offsets
        elif message is not None:
            kwargs["message"] = message
        try:
            result = self._c.commit(**kwargs)
        except Exception as exc:  # nothing committed (_NO_OFFSET: nothing stored to send)
            self._events.write("commit", outcome="fail", detail=asked, error=str(exc))
            raise
        answered = [tp for tp in result or [] if tp.offset >= 0]
        refused = [tp for tp in answered if tp.error is not None]
        if refused:
            self._events.write("commit", outcome="fail", detail=offsets_detail(refused),
                               error="; ".join(sorted({str(tp.error) for tp in refused})))
        done = [tp for tp in answered if tp.error is None]
        if done:
            self._events.write("commit", outcome="ok", detail=offsets_detail(done))
            self._plan.after("commit")  # a commit that committed nothing is no boundary
        elif not refused:  # an answer without an offset: librdkafka's _NO_OFFSET, put so
            self._events.write("commit", outcome="fail", detail=asked,
                               error="nothing committed: the answer holds no offset")
        return result

    def store_offsets(self, message: Any = None,
                      offsets: list[TopicPartition] | None = None) -> Any:
        """Stored, not committed: the student's promise that what it covers is done,
        kept once a commit sends it (auto-commit's timer, or an offset-less
        ``commit()``). Recorded with the offsets stored (a message's: ``offset + 1``, as
        librdkafka stores it), so that the redo bound can ask the group's offsets at the
        kill whether the promise was kept (:func:`~deliverylab.grade.search.redo_bound`)."""
        given = {k: v for k, v in (("message", message), ("offsets", offsets))
                 if v is not None}
        result = self._c.store_offsets(**given)  # librdkafka names a wrong call itself
        stored = offsets if offsets is not None else [
            TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        self._events.write("store_offsets", outcome="ok", detail=offsets_detail(stored))
        self._plan.stores += 1
        self._plan.stored.update({(tp.topic, tp.partition): tp.offset for tp in stored})
        if self._plan.auto_commit:
            self._plan.after("commit", "store_offsets, sent by auto-commit")
        return result


class StudentProducer:
    """A librdkafka ``Producer`` whose every value's delivery report is recorded, and
    (transactional) every transaction's begin, offsets, commit and abort, each value
    tagged with the transaction it was written in."""

    def __init__(self, producer: Producer, events: Events, plan: KillPlan,
                 stall: TxnStall | None = None) -> None:
        self._p, self._events, self._plan, self._stall = producer, events, plan, stall
        self._callbacks = StudentCallbacks()  # what theirs raise: raised after the call
        self._txn: str | None = None
        self._txns = self._commits = self._handed = 0  # _handed: produced since a flush

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
            self._callbacks.check(call.__name__)
            raise
        self._events.write(kind, outcome="ok", txn=txn, detail=detail)
        self._callbacks.check(call.__name__)  # a callback's error after the broker's answer
        return result

    def send_offsets_to_transaction(self, offsets: list[TopicPartition], metadata: Any,
                                    *args: Any) -> Any:
        result = self._end("send_offsets", self._p.send_offsets_to_transaction, offsets,
                           metadata, *args, detail=offsets_detail(offsets))
        self._plan.after("send_offsets")
        return result

    def commit_transaction(self, *args: Any) -> Any:
        self._commits += 1
        if self._stall is not None:  # the overlap fault (04): a zombie from here on
            self._stall.before("commit_transaction", self._commits)
        result = self._end("commit_txn", self._p.commit_transaction, *args)
        self._txn = None
        self._plan.after("commit_transaction")
        return result

    def flush(self, *args: Any, **kwargs: Any) -> Any:
        # A flush of nothing (an empty batch's: a loaded machine's first polls get none)
        # is no boundary: "your 2nd flush" must be the 2nd that wrote something.
        wrote, self._handed = self._handed > 0 or len(self._p) > 0, 0
        result = self._callbacks.served("flush", self._p.flush, *args, **kwargs)
        if wrote:
            self._plan.after("flush")
        return result

    def abort_transaction(self, *args: Any) -> Any:
        result = self._end("abort_txn", self._p.abort_transaction, *args)
        self._txn = None
        return result

    def __getattr__(self, name: str) -> Any:  # poll() and the rest: may serve callbacks
        return self._callbacks.passing(name, getattr(self._p, name))

    def __len__(self) -> int:
        return len(self._p)

    def produce(self, topic: str, value: Any = None, key: Any = None, *args: Any,
                on_delivery: Callable | None = None, callback: Callable | None = None,
                **kwargs: Any) -> None:
        user = self._callbacks.wrap(on_delivery or callback)
        text = value_text(value)
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
        self._handed += 1


#: The exit code of a child whose student code raised (its traceback is in the events).
RAISED = 3


class StudentRaised(Exception):
    """The student's code raised: recorded, and the child exits with :data:`RAISED`."""


def call_student(events: Events, path: str, fn: Callable, *args: Any) -> Any:
    """Call the student's code; an exception becomes a ``raised`` event."""
    try:
        return fn(*args)
    except Exception as exc:
        events.write("raised", outcome="fail", detail=student_traceback(exc, path))
        raise StudentRaised(str(exc)) from exc


def run_handler(spec: dict[str, Any], events: Events, consumer: Consumer,
                module: Any, running: Callable[[], bool], plan: KillPlan | None = None,
                stall: Stall | None = None, payments: Payments | None = None,
                callbacks: StudentCallbacks = NONE_GIVEN) -> None:
    """The lab's own consumer loop around a student's per-message handler: poll a
    batch, call the handler for each message (with the database and a client of the
    run's payment service, ``spec["service"]``), then commit the batch's offsets.

    Under the overlap fault (``overlap``) a refused offset commit is recorded, not
    raised: the group moved on, and redelivers what was not committed. A process that
    stalled (``stall``) ends right after the handler call it stalled in."""
    db = StudentDatabase(sqlite3.connect(spec["database"], timeout=30), events, plan, stall)
    payments = payments or Payments(spec["service"], events, plan, spec.get("group", ""))
    path = spec.get("solution", "")
    setup = getattr(module, "setup", None)
    if callable(setup):  # said in the events: the parent sees a setup waiting on a lock
        events.write("setup", detail="setup(db) is called")
        call_student(events, path, setup, db)
        db.commit()
        events.write("set_up", detail="setup(db) returned and is committed")
    db.armed = True
    handle = getattr(module, spec["function"])
    while running():
        msgs = [m for m in consumer.consume(MAX_BATCH, 0.5) if not m.error()]
        call_student(events, path, callbacks.check, "consume")  # theirs, served in there
        for i, m in enumerate(msgs):
            value = value_text(m.value())
            events.write("poll", values=[value] if value else [], topic=m.topic(),
                         partition=m.partition(), offset=m.offset())
            if value is None:
                continue
            db.message = value
            db.count += 1
            call_student(events, path, handle, db, value,
                         {"order_id": value, "amount": decode(m.value()).seq},
                         (m.topic(), m.partition(), m.offset()), payments)
            db.look()  # a commit through a connection the wrapper never saw
            events.write("handled", message=value)
            if stall is not None and stall.fired:
                msgs = msgs[:i + 1]  # its successor handles the rest of the batch
                break
        stalled = stall is not None and stall.fired
        if msgs:
            offsets = [TopicPartition(m.topic(), m.partition(), m.offset() + 1)
                       for m in msgs]
            try:
                consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                if not (stalled or spec.get("overlap")):
                    raise
                events.write("commit", outcome="fail", detail=offsets_detail(offsets),
                             error=str(exc))
            else:
                events.write("commit", outcome="ok", detail=offsets_detail(offsets))
        if stalled:
            break
    db.close()


def load_solution(path: str, function: str, events: Events | None = None) -> Callable:
    """The student's function, from their file; one clear line if it is not there
    (the parent's :mod:`~deliverylab.grade.precheck` names that before any run). Their
    module-level code raising is their error (``raised``), as in their function."""
    spec = importlib.util.spec_from_file_location("student_solution", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"solution={path!r} is not accepted; expected a .py file")
    module: ModuleType = importlib.util.module_from_spec(spec)
    if events is None:
        spec.loader.exec_module(module)
    else:
        call_student(events, path, spec.loader.exec_module, module)
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
    point = CrashPoint.parse(spec["point"]) if spec.get("point") else None
    plan = KillPlan(events, point, spec.get("cycle", ()), spec.get("fault", "crash_consumer"))
    try:
        fn = load_solution(spec["solution"], spec["function"], events)
    except StudentRaised:
        return RAISED
    consumer_conf = {**spec["consumer"], **fn.consumer_settings,
                     "group.id": spec["group"]}
    # The overlap fault: where this instance stops (a handler's write, or a transaction
    # loop's commit, held until its consumer's own timer has committed: zombie below).
    handler = spec.get("kind") == "handler"
    stall = Stall(events, int(spec["stall"])) if spec.get("stall") and handler else None
    callbacks, lab_commit = StudentCallbacks("consumer"), None  # theirs: raised as theirs
    if auto_commits(consumer_conf):  # librdkafka's timer commits: seen as commits too

        def auto(err: KafkaError | None, offsets: list[TopicPartition]) -> None:
            # Only the timer's and close()'s commits come here: confluent-kafka's
            # synchronous commit() (every commit of StudentConsumer) answers through a
            # callback of its own (Consumer.c, rd_kafka_commit_queue), never on_commit.
            events.write("commit", outcome="ok" if err is None else "fail", how="auto",
                         detail=offsets_detail([tp for tp in offsets if tp.offset >= 0]),
                         error=str(err) if err is not None else None)
            if err is None and not plan.stores:  # a loop that stores: counted at its store
                plan.after("commit")

        lab_commit, plan.auto_commit = auto, True  # and theirs after it, if they gave one
    consumer = Consumer(config(spec["bootstrap"], **callbacks.settings(consumer_conf,
                                                                       lab_commit)))
    zombie = (TxnStall(events, int(spec["stall"]), timer_commit(
        consumer, spec["bootstrap"], consumer_conf, plan.stored))
        if spec.get("stall") and not handler else None)
    producer = Producer(config(spec["bootstrap"], **spec["producer"]))
    if "transactional.id" in spec["producer"]:  # the lab's part: this instance's epoch
        producer.init_transactions(30)
        events.write("init_txn", outcome="ok", detail=spec["producer"]["transactional.id"])
    ends = {int(p): int(o) for p, o in spec["ends"].items()}
    deadline = time.monotonic() + float(spec["timeout"])
    last_check: list[Any] = [0.0, False]  # when last checked; False, True (done), None

    def check() -> bool:
        """Is the input processed? Said once in the events, when it is."""
        last_check[:] = [time.monotonic(), caught_up(consumer, ends, spec["input"])]
        if last_check[1]:
            events.write("stopped", detail="running() is False: the input is processed")
        return last_check[1]

    def running() -> bool:
        """False once the input is processed (checked at most 5 times a second), or
        at the deadline -- said in the events, so that the parent does not judge a
        run that never got through its input."""
        now = time.monotonic()
        if now > deadline:
            if last_check[1] is not None:
                events.write("deadline", detail=f"{spec['timeout']:.0f} s passed before "
                             "the input was processed")
            last_check[1] = None
            return False
        if now - last_check[0] >= 0.2 and last_check[1] is False:
            check()
        return last_check[1] is False

    def left() -> bool:
        """Input left for this process, and time to get it (``full_batches``): asked by
        the grader's ``consume()`` at every call, so that the batch that ends the input is
        followed by ``running()`` False within ``FILL_WAIT``, not by one more wait of the
        loop's timeout."""
        return last_check[1] is False and time.monotonic() <= deadline and not check()

    consumer.subscribe([spec["input"]])
    events.write("start", detail=" ".join(f"{k}={v}" for k, v in sorted(consumer_conf.items())
                                          if k != "group.id"))
    try:
        if handler:
            run_handler(spec, events, consumer, fn.module, running, plan, stall,
                        callbacks=callbacks)
        else:
            call_student(events, spec["solution"], fn, StudentConsumer(
                consumer, events, plan, left if spec.get("full_batches") else None,
                callbacks), StudentProducer(producer, events, plan, zombie), spec["output"],
                         running)
        events.write("end", counts=plan.counter.counts, detail="the loop returned")
        try:
            close_consumer(consumer)  # a close librdkafka never returns from: let go
        except KafkaException:  # a stalled member the group fenced: nothing left to close
            if not any(s is not None and s.fired for s in (stall, zombie)):
                raise
        # their on_revoke, or auto-commit's last on_commit, ran inside the lab's close
        call_student(events, spec["solution"], callbacks.check, "close")
    except StudentRaised:
        return RAISED
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m deliverylab.grade.child SPEC.json", file=sys.stderr)
        return 2
    return run(json.loads(Path(args[0]).read_text()))


if __name__ == "__main__":
    sys.exit(main())
