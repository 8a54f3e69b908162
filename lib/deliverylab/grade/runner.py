"""One graded run: a student's stage, in its own process, under one fault and one seed.

Every run has the same shape, so that runs of different solutions compare:

1. fresh input and output topics, a fresh consumer group (one cluster serves a grade);
2. the lab writes ``values`` unique values to the input (at least once, recorded);
3. the fault is armed (``lose_ack``: the next produce response of the output's leader
   is dropped) and the student's stage runs as ``stage-0`` in a child process
   (:mod:`deliverylab.grade.child`); under ``crash_consumer`` that process SIGKILLs
   itself at the seeded point and ``stage-1``, a fresh process in the same group, takes
   over, as a restarted service would;
4. the cluster is healed, the children's events become History ops, both topics are read
   back, and the Checker judges: its counts (plus ``unfinished``, ``fault_missed``)
   decide each property of the exercise.

The seed decides the crash point, nothing else: the same seed replays the same run.
"""

from __future__ import annotations

import json
import random
import sqlite3
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import checker as C
from ..clients import TxnProducer
from ..history import History
from ..modes import AT_LEAST_ONCE, TRANSACTIONAL
from ..nemesis import Nemesis
from ..readers import bounds, read_back
from ..workload import ProducerWorkload
from .exercises import Exercise

#: The event kinds that become History ops (``handed`` only matters if never reported).
RECORDED = ("poll", "send", "commit", "fault", "begin_txn", "commit_txn", "abort_txn",
            "send_offsets", "init_txn")

#: Seconds one stage process may take before it is killed and counted ``unfinished``.
STAGE_TIMEOUT = 60.0


@dataclass
class Run:
    """One run's evidence and verdict."""

    exercise: str
    fault: str
    seed: int
    counts: dict[str, int]
    passed: dict[str, bool]
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

    @property
    def ok(self) -> bool:
        return all(self.passed.values())

    def to_dict(self) -> dict[str, Any]:
        return {"fault": self.fault, "seed": self.seed, "seconds": round(self.seconds, 2),
                "plan": self.plan, "counts": self.counts, "passed": self.passed,
                "topics": list(self.topics), "errors": self.errors}


def kill_plan(exercise: Exercise, fault: str, seed: int) -> dict[str, Any]:
    """Where the seeded crash lands: right after the stage's ``after_commits``-th commit
    returned, or when it hands its ``at_value``-th value to its producer, whichever comes
    first. The value is always past the commit for a stage that commits once per batch,
    so such a stage dies right after a commit, and one that commits later (or never)
    still dies, midway."""
    plans = kill_plans(exercise, fault, seed)
    return plans[0] if plans else {}


def kill_plans(exercise: Exercise, fault: str, seed: int) -> list[dict[str, Any]]:
    """The crash plan of each stage process that is to be killed, in order (empty: no
    crash). The first dies as :func:`kill_plan` says; with ``crashes=2`` the restarted
    one dies too, mid-way: while it hands its ``at_value``-th value (inside an open
    transaction, for a stage that commits once per batch)."""
    rng = random.Random(seed)
    if fault == "kill_after_db":  # an odd commit: the first of a pair, if it makes pairs
        return [{"kill_after_db_commits": rng.choice(range(3, 16, 2))}]
    if fault != "crash_consumer":
        return []
    after = rng.randint(1, 3)
    value = rng.randint(exercise.batch * after + 15, exercise.values - 5)
    plans = [{"kill_after_commits": after, "kill_at_value": value}]
    if exercise.crashes >= 2:
        plans.append({"kill_at_value": rng.randint(3, exercise.batch + 5)})
    return [{**p, "commit_call": exercise.commit_call} for p in plans]


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


class Stage:
    """Starts the student's stage processes of one run and waits for them."""

    def __init__(self, exercise: Exercise, solution: Path, cluster: Any, source: str,
                 sink: str, group: str, workdir: Path) -> None:
        from ..process.children import Children  # lazy: the reaper is not vocabulary

        self.children = Children()
        self.exercise, self.solution, self.cluster = exercise, solution, cluster
        self.source, self.sink, self.group, self.workdir = source, sink, group, workdir
        self.events = workdir / "events.jsonl"
        mode = TRANSACTIONAL if exercise.transactional else AT_LEAST_ONCE
        ends = {b["partition"]: b["high_watermark"] for b in bounds(cluster, source)}
        self.base = {
            "solution": str(solution), "function": exercise.function,
            "bootstrap": cluster.bootstrap_servers, "input": source, "output": sink,
            "group": group, "events": str(self.events), "ends": ends,
            "timeout": STAGE_TIMEOUT - 5,
            "consumer": {**mode.consumer, "enable.auto.commit": False},
            "producer": {**mode.producer, **exercise.settings},
        }
        if exercise.transactional:  # one id per run: a restarted stage fences the last
            self.base["producer"]["transactional.id"] = f"{group}-txn"
        if exercise.kind == "handler":  # the side effect's database, created by the lab
            self.database = workdir / "effects.db"
            with sqlite3.connect(self.database) as db:
                db.execute("CREATE TABLE orders (order_id TEXT NOT NULL, amount INTEGER)")
            db.close()
            self.base.update(kind="handler", database=str(self.database))

    def rows(self) -> list[str]:
        """The order id of every row in the handler's database."""
        db = sqlite3.connect(self.database)
        try:
            return [r[0] for r in db.execute("SELECT order_id FROM orders")]
        finally:
            db.close()

    def run(self, process: str, plan: dict[str, Any]) -> tuple[str, str]:
        """Run one stage process to its end; returns (how it ended, error tail)."""
        from ..process.children import child_env, python_module

        spec = self.workdir / f"{process}.json"
        spec.write_text(json.dumps({**self.base, **plan, "process": process}))
        log = self.workdir / f"{process}.log"
        proc = self.children.start(process, python_module("grade.child", str(spec)), log,
                                   env=child_env())
        try:
            code = proc.wait(STAGE_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.children.kill(proc)
            return "timeout", f"{process} still ran after {STAGE_TIMEOUT:.0f} s: killed"
        finally:
            self.children.stop(proc)
        if code == -9:
            return "killed", ""
        if code != 0:
            text = log.read_text(errors="replace").strip().splitlines()
            return "error", "\n".join(text[-12:])
        return "done", ""

    def read_events(self) -> list[dict[str, Any]]:
        if not self.events.exists():
            return []
        return [json.loads(line) for line in self.events.read_text().splitlines()
                if line.strip()]

    def close(self) -> None:
        self.children.close()


def run_once(exercise: Exercise, solution: Path, fault: str, seed: int,
             cluster: Any) -> Run:
    """One run of ``solution`` under ``fault`` with ``seed`` on a running ``cluster``."""
    t0 = time.monotonic()
    tag = f"grade{exercise.id}-{fault}-{seed}-{uuid.uuid4().hex[:6]}"
    source, sink, group = f"in-{tag}", f"out-{tag}", f"{tag}-group"
    topic_config = {"min.insync.replicas": min(2, cluster.brokers)}
    for name in (source, sink):
        cluster.create_topic(name, partitions=3, config=topic_config)
    history = History()
    nemesis = Nemesis(cluster, history=history)
    upstream = None
    if fault == "lose_ack" and exercise.kind == "handler":  # a duplicate in the input
        upstream = nemesis.lose_ack(node=cluster.leader(source, 0), count=1)
    ProducerWorkload(cluster, source, AT_LEAST_ONCE, history, process="producer-0").run(
        exercise.values)
    if upstream is not None:
        upstream.handle.wait(30)
    if exercise.aborted_input:  # a transaction the stage must not copy: it aborted
        txn = TxnProducer(cluster, source, history, transactional_id=f"{tag}-aborted",
                          process="aborted-0")
        txn.begin()
        txn.write(exercise.aborted_input)
        txn.abort()
    plans = kill_plans(exercise, fault, seed)
    counts: dict[str, int] = {"unfinished": 0, "fault_missed": 0}
    errors: list[str] = []
    loss = None
    rows: list[str] | None = None
    with tempfile.TemporaryDirectory(prefix=f"{tag}-") as tmp:
        stage = Stage(exercise, solution, cluster, source, sink, group, Path(tmp))
        try:
            if fault == "lose_ack" and upstream is not None:
                loss = upstream
            elif fault == "lose_ack":
                # On whichever broker gets the stage's first write: the student picks
                # the partitions (by key, by default), and nothing else produces now.
                loss = nemesis.lose_ack(count=1)
            ended, err = "killed", ""
            for i, plan in enumerate([*plans, {}]):
                ended, err = stage.run(f"stage-{i}", plan)
                if plan and ended == "done":  # it never reached its crash point
                    counts["fault_missed"] += 1
                if ended != "killed":
                    break
            if ended != "done":
                counts["unfinished"] += 1
                if err:
                    errors.append(err)
            if loss is not None:  # the proxy reports its drop asynchronously
                loss.handle.wait(5)
                counts["acks_lost"] = loss.handle.dropped
            nemesis.heal()
            to_history(stage.read_events(), history)
            if exercise.kind == "handler":
                rows = stage.rows()
        finally:
            nemesis.heal()
            stage.close()
    if loss is not None and not counts["acks_lost"] and (exercise.kind == "handler" or any(
            op.kind == "send" and op.topic == sink for op in history)):
        counts["fault_missed"] += 1
    isolation = "read_committed" if exercise.transactional else "read_uncommitted"
    examples: dict[str, list[dict[str, Any]]] = {}
    if rows is None:
        reads = read_back(cluster, [source, sink], isolation)
        result = C.check(history, reads, C.ANOMALIES, pipeline=(source, sink))
    else:  # the side effect is the database, judged beside the input's check
        reads = read_back(cluster, [source], isolation)
        result = C.check(history, reads, C.ANOMALIES)
        examples = effect_counts(counts, [r.value for r in reads if r.value], rows, history)
    counts.update(result.counts)
    passed = {p.name: p.holds(counts, fault) for p in exercise.properties}
    shown = {f["value"] for found in [*result.examples.values(), *examples.values()]
             for f in found[:1] if f.get("value")}
    positions: dict[str, list[str]] = {}
    for r in reads:
        if r.value in shown:
            role = "input" if r.topic == source else "output"
            positions.setdefault(r.value, []).append(f"{role}/{r.partition}@{r.offset}")
    return Run(exercise.id, fault, seed, counts, passed, result, history, (source, sink),
               time.monotonic() - t0, {"stages": plans}, errors, examples, positions)


def effect_counts(counts: dict[str, int], input_ids: list[str], rows: list[str],
                  history: History) -> dict[str, list[dict[str, Any]]]:
    """Chapter 06's checker over the handler's rows: duplicate and missing rows (into
    ``counts``); returns examples of each, as the Checker's findings look."""
    from ..services.check import count_effects  # lazy: chapter 06's checker

    polls = [{"kind": "poll", "message_id": v} for op in history
             if op.kind == "poll" for v in op.values]
    effects = count_effects("student", input_ids, rows, [], polls)
    counts.update(duplicate_rows=effects.duplicate_rows, missing_rows=effects.missing_rows,
                  input_copies=effects.input_copies, redelivered=effects.redelivered)
    missing = sorted(set(input_ids) - set(rows))
    return {"duplicate_rows": [{"value": v} for v in effects.twice_rows[:5]],
            "missing_rows": [{"value": v} for v in missing[:5]]}
