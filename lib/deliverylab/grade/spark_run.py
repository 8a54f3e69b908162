"""One graded run of exercise 05: the student's ``foreachBatch`` sink under one crash.

The same shape as :func:`deliverylab.grade.runner.run_once`, for a Spark driver:

1. a fresh input topic (3 partitions), ``values`` unique values written to it (the lab's
   producer, recorded); a fresh database with the ``records`` table, checkpoint folder;
2. ``driver-0`` runs the query with the student's function and crashes at the seeded
   batch: ``crash_query`` raises and restarts the query inside the same driver;
   ``kill_driver`` SIGKILLs the driver (:mod:`deliverylab.grade.spark_child`, a process
   of its own -- a spare of the grade's driver server, its Spark warmed up before the
   run needed it: its death is the fault), and ``driver-1`` restarts the query on the
   same checkpoint and database. The drivers no fault kills run in the grade's main
   driver server (:mod:`deliverylab.grade.spark_server`: one Spark start for all of
   them); every driver imports the student's module afresh;
3. the drivers' events become the History; the input is read back (read_committed) and
   the database's rows as the output (:func:`deliverylab.spark.sinks.read_database`);
   the Checker's pipeline check counts values missing or written twice.

The seed decides the batch that crashes, nothing else: the same seed replays the run.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from .. import checker as C
from ..clients import bootstrap_of
from ..history import History, read_json_lines
from ..modes import AT_LEAST_ONCE
from ..readers import read_back
from ..workload import ProducerWorkload
from .exercises import JUDGED, RAISED, UNPLACED, Exercise
from .runner import Run, judge_state, to_history
from .search import CrashPoint
from .spark_child import RECORDS
from .spark_server import DriverServer

#: Seconds one driver may take (Spark starts in it) before it is killed, ``unfinished``.
DRIVER_TIMEOUT = 240.0

#: Runs ahead of the first ``kill_driver`` from which spares may warm: a Spark start
#: takes about as long as two or three ``crash_query`` runs beside it, and the driver
#: server starts them one at a time, after its main server's (:data:`~.spark_server.
#: WARMING_MAX`).
SPARE_LEAD = 3

#: Offsets per micro-batch (``maxOffsetsPerTrigger``): 40 values make 4 batches.
MAX_OFFSETS = 10


def crash_plan(exercise: Exercise, fault: str, point: CrashPoint | None) -> dict[str, Any]:
    """The batch the crash lands in: the point's n-th micro-batch (``batch#2``: batch 1),
    searched over every batch but the last (a replayed batch always has one after it to
    run too: :attr:`Exercise.depth` is 3 of 4 batches)."""
    batches = -(-exercise.values // MAX_OFFSETS)
    n = point.n if point is not None else 1
    return {"crash": fault, "crash_at": (n - 1) % (batches - 1)}


def warm_ahead(drivers: DriverServer, faults: list[str], lead: int = SPARE_LEAD) -> None:
    """Before a run: ``faults`` are those of this run and the runs after it, in order.
    If one of the next ``lead + 1`` needs a driver of its own (``kill_driver``), have
    ``drivers`` warm a spare for each such run still to come, so that the spare's Spark
    starts while the runs before it mostly wait on the broker."""
    if "kill_driver" in faults[:lead + 1]:
        drivers.spares(faults.count("kill_driver"))


def run_spark(exercise: Exercise, solution: Path, fault: str, seed: int,
              cluster: Any, point: CrashPoint | None = None, *,
              drivers: DriverServer) -> Run:
    """One run of ``solution`` (a ``write_batch`` sink) under ``fault`` with ``seed``;
    ``drivers``: the grade's driver server (its owner closes it)."""
    from ..spark import sinks
    from ..spark.session import MASTER_ENV

    t0 = time.monotonic()
    tag = f"grade{exercise.id}-{fault}-{seed}-{uuid.uuid4().hex[:6]}"
    source = f"in-{tag}"
    cluster.create_topic(source, partitions=3)
    history = History()
    ProducerWorkload(cluster, source, AT_LEAST_ONCE, history, process="producer-0").run(
        exercise.values)
    plan = crash_plan(exercise, fault, point)
    counts: dict[str, int] = {"unfinished": 0, "fault_missed": 0}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix=f"{tag}-") as tmp:
        work = Path(tmp)
        database = work / "sink.db"
        with sqlite3.connect(database) as db:
            db.execute(RECORDS)
        db.close()
        base = {"solution": str(solution), "function": exercise.function,
                "bootstrap": bootstrap_of(cluster, direct=True), "input": source,
                "database": str(database), "checkpoint": str(work / "checkpoint"),
                "state": str(work / "state"), "events": str(work / "events.jsonl"),
                "max_offsets": MAX_OFFSETS, "timeout": DRIVER_TIMEOUT - 20,
                "master": os.environ.get(MASTER_ENV)}
        first = {**base, **plan, "process": "driver-0"}
        serve = drivers.serve_alone if plan["crash"] == "kill_driver" else drivers.serve
        ended, err = serve(first, work, DRIVER_TIMEOUT)
        endings = [("driver-0", ended, err)]
        if ended == "killed":
            ended, err = drivers.serve({**base, "process": "driver-1"}, work,
                                       DRIVER_TIMEOUT)
            endings.append(("driver-1", ended, err))
        errors += [e for _, _, e in endings if e]
        events = list(read_json_lines(work / "events.jsonl").records)
        to_history(events, history)
        state, reason = judge_state(events, endings, plan, DRIVER_TIMEOUT)
        if state == JUDGED and not history.faults():
            state, reason = UNPLACED, (f"not judged: the grader could not place its "
                                       f"{fault} in micro-batch {plan['crash_at']}")
        if state == RAISED:
            errors.insert(0, reason)
        reads = read_back(cluster, [source], "read_committed")
        reads += sinks.read_database(database)
    result = C.check(history, reads, C.ANOMALIES, pipeline=(source, str(database)))
    counts.update(result.counts)
    passed = exercise.verdicts(fault, counts, state)
    shown = {f["value"] for found in result.examples.values() for f in found[:1]
             if f.get("value")}
    positions: dict[str, list[str]] = {}
    for r in reads:
        if r.value in shown:
            role = "input" if r.topic == source else "output"
            positions.setdefault(r.value, []).append(f"{role}/{r.partition}@{r.offset}")
    return Run(exercise.id, fault, seed, counts, passed, result, history,
               (source, str(database)), time.monotonic() - t0, plan, errors, {}, positions,
               state=state, reason=reason, point=point.name if point else "",
               crash=next((e.get("detail", "") for e in events if e["kind"] == "fault"), ""))
