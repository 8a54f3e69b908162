"""The driver process of exercise 05: ``python -m deliverylab.grade.spark_child SPEC``.

Chapter 05's pipeline as the student's own: the lab's Spark query (Kafka source,
``read_committed``, ``maxOffsetsPerTrigger``, the provenance column; see
:func:`deliverylab.spark.pipeline.source_frame`) whose ``foreachBatch`` function calls
the student's ``write_batch(df, batch_id, db)``. The grader runs it (:func:`run`) in
its driver servers (:mod:`.spark_server`): the driver a ``kill_driver`` kills in a spare,
a process of its own with its own SparkSession, so that the fault is a real SIGKILL of
the student's driver (Python and its Spark JVM, one process group); the others one after
the other in the main server. ``python -m`` runs one spec in a fresh process (a run
replayed by hand).

The two crashes of the registry land at seeded batch ``crash_at``, in the window the
chapter is about -- after the student's write, before Spark writes ``commits/N``:

- ``crash_query``: an exception in the driver once ``write_batch`` returned; the query is
  restarted *in the same driver*, as an application's retry would (what the student's
  module holds in memory survives);
- ``kill_driver``: SIGKILL of the process group right after the student's first database
  commit of that batch (or when ``write_batch`` returns, if it commits nothing); the
  grader starts a fresh driver on the same checkpoint and database.

What happened is written to the run's events file (as :mod:`deliverylab.grade.child`
does): a ``poll`` per input record of each batch, a ``send`` per row each database
commit added, a ``commit`` per ``commits/N`` Spark wrote, the ``fault``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from ..history import read_json_lines
from ..spark.query import QuerySpec, await_query, batches
from .child import RAISED, StudentRaised, call_student, load_solution
from .database import StudentDatabase
from .events import Events, value_text

#: The table the lab creates and judges; the student inserts into it.
RECORDS = ("CREATE TABLE records (provenance TEXT NOT NULL, partition INTEGER NOT NULL, "
           "value TEXT NOT NULL)")

#: What Spark's exception carries when the planned ``crash_query`` stopped the query.
CRASH_TEXT = "simulated crash_query"


class Crash:
    """The seeded crash of one driver: which fault, at which batch, done yet or not."""

    def __init__(self, events: Events, fault: str | None, at: int | None) -> None:
        self.events, self.fault, self.at = events, fault, at
        self.batch: int | None = None
        self.commits_in_batch = 0
        self.done = False

    def armed(self) -> bool:
        return not self.done and self.fault is not None and self.batch == self.at

    def kill(self, why: str) -> None:
        self.done = True
        self.events.write("fault", fault="kill_driver", outcome="info",
                          detail=f"{self.events.process} is SIGKILLed with its Spark JVM "
                          f"{why}, in batch {self.batch}, before commits/{self.batch}")
        os.killpg(os.getpgrp(), signal.SIGKILL)

    def committed(self) -> None:
        """After each database commit of the student's function."""
        self.commits_in_batch += 1
        if self.armed() and self.fault == "kill_driver" and self.commits_in_batch == 1:
            self.kill("right after your first database commit")

    def returned(self) -> None:
        """After ``write_batch`` returned: where ``crash_query`` raises."""
        if not self.armed():
            return
        if self.fault == "kill_driver":
            self.kill("after your function returned (it committed nothing)")
        self.done = True
        self.events.write("fault", fault="crash_query", outcome="info",
                          detail=f"{self.events.process} raises after your function "
                          f"wrote batch {self.batch}, before commits/{self.batch}; the "
                          "query restarts in the same driver")
        raise RuntimeError(f"{CRASH_TEXT} after batch {self.batch}")


class BatchDatabase(StudentDatabase):
    """The sink's database: each commit records the rows it added (``send`` ops, with
    the batch and the commit's number) and may be the seeded kill point."""

    def __init__(self, conn: sqlite3.Connection, events: Events, crash: Crash,
                 where: str) -> None:
        super().__init__(conn, events, None)
        self.crash, self.where = crash, where
        self.seen = 0  # highest rowid already recorded

    def _committed(self) -> None:
        if not self.armed:
            return
        self.commits += 1
        rows = self._conn.execute("SELECT rowid, partition, value FROM records "
                                  "WHERE rowid > ? ORDER BY rowid", (self.seen,)).fetchall()
        for rowid, partition, value in rows:
            self.seen = max(self.seen, rowid)
            text = value_text(value)
            self._events.write("send", outcome="ok", values=[text] if text else [],
                               topic=self.where, partition=partition,
                               detail=f"batch {self.crash.batch}, database commit "
                               f"#{self.commits}")
        self.crash.committed()


def _offsets_detail(batch: int, end: dict[tuple[str, int], int]) -> str:
    """``commits/N t/p@o,...``: the report's excerpt finds the commit that covered a read."""
    return f"commits/{batch} " + ",".join(f"{t}/{p}@{o}" for (t, p), o in sorted(end.items()))


class Commits:
    """Spark's ``commits/N`` as ``commit`` events, each once, timed by the file."""

    def __init__(self, events: Events, checkpoint: str) -> None:
        self.events, self.checkpoint = events, checkpoint
        self.seen = {b.batch for b in batches(checkpoint) if b.committed}

    def record(self) -> None:
        skew = time.time() - time.monotonic()
        for b in batches(self.checkpoint):
            if b.committed and b.batch not in self.seen and b.committed_at is not None:
                self.seen.add(b.batch)
                self.events.write("commit", outcome="ok", t=b.committed_at - skew,
                                  detail=_offsets_detail(b.batch, b.end))


def foreach_batch(fn: Any, db: BatchDatabase, events: Events, crash: Crash,
                  commits: Commits) -> Any:
    """The query's ``foreachBatch`` function around the student's ``write_batch``."""

    def write(df: Any, batch_id: int) -> None:
        commits.record()  # the last batch's commits/N is written before this one starts
        df = df.persist()
        for r in df.collect():
            text = value_text(r["value"])
            events.write("poll", values=[text] if text else [], topic=r["topic"],
                         partition=int(r["partition"]), offset=int(r["offset"]),
                         detail=f"batch {batch_id}")
        crash.batch, crash.commits_in_batch = batch_id, 0
        db.message = None
        call_student(events, getattr(getattr(fn, "module", None), "__file__", "") or "",
                     fn, df, batch_id, db)
        db.look()
        df.unpersist()
        crash.returned()

    return write


def run_query(spark: Any, spec: QuerySpec, write: Any, timeout: float) -> None:
    """The chapter's query (:func:`deliverylab.spark.pipeline.run_query`) with the
    student's sink, over everything in the input now (``availableNow``)."""
    from ..spark.pipeline import source_frame

    spark.conf.set("spark.sql.shuffle.partitions", str(spec.shuffle_partitions))
    query = (source_frame(spark, spec).writeStream.foreachBatch(write)
             .option("checkpointLocation", spec.checkpoint)
             .queryName(f"grade-{spec.process}").trigger(availableNow=True).start())
    await_query(query, f"the Spark query of {spec.process}", spec.checkpoint, timeout)


def run(spec: dict[str, Any], shared: bool = False) -> int:
    """One driver's life: the query to its end, through the planned crash.

    The student's module is imported afresh on every call (:func:`load_solution` makes a
    new module object), so a driver knows nothing an earlier one held in memory.
    ``shared``: this process serves spec after spec (:mod:`.spark_server`), so the spec
    gets a SparkSession of its own on the running SparkContext (its own SQL settings,
    views and queries), and leaves no query running and nothing cached behind it."""
    events = Events(spec["events"], spec["process"])
    try:
        fn = load_solution(spec["solution"], spec["function"], events)
    except StudentRaised:
        return RAISED
    crash = Crash(events, spec.get("crash"), spec.get("crash_at"))
    conn = sqlite3.connect(spec["database"], timeout=30, check_same_thread=False)
    try:
        return _drive(spec, fn, events, crash, conn, shared)
    finally:
        conn.close()


def _drive(spec: dict[str, Any], fn: Any, events: Events, crash: Crash,
           conn: sqlite3.Connection, shared: bool) -> int:
    """:func:`run` from the student's ``setup(db)`` on, with the database open."""
    from ..spark.session import session

    db = BatchDatabase(conn, events, crash, spec["database"])
    db.seen = conn.execute("SELECT coalesce(max(rowid), 0) FROM records").fetchone()[0]
    setup = getattr(fn.module, "setup", None)
    if callable(setup):
        try:
            call_student(events, spec["solution"], setup, db)
        except StudentRaised:
            return RAISED
        db.commit()
    db.armed = True
    query = QuerySpec(spec["bootstrap"], spec["input"], "database", spec["database"],
                      spec["checkpoint"], spec["state"], spec["process"],
                      int(spec["max_offsets"]), master=spec.get("master"))
    spark = session(spec.get("master"))
    if shared:
        spark = spark.newSession()
    spark.sparkContext.setLogLevel("ERROR")
    commits = Commits(events, spec["checkpoint"])
    events.write("start", detail=f"Spark driver on {spark.sparkContext.master}")
    write = foreach_batch(fn, db, events, crash, commits)
    try:
        try:
            run_query(spark, query, write, float(spec["timeout"]))
        except Exception as exc:
            if _raised(spec["events"], spec["process"]):  # the student's function raised
                return RAISED
            if crash.fault != "crash_query" or not crash.done or CRASH_TEXT not in str(exc):
                raise
            events.write("restart", detail="the query restarts on its checkpoint")
            run_query(spark, query, write, float(spec["timeout"]))
    finally:
        if shared:  # a query the student started, a frame they cached: not the next's
            for q in spark.streams.active:
                q.stop()
            spark.catalog.clearCache()
    commits.record()
    events.write("end", detail="the query reached the end of its input")
    db.close()
    return 0


def _raised(path: str, process: str) -> bool:
    """Did this driver's student function raise (a ``raised`` event is written)?"""
    return any(e.get("kind") == "raised" and e.get("process") == process
               for e in read_json_lines(path).records)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m deliverylab.grade.spark_child SPEC.json", file=sys.stderr)
        return 2
    return run(json.loads(Path(args[0]).read_text()))


if __name__ == "__main__":
    sys.exit(main())
