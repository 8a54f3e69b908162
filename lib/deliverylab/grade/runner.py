"""One graded run: a student's stage, in its own process, under one fault and one seed.

Every run has the same shape, so that runs of different solutions compare:

1. fresh input and output topics, a fresh consumer group (one cluster serves a grade);
2. the lab writes ``values`` unique values to the input (at least once, recorded),
   unevenly over its partitions (:func:`input_sizes`: batches span partitions);
3. the fault is armed (``lose_ack``: the next produce response of the output's leader
   is dropped; ``hold_request``: the student's first produce request is kept from the
   broker past its timeout, a live fault) and the student's stage runs as ``stage-0``
   in a child process (:mod:`deliverylab.grade.child`); under a crash fault that
   process SIGKILLs itself right after the run's crash point (``flush#2``: the
   student's 2nd ``flush()`` returned; :mod:`deliverylab.grade.search`), and
   ``stage-1``, a fresh process with the same static group membership, takes its place
   at once, as a restarted service would
   (so does it when ``stage-0`` raised under a live fault: whether that raise was right
   is the exercise's to say, :meth:`~deliverylab.grade.exercises.Exercise.hands_over`);
   under the overlap fault (06's ``stall_consumer``, 04's ``zombie_producer``)
   ``stage-0`` stops (before a database write; before a ``commit_transaction``) and
   ``stage-1`` runs beside it, then ``stage-0`` resumes (:meth:`Stage.overlap`);
4. the cluster is healed, the children's events become History ops, both topics are read
   back, and the run is judged -- only if it ran to its end with its crash placed
   (:func:`judge_state`): the Checker's counts and the exact redo bound decide each
   property of the exercise.

The crash point decides where the crash lands, by count; the seed varies nothing else
(only what timing varies): the same point and seed replay the same run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException

from .. import checker as C
from ..clients import TxnProducer
from ..errors import TimedOut
from ..history import History, read_json_lines
from ..modes import AT_LEAST_ONCE, TRANSACTIONAL
from ..nemesis import Nemesis
from ..readers import bounds, read_back
from ..waiting import wait_until
from .child import RAISED as RAISED_EXIT
from .exercises import BROKEN, HUNG, JUDGED, RAISED, TIMEOUT, UNPLACED, Exercise
from .http_call import effect_counts
from .search import (
    CallCounter,
    CrashPoint,
    Offsets,
    ordinal,
    redo_beyond,
    redo_bound,
    redone_values,
)

#: The event kinds that become History ops (``handed`` only matters if never reported).
RECORDED = ("poll", "send", "commit", "fault", "begin_txn", "commit_txn", "abort_txn",
            "send_offsets", "init_txn", "http_call")

#: Seconds one stage process may take before it is killed; its run is not judged.
STAGE_TIMEOUT = 60.0

#: The overlap fault (:data:`~deliverylab.grade.search.STALL`): how long the successor
#: may stay inside one call into the student's code (setup, or the handler on any
#: message) before the first instance resumes -- a successor still in it waits on a
#: database lock the stalled one holds (``BEGIN IMMEDIATE``), which only its
#: resumption frees (:func:`handed_over`); and the most
#: a stall lasts when the group never hands the partition over (then the run is not
#: judged: no overlap happened).
HANDOFF_GRACE = 2.0
STALL_CAP = 20.0

#: Stage processes share one ``group.instance.id`` (measured: see the module's notes).
STATIC = os.environ.get("DELIVERYLAB_GRADE_STATIC", "1") != "0"


@dataclass
class Run:
    """One run's evidence and verdict."""

    exercise: str
    fault: str
    seed: int
    counts: dict[str, int]
    passed: dict[str, bool | None]
    result: C.Result | None = None
    history: History | None = None
    topics: tuple[str, str] = ("", "")
    seconds: float = 0.0
    plan: dict[str, Any] = field(default_factory=dict)
    #: Tails of the stage processes' error output, when one failed on its own.
    errors: list[str] = field(default_factory=list)
    #: Anomalies judged outside the Checker (chapter 06's rows): example values.
    examples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Where the final read-back found each example value: "output/1@37".
    positions: dict[str, list[str]] = field(default_factory=dict)
    #: Judged, or why not (:data:`~deliverylab.grade.exercises.JUDGED` and the others),
    #: and the reason a student reads (their traceback, when their code raised).
    state: str = JUDGED
    reason: str = ""
    #: The crash point (``flush#2``) and where it landed in the student's words.
    point: str = ""
    crash: str = ""

    @property
    def ok(self) -> bool:
        return all(v is True for v in self.passed.values())

    @property
    def label(self) -> str:
        """``seed 1`` or ``seed 1, flush#2``: which run this is, for a replay."""
        return f"seed {self.seed}" + (f", {self.point}" if self.point else "")

    def to_dict(self) -> dict[str, Any]:
        return {"fault": self.fault, "seed": self.seed, "point": self.point,
                "crash": self.crash, "state": self.state, "reason": self.reason,
                "seconds": round(self.seconds, 2), "plan": self.plan,
                "counts": self.counts, "passed": self.passed,
                "topics": list(self.topics), "errors": self.errors}


#: The input's partitions and how unevenly its values spread over them (2 : 7 : 11).
PARTITIONS = 3
WEIGHTS = (2, 7, 11)


def uneven_sizes(values: int, weights: tuple[int, ...] = WEIGHTS) -> list[int]:
    """How many values each input partition gets: uneven, none a multiple of the batch
    for the lab's 60 (6, 21, 33), so that a batch of 10 spans two partitions and every
    partition's position matters in every commit (a loop that commits only its last
    message's partition leaves another partition behind)."""
    total = sum(weights)
    sizes = [values * w // total for w in weights[:-1]]
    return [*sizes, values - sum(sizes)]


def input_sizes(exercise: Exercise) -> list[int]:
    """How many values each input partition of ``exercise`` gets: its own layout (02:
    every partition smaller than a batch, see its definition), or :func:`uneven_sizes`."""
    return list(exercise.input_sizes) or uneven_sizes(exercise.values)


def write_input(cluster: Any, topic: str, sizes: list[int], history: History,
                process: str = "producer-0", arm: Callable[[], Any] | None = None) -> Any:
    """The lab's input: unique values, ``sizes[0]`` of them to partition 0, the next
    ``sizes[1]`` to partition 1, and so on (:func:`input_sizes`), each send recorded (at
    least once: a value maybe written is ``info``).

    ``arm`` places a fault in the input (06's lost ack, which makes a copy) once the first
    value is acknowledged; its result is returned. Armed before, the lost answer could be
    a topic's very first, which a broker still applying the new partition may answer with
    an error: nothing written, so the client's retry makes no copy (a calibration run
    passed a wrong solution that way, on a loaded machine)."""
    from confluent_kafka import Producer

    from ..clients import Recorder, bootstrap_of, config
    from ..values import ValueId

    producer = Producer(config(bootstrap_of(cluster), **AT_LEAST_ONCE.producer))
    recorder = Recorder(history, process, topic)
    seq, armed = 0, None
    for partition, size in enumerate(sizes):
        for _ in range(size):
            recorder.send(producer, ValueId(process, seq), partition)
            seq += 1
            if seq == 1 and arm is not None:
                if producer.flush(60):
                    raise RuntimeError("the grader's input: its first value still "
                                       "unacknowledged after 60 s")
                armed = arm()
    left = producer.flush(60)
    recorder.settle("no delivery report after 60 s")
    if left:
        raise RuntimeError(f"the grader's input: {left} values still unsent after 60 s")
    return armed


def stage_plan(exercise: Exercise, fault: str, point: CrashPoint | None) -> dict[str, Any]:
    """The first stage process's crash plan (empty: no crash): the point, the calls the
    child counts, and the fault's name for the History."""
    if point is None:
        return {}
    return {"point": point.name, "cycle": list(exercise.boundaries), "fault": fault,
            "optional": list(exercise.optional_boundaries)}


def judge_state(events: list[dict[str, Any]], endings: list[tuple[str, str, str]],
                plan: dict[str, Any], limit: float | None = None,
                live: bool = False) -> tuple[str, str]:
    """(state, reason) of a run from how each stage process ended (process, how, error
    tail) and what the processes wrote: see :meth:`Exercise.verdicts` for what each
    state judges. ``live``: a fault that makes a call fail, so the first process may
    stop by raising (its successor's ending decides). Pure: unit-tested on hand-written
    endings."""
    limit = STAGE_TIMEOUT if limit is None else limit

    def of(process: str, kind: str) -> list[dict[str, Any]]:
        return [e for e in events if e.get("process") == process and e["kind"] == kind]

    for i, (process, how, err) in enumerate(endings):
        if how == "raised" and live and i == 0 and len(endings) > 1:
            continue  # it stopped on the live fault's failed call; its successor ran on
        if how == "raised":
            raised = of(process, "raised")
            return RAISED, raised[-1].get("detail", "") if raised else err
        if how == "timeout":
            if of(process, "stopped"):
                return HUNG, (f"{process}: your code did not return within "
                              f"{limit:.0f} s although running() was False")
            return TIMEOUT, (f"not judged: {process} did not get through its input in "
                             f"{limit:.0f} s (a loaded host?)")
        if how == "error":
            return BROKEN, f"not judged: the grader's run failed in {process}:\n{err}"
        if how == "killed" and not (i == 0 and plan):
            return BROKEN, f"not judged: {process} was killed by something else"
        if of(process, "deadline"):
            return TIMEOUT, (f"not judged: {process} did not get through its input in "
                             f"{limit:.0f} s (a loaded host?)")
        if i == 0 and plan.get("point") and how == "done":
            point = CrashPoint.parse(plan["point"])
            counter = CallCounter(plan.get("cycle", ()), point)
            ends = of(process, "end")
            counter.counts.update((ends[-1].get("counts") or {}) if ends else {})
            if point.kind in plan.get("optional", ()) and not counter.counts.get(point.kind):
                continue  # a call their loop never makes: no crash point of theirs
            return UNPLACED, "not judged: " + counter.shortfall()
    return JUDGED, ""


def to_history(events: list[dict[str, Any]], history: History) -> None:
    """The stage processes' events as History ops (times on the History's clock).

    A value handed to a producer whose delivery report never came (its process was
    killed) becomes an ``info`` send: maybe written, as the lab records every send.
    """
    t0 = history.now()
    now = time.monotonic()
    handed: dict[tuple[str, str, str, str | None], int] = {}
    for e in sorted(events, key=lambda e: e["t"]):
        at = round(t0 - (now - e["t"]), 6)
        values = [v for v in e.get("values") or [] if v]
        kind = e["kind"]
        if kind in ("handed", "send"):
            for v in values:
                k = (e["process"], e["topic"], v, e.get("txn"))
                handed[k] = handed.get(k, 0) + (1 if kind == "handed" else -1)
            if kind == "handed":
                continue
        if kind not in RECORDED:
            continue
        history.record(e["process"], kind, e.get("outcome", "ok"), values,
                       topic=e.get("topic"), partition=e.get("partition"),
                       offset=e.get("offset"), error=e.get("error"), txn=e.get("txn"),
                       detail=e.get("detail"), fault=e.get("fault"), time=at)
    for (process, topic, value, txn), n in handed.items():
        for _ in range(n):
            history.record(process, "send", "info", [value], topic=topic, txn=txn,
                           detail="handed to the producer, never reported: the process "
                           "died first (maybe written)")


def child_ending(children: Any, proc: subprocess.Popen, process: str, log: Path,
                 limit: float, started: float) -> tuple[str, str]:
    """How a student's child process (a stage, a Spark driver) started at ``started``
    ended, waited for up to ``limit`` seconds in all: ``killed`` (a SIGKILL: the planned
    crash), ``raised`` (the student's code raised), ``error`` with its log's last lines,
    ``timeout`` (killed), or ``done``. One reading, so both graders name an end alike."""
    try:
        code = proc.wait(max(0.1, limit - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        children.kill(proc)
        return "timeout", f"{process} still ran after {limit:.0f} s: killed"
    finally:
        children.stop(proc)
    return exit_ending(code, log)


def exit_ending(code: int, log: Path, since: int = 0) -> tuple[str, str]:
    """How a child that exited with ``code`` ended (:func:`child_ending`); an error's tail
    is ``log``'s past byte ``since`` (a driver server's log holds specs served before)."""
    if code == -9:
        return "killed", ""
    if code == RAISED_EXIT:
        return "raised", ""
    if code != 0:
        text = log.read_bytes()[since:].decode(errors="replace").strip().splitlines()
        return "error", "\n".join(text[-12:])
    return "done", ""


class Stage:
    """Starts the student's stage processes of one run and waits for them."""

    def __init__(self, exercise: Exercise, solution: Path, cluster: Any, source: str,
                 sink: str, group: str, workdir: Path) -> None:
        from ..process.children import Children  # lazy: the reaper is not vocabulary
        from ..services.http import HttpService  # lazy: chapter 06's service

        self.children = Children()
        self.exercise, self.solution, self.cluster = exercise, solution, cluster
        self.source, self.sink, self.group, self.workdir = source, sink, group, workdir
        self.events = workdir / "events.jsonl"
        #: Why the overlap fault's stalled instance resumed (:func:`handed_over`).
        self.handover = ""
        #: The student's producer's client id: a live fault aims at its requests only.
        self.client_id = f"{group}-student"
        mode = TRANSACTIONAL if exercise.transactional else AT_LEAST_ONCE
        ends = {b["partition"]: b["high_watermark"] for b in bounds(cluster, source)}
        self.base = {
            "solution": str(solution), "function": exercise.function,
            "bootstrap": cluster.bootstrap_servers, "input": source, "output": sink,
            "group": group, "events": str(self.events), "ends": ends,
            "timeout": STAGE_TIMEOUT - 5, "full_batches": exercise.full_batches,
            # Static membership: a restarted stage takes its predecessor's place and
            # partitions at once, instead of waiting out the dead member's session.
            "consumer": {**mode.consumer, "enable.auto.commit": False,
                         **({"group.instance.id": f"{group}-member"} if STATIC else {})},
            "producer": {**mode.producer, **exercise.settings,
                         "client.id": f"{group}-student"},
        }
        if exercise.transactional:  # one id per run: a restarted stage fences the last
            self.base["producer"]["transactional.id"] = f"{group}-txn"
        if exercise.kind == "handler":  # the side effect's database, created by the lab
            self.database = workdir / "effects.db"
            with sqlite3.connect(self.database) as db:
                db.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
            db.close()
            # The payment service: the lab's real HTTP service, a process of its own per
            # run (its keys and call log are this run's), stopped with the children.
            self.service = HttpService(self.children, workdir)
            self.base.update(kind="handler", database=str(self.database),
                             service=self.service.url)

    def rows(self) -> list[str]:
        """The order id of every row in the handler's database."""
        db = sqlite3.connect(self.database)
        try:
            return [r[0] for r in db.execute("SELECT order_id FROM orders")]
        finally:
            db.close()

    def calls(self) -> list[dict[str, Any]]:
        """Every request the payment service logged in this run (06)."""
        return self.service.calls()

    def run(self, process: str, plan: dict[str, Any]) -> tuple[str, str]:
        """Run one stage process to its end; returns (how it ended, error tail)."""
        return self.finish(process, self.start(process, plan), time.monotonic())

    def start(self, process: str, plan: dict[str, Any]) -> subprocess.Popen:
        from ..process.children import child_env, python_module

        spec = self.workdir / f"{process}.json"
        spec.write_text(json.dumps({**self.base, **plan, "process": process}))
        log = self.workdir / f"{process}.log"
        return self.children.start(process, python_module("grade.child", str(spec)), log,
                                   env=child_env())

    def finish(self, process: str, proc: subprocess.Popen,
               started: float) -> tuple[str, str]:
        """Wait for a stage process started at ``started`` (STAGE_TIMEOUT in all)."""
        return child_ending(self.children, proc, process, self.workdir / f"{process}.log",
                            STAGE_TIMEOUT, started)

    def overlap(self) -> tuple[list[tuple[str, str, str]], str]:
        """The overlap fault's run (the exercise's ``overlap``): ``stage-0`` stops itself
        (06: before its first database write, :class:`~deliverylab.grade.stall.Stall`;
        04: before its 2nd ``commit_transaction``, held first,
        :class:`~deliverylab.grade.stall.TxnStall`); ``stage-1`` starts, takes the
        group's partitions (static membership: it fences the frozen member at once;
        without, the frozen member's session runs out) and handles the same messages;
        then ``stage-0`` resumes and finishes its call -- in 06 once the successor
        handled the stalled message (or has waited :data:`HANDOFF_GRACE` inside one call
        into the student's code: on a lock the stalled one holds, :func:`handed_over`),
        in 04 once the successor ended (it fenced the stalled producer with its
        ``init_transactions`` and took over the input: the resumed one is a zombie).
        Returns the endings, first process first, and why the overlap did not happen
        ("" when it did: the run is not judged otherwise)."""
        ex = self.exercise
        handler = ex.kind == "handler"
        t0 = time.monotonic()
        # Both processes take a refused offset commit as the group moving on (the
        # resumed one's consumer rejoins and may briefly take the member's place back).
        first = self.start("stage-0", {"stall": ex.stall_at, "fault": ex.overlap,
                                       "overlap": True})
        try:
            try:
                stalled = wait_until("stage-0 to stall or end", lambda: next(
                    (e for e in self.read_events() if e["kind"] == "fault"
                     and e.get("fault") == ex.overlap), None) or first.poll() is not None,
                    STAGE_TIMEOUT, interval=0.1)
            except TimedOut:
                self.children.kill(first)
                return [("stage-0", "timeout", f"stage-0 neither stalled nor ended in "
                         f"{STAGE_TIMEOUT:.0f} s: killed")], ""
            if stalled is True:  # it ended without a call to stall at
                return [("stage-0", *self.finish("stage-0", first, t0))], (
                    "not judged: the grader could not place its stall: " + (
                        "your handler made no database write (INSERT, UPDATE, DELETE, "
                        f"REPLACE) for its {ordinal(ex.stall_at)} message" if handler else
                        f"your loop made no {ordinal(ex.stall_at)} commit_transaction"))
            t1 = time.monotonic()
            second = self.start("stage-1", {"overlap": True})
            cap = STALL_CAP if handler else STAGE_TIMEOUT

            def took_over() -> str:
                ended = "ended" if second.poll() is not None else ""
                if handler:
                    return handed_over(self.read_events(), stalled.get("message"),
                                       t1 + cap) or ended
                return ended or ("cap" if time.monotonic() >= t1 + cap else "")

            why = wait_until("the successor to take over", took_over, cap + 5,
                             interval=0.1)
        except BaseException:
            _resume(first)
            raise
        _resume(first)
        ending1 = self.finish("stage-1", second, t1)
        ending0 = self.finish("stage-0", first, t0)
        self.handover = why
        unplaced = "" if why in (("handled", "locked") if handler else ("ended",)) else (
            "not judged: the successor did not get the stalled message within "
            f"{STALL_CAP:.0f} s (the group did not hand the partition over)" if handler
            else f"not judged: the successor did not end within {STAGE_TIMEOUT:.0f} s")
        return [("stage-0", *ending0), ("stage-1", *ending1)], unplaced

    def read_events(self) -> list[dict[str, Any]]:
        return list(read_json_lines(self.events).records)

    def close(self) -> None:
        self.children.close()


def run_once(exercise: Exercise, solution: Path, fault: str, seed: int,
             cluster: Any, point: CrashPoint | None = None) -> Run:
    """One run of ``solution`` under ``fault`` with ``seed`` on a running ``cluster``;
    a crash fault kills the first stage process at ``point``."""
    t0 = time.monotonic()
    tag = f"grade{exercise.id}-{fault}-{seed}-{uuid.uuid4().hex[:6]}"
    source, sink, group = f"in-{tag}", f"out-{tag}", f"{tag}-group"
    topic_config = {"min.insync.replicas": min(2, cluster.brokers)}
    sizes = input_sizes(exercise)
    for name, partitions in ((source, len(sizes)), (sink, PARTITIONS)):
        cluster.create_topic(name, partitions=partitions, config=topic_config)
    history = History()
    nemesis = Nemesis(cluster, history=history)
    copy_in_input = fault == "lose_ack" and exercise.kind == "handler"
    upstream = write_input(cluster, source, sizes, history, arm=(lambda: nemesis.lose_ack(
        node=cluster.leader(source, 0), count=1)) if copy_in_input else None)
    if upstream is not None:
        upstream.handle.wait(30)
    if exercise.aborted_input:  # a transaction the stage must not copy: it aborted
        txn = TxnProducer(cluster, source, history, transactional_id=f"{tag}-aborted",
                          process="aborted-0")
        txn.begin()
        txn.write(exercise.aborted_input)
        txn.abort()
    plan = stage_plan(exercise, fault, point)
    counts: dict[str, int] = {"unfinished": 0, "fault_missed": 0}
    errors: list[str] = []
    loss = held = None
    rows: list[str] | None = None
    calls: list[dict[str, Any]] = []  # the payment service's log (06)
    committed: Offsets | None = None
    unread = ""  # why the group's offsets at the kill could not be read
    unplaced = ""  # why the overlap fault did not happen
    overlap: dict[str, str] = {}  # its stalled instance resumed because (the Run's plan)
    with tempfile.TemporaryDirectory(prefix=f"{tag}-") as tmp:
        stage = Stage(exercise, solution, cluster, source, sink, group, Path(tmp))
        try:
            if fault == "lose_ack" and upstream is not None:
                loss = upstream
            elif fault == "lose_ack":
                # On whichever broker gets the stage's first write: the student picks
                # the partitions (by key, by default), and nothing else produces now.
                loss = nemesis.lose_ack(count=1)
            live = fault in exercise.live_faults
            if fault == "hold_request":  # the student's first write never gets an answer:
                # 02 sees its delivery fail, 04 its transaction fail (abortable)
                held = nemesis.hold_request(api="Produce", count=1,
                                            client_id=stage.client_id)
            endings: list[tuple[str, str, str]] = []
            overlapping = bool(fault) and fault == exercise.overlap
            if overlapping:  # two instances at once: no crash plan, no live raise
                endings, unplaced = stage.overlap()
                errors += [err for _, _, err in endings if err]
                overlap = {"handover": stage.handover}
            for i, p in enumerate([] if overlapping else [plan, {}] if plan or live
                                  else [{}]):
                ended, err = stage.run(f"stage-{i}", p)
                endings.append((f"stage-{i}", ended, err))
                if err:
                    errors.append(err)
                if (i == 0 and ended == "killed" and not exercise.transactional
                        and stored_offsets(stage.read_events())):
                    try:  # before the successor moves them: where it will resume
                        committed = committed_at_kill(cluster, group, source)
                    except (KafkaException, KeyError) as exc:  # not judged, see below
                        unread = f"{type(exc).__name__}: {exc}"
                if ended != "killed" and not (live and i == 0 and ended == "raised"):
                    break
            if loss is not None:  # the proxy reports its drop asynchronously
                loss.handle.wait(5)
                counts["acks_lost"] = loss.handle.dropped
            nemesis.heal()
            events = stage.read_events()
            to_history(events, history)
            if exercise.kind == "handler":
                rows, calls = stage.rows(), stage.calls()
        finally:
            nemesis.heal()
            stage.close()
    state, reason = judge_state(events, endings, plan, live=exercise.hands_over(fault))
    if state == JUDGED and unplaced:  # the overlap fault's stall, or its hand-over, missed
        state, reason = UNPLACED, unplaced
    plan = {**plan, **overlap}
    if state == JUDGED and held is not None and not held.handle.held:
        state, reason = UNPLACED, "not judged: no write of yours was held (none was made)"
    if state == JUDGED and unread:
        state, reason = BROKEN, ("not judged: the group's committed offsets could not be "
                                 f"read right after the kill ({unread})")
    if state == RAISED:
        errors.insert(0, reason)
    if state == JUDGED and loss is not None and not counts["acks_lost"] and (
            exercise.kind == "handler" or any(
                op.kind == "send" and op.topic == sink for op in history)):
        state, reason = UNPLACED, "not judged: the lost ack never happened (no response " \
            "was dropped)"
    isolation = "read_committed" if exercise.transactional else "read_uncommitted"
    examples: dict[str, list[dict[str, Any]]] = {}
    if rows is None:
        reads = read_back(cluster, [source, sink], isolation)
        result = C.check(history, reads, C.ANOMALIES, pipeline=(source, sink))
        if plan and not exercise.transactional:  # the exact bound on a crash's redo
            bound = redo_bound(events, "stage-0", committed)
            redone = redone_values(r.value for r in reads if r.topic == sink and r.value)
            beyond = redo_beyond(redone, bound.allowed)
            counts["redo_beyond"] = len(beyond)
            counts["redo_owed"] = len(set(redone) & set(bound.owed))
            if committed is not None:
                plan = {**plan, "committed_at_kill": ",".join(
                    f"{t}/{p}@{o}" for (t, p), o in sorted(committed.items()))}
            if beyond:
                examples["pipeline_extra"] = [{"value": v} for v in beyond[:5]]
    else:  # the side effect is the database, judged beside the input's check
        reads = read_back(cluster, [source], isolation)
        result = C.check(history, reads, C.ANOMALIES)
        examples = effect_counts(counts, [r.value for r in reads if r.value], rows, history,
                                 calls)
    counts.update(result.counts)
    if state == JUDGED and upstream is not None and not result.counts.get(C.DUPLICATES):
        # The fault is a copy in the input: without one, the run proves nothing.
        state, reason = UNPLACED, ("not judged: the lost ack made no copy in the input "
                                   "to hand on")
    passed = exercise.verdicts(fault, counts, state)
    crash = next((e.get("words", "") for e in events if e["kind"] == "fault"
                  and e.get("words")), "")
    shown = {f["value"] for found in [*result.examples.values(), *examples.values()]
             for f in found[:1] if f.get("value")}
    positions: dict[str, list[str]] = {}
    for r in reads:
        if r.value in shown:
            role = "input" if r.topic == source else "output"
            positions.setdefault(r.value, []).append(f"{role}/{r.partition}@{r.offset}")
    cluster.delete_topics([source, sink])  # read back: scratch now (a calibration makes
    # hundreds, which a node restarted after a kill would load before it starts)
    return Run(exercise.id, fault, seed, counts, passed, result, history, (source, sink),
               time.monotonic() - t0, plan, errors, examples, positions, state=state,
               reason=reason, point=point.name if point else "", crash=crash)


def handed_over(events: list[dict[str, Any]], message: str | None, cap_at: float,
                now: float | None = None, successor: str = "stage-1") -> str:
    """Is it time to resume the stalled instance, and why: "handled" (the successor
    handled the stalled ``message``), "locked" (it has been inside one call into the
    student's code for :data:`HANDOFF_GRACE` -- its ``setup(db)``, or its handler on
    *any* message: it waits on a lock the stalled one holds), "cap" (past ``cap_at``:
    the group never handed the partition over), or "" (not yet). Pure: unit-tested on
    hand-written events.

    Any message, not only the stalled one: the successor's first batch may come from
    another partition, and a handler that takes the write lock before its check
    (``BEGIN IMMEDIATE``) then waits there, on its first message, and never reaches
    the stalled one until the stalled instance resumes (measured: the calibration's
    3-broker cluster). A successor in ``setup(db)`` has subscribed, so its client has
    joined the group in librdkafka's own thread and taken the partitions already."""
    now = time.monotonic() if now is None else now
    mine = [e for e in events if e.get("process") == successor]
    if any(e["kind"] == "handled" and e.get("message") == message for e in mine):
        return "handled"
    since = in_call_since(mine)
    if since is not None and now - since >= HANDOFF_GRACE:
        return "locked"
    return "cap" if now >= cap_at else ""


def in_call_since(events: list[dict[str, Any]]) -> float | None:
    """When one process's call into the student's code that has not returned began
    (None: it is in none): its ``setup`` not followed by ``set_up``, or a message it
    polled (the loop writes the ``poll`` right before the handler call) not followed by
    its ``handled``. Events of one process, in the order it wrote them."""
    open_at: tuple[str | None, float] | None = None
    for e in events:
        kind = e["kind"]
        if kind == "setup":
            open_at = (None, e["t"])
        elif kind == "poll" and e.get("values"):
            open_at = (e["values"][0], e["t"])
        elif kind == "set_up" or (kind == "handled" and open_at is not None
                                  and e.get("message") == open_at[0]):
            open_at = None
    return open_at[1] if open_at is not None else None


def _resume(proc: subprocess.Popen) -> None:
    """SIGCONT a stalled stage process (a no-op for one that is not stopped)."""
    try:
        os.kill(proc.pid, signal.SIGCONT)
    except ProcessLookupError:
        pass


def stored_offsets(events: list[dict[str, Any]], process: str = "stage-0") -> bool:
    """Did ``process`` store offsets (``store_offsets``) for a commit to send later?"""
    return any(e["kind"] == "store_offsets" and e.get("process") == process
               for e in events)


def committed_at_kill(cluster: Any, group: str, topic: str) -> Offsets:
    """The group's committed offsets on ``topic`` (-1001: none), read right after the
    kill and before the successor starts: exactly where the successor resumes, however
    the killed process committed -- auto-commit's timer too, whose commit is made in
    librdkafka's thread and whose report reaches the History late or never. Read only
    for a process that stored offsets: a ``commit()`` is recorded when it returns."""
    from ..readers import committed_offsets  # lazy: a client

    return {(topic, p): o for p, o in committed_offsets(cluster, group, topic).items()}
