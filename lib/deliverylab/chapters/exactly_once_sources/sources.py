"""Chapter 07's experiments on a real Connect cluster, each returning what it saw.

The source system is a :class:`SourceFile`: lab values, one per line, appended by the
notebook. Kafka's FileStreamSource task reads it and remembers, as its *source offset*,
the byte position after the last line it read. Where that position is kept decides
everything:

- without exactly-once support the task sends records as it reads them and commits the
  position separately, every ``offset.flush.interval.ms``. A worker killed in between
  leaves records in Kafka and no position: the next task reads those lines again.
  How many duplicates follow is known *before* the kill: every line after the last
  committed position (:meth:`SourceFile.after`);
- with exactly-once support the records and the position go into one transaction:
  either both are in Kafka or neither is, and a stale task is fenced.

Each run creates its own connector, topic and file on a :class:`~deliverylab.connect.Connect`
cluster (so runs never see each other's records), drives one fault through the
:class:`~deliverylab.nemesis.Nemesis` (a fault op in the History), stops the connector
gracefully and reads the topic back at both isolation levels. A final read is always
complete: it happens after the connector stopped and its committed position equals
the file's size, or the run raises.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ... import values as V
from ...checker import extra_copies
from ...clients import Fenced, TxnProducer
from ...cluster import ready
from ...connect.connect import FENCED_TEXTS, Connect, ConnectError, file_source
from ...errors import bad_value
from ...history import Read
from ...nemesis import Nemesis
from ...readers import read_back, wait_stable
from ...segments import log_batches

if TYPE_CHECKING:
    from ...cluster import Cluster

_RUNS = itertools.count(1)


class SourceFile:
    """The chapter's source system: a file of lab values, one per line.

    Lines are JSON lab values (``{"producer": "line", "seq": 7, ...}``), so the
    readers, checkers and Spark decode what the connector copied like any other value.
    """

    def __init__(self, path: str | Path, producer: str = "line") -> None:
        self.path = Path(path)
        self.producer = producer
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.touch()
        self.ends: list[int] = []  # byte position after each line written
        self._lock = threading.Lock()

    @property
    def values(self) -> list[str]:
        """The value ids written, in order."""
        return [str(V.ValueId(self.producer, i)) for i in range(len(self.ends))]

    @property
    def size(self) -> int:
        return self.ends[-1] if self.ends else 0

    def append(self, count: int) -> list[str]:
        """Append ``count`` lines (flushed to the OS, as a log writer would); returns
        their value ids."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise bad_value("count", count, "a whole number >= 1")
        with self._lock:
            first = len(self.ends)
            lines = [V.encode(self.producer, first + i) + b"\n" for i in range(count)]
            pos = self.size
            with open(self.path, "ab") as fh:
                fh.write(b"".join(lines))
                fh.flush()
                os.fsync(fh.fileno())
            for line in lines:
                pos += len(line)
                self.ends.append(pos)
            return [str(V.ValueId(self.producer, first + i)) for i in range(count)]

    def after(self, position: int | None) -> int:
        """Lines a task starting at byte ``position`` (None: the start) reads again:
        the duplicates a restart makes when everything up to the file's end was sent."""
        return after(self.ends, position)


def after(ends: list[int], position: int | None) -> int:
    """How many lines end past ``position`` (None or 0: all of them)."""
    start = position or 0
    return sum(1 for end in ends if end > start)


def copies(reads: Iterable[Read]) -> Counter:
    """Value -> how many times it is in the log (records that are not lab values left out)."""
    return Counter(r.value for r in reads if r.value is not None)


def missing(reads: Iterable[Read], written: Iterable[str]) -> list[str]:
    """Values written to the file that are not in the log."""
    seen = copies(reads)
    return [v for v in written if v not in seen]


@dataclass
class SourceRun:
    """What one run of a Connect source saw; ``observed`` holds the counts chapter 07
    asserts. (A :class:`~deliverylab.scenario.RunResult` is a Scenario's run.)"""

    name: str
    connector: str
    topic: str
    observed: dict[str, Any] = field(default_factory=dict)
    committed: list[Read] = field(default_factory=list, repr=False)
    uncommitted: list[Read] = field(default_factory=list, repr=False)


class Runs:
    """The chapter's runs over one Kafka cluster and its Connect clusters.

    Args:
        cluster: the running cluster.
        nemesis: the Nemesis whose History gets the worker faults.
        lines: how many lines each run appends before its fault.
    """

    def __init__(self, cluster: Cluster, nemesis: Nemesis, lines: int = 200) -> None:
        if not isinstance(lines, int) or isinstance(lines, bool) or not 1 <= lines <= 100_000:
            raise bad_value("lines", lines, "a whole number from 1 to 100000")
        self.cluster = cluster
        self.nemesis = nemesis
        self.lines = lines
        self.folder = Path(cluster.workdir) / "sources"

    # ------------------------------------------------------------------ helpers
    def _begin(self, connect: Connect, label: str, **conf: Any) -> tuple[str, str, SourceFile]:
        """Heal the Connect cluster, then a fresh topic, file and connector for one run.

        Through the Nemesis, so a worker brought back between runs is in the History."""
        self._heal(connect)
        n = next(_RUNS)
        name, topic = f"{label}-{n}", f"lines-{label}-{n}"
        self.cluster.create_topic(topic, partitions=1)
        source = SourceFile(self.folder / f"{name}.txt")
        connect.create(name, file_source(source.path, topic, **conf))
        connect.wait_task(name)
        return name, topic, source

    def _heal(self, connect: Connect) -> None:
        """Bring back a paused or dead worker of ``connect`` (the Nemesis heals all)."""
        if any(connect.status_of(w.index) in ("paused", "dead") for w in connect.workers):
            self.nemesis.heal()

    def count(self, topic: str, isolation: str) -> int:
        return len(read_back(self.cluster, [topic], isolation))

    def wait_count(self, topic: str, isolation: str, at_least: int, timeout: float) -> int:
        """Wait until ``topic`` holds ``at_least`` records at ``isolation``; on timeout
        raise (``ClusterNotReady``) naming how many it held: a count short of a
        prediction is stated, never read on from."""
        seen = [0]

        def enough() -> int:
            seen[0] = self.count(topic, isolation)
            return seen[0] if seen[0] >= at_least else 0

        return ready.wait_until(f"{at_least} records of {topic} under {isolation}", enough,
                                timeout, interval=0.5,
                                explain=lambda: f"; {seen[0]} records there")

    def _finish(self, connect: Connect, name: str, topic: str, source: SourceFile,
                result: SourceRun, settle: float = 2.0) -> SourceRun:
        """Stop the connector gracefully (it commits), check it committed the whole file,
        then read the topic back at both isolation levels."""
        time.sleep(settle)
        connect.stop_connector(name)
        ready.wait_until(f"connector {name} to commit position {source.size} (the whole "
                         "file)", lambda: connect.committed_position(name) == source.size,
                         60, interval=0.5)
        # read_committed ends at the last stable offset: wait for the commit markers,
        # or records already committed would be counted missing.
        wait_stable(self.cluster, topic)
        result.committed = read_back(self.cluster, [topic], "read_committed")
        result.uncommitted = read_back(self.cluster, [topic], "read_uncommitted")
        result.observed.update(
            lines=len(source.ends),
            committed_records=len(result.committed),
            uncommitted_records=len(result.uncommitted),
            committed_duplicates=extra_copies(r.value for r in result.committed),
            uncommitted_duplicates=extra_copies(r.value for r in result.uncommitted),
            committed_missing=len(missing(result.committed, source.values)))
        connect.delete(name)
        return result

    # --------------------------------------------------------------------- runs
    def crash(self, connect: Connect, how: str = "kill") -> SourceRun:
        """Append the lines, wait until they are in Kafka, then kill (``"kill"``:
        SIGKILL) or stop (``"term"``: SIGTERM) the worker running the task; the other
        worker takes the task over and reads from the last committed position.

        ``predicted`` is stated before the fault, from the committed position then.
        """
        if how not in ("kill", "term"):
            raise bad_value("how", how, "'kill' (SIGKILL) or 'term' (SIGTERM)")
        label = f"{'eos' if connect.exactly_once else 'plain'}-{how}"
        name, topic, source = self._begin(connect, label)
        result = SourceRun(label, name, topic)
        source.append(self.lines)
        isolation = "read_committed" if connect.exactly_once else "read_uncommitted"
        self.wait_count(topic, isolation, self.lines, 60)
        position = connect.committed_position(name)
        predicted = 0 if how == "term" else source.after(position)
        result.observed.update(position_before=position, predicted=predicted)
        owner = connect.task_worker(name)
        fault = "kill_worker" if how == "kill" else "stop_worker"
        self.nemesis.apply(fault, worker=owner, connector=name)  # the owner just asked
        t0 = time.monotonic()
        taker = connect.wait_task(name, exclude=(owner,), timeout=90)
        result.observed.update(owner=owner, taken_over_by=taker,
                               takeover_seconds=round(time.monotonic() - t0, 1))
        expected = self.lines + (0 if connect.exactly_once else predicted)
        self.wait_count(topic, "read_uncommitted", expected, 30)  # raises if short of it
        return self._finish(connect, name, topic, source, result)

    def markers(self, topic: str) -> list[dict[str, Any]]:
        """The transaction markers of ``topic``/0 as the broker stored them (offset and
        COMMIT/ABORT), and how many data records precede each."""

        batches = log_batches(self.cluster, topic, 0)
        out = []
        data = 0
        for row in batches.itertuples():
            if row.control:
                out.append({"offset": int(row.offset), "marker": row.marker,
                            "records_before": data})
            else:
                data += 1
        return out

    def zombie(self, connect: Connect, rate: float = 20.0, after_resume: float = 6.0
               ) -> SourceRun:
        """Freeze the worker that runs the task (SIGSTOP); once the other worker runs
        it, unfreeze the first (SIGCONT): for a moment two tasks read the same file.

        Lines are appended all along (``rate`` per second). Without exactly-once the
        zombie's writes land beside its successor's; with it the zombie is fenced (its
        worker's log says so) and read_committed has every line once.
        """
        label = f"{'eos' if connect.exactly_once else 'plain'}-zombie"
        conf = {"exactly_once": "required"} if connect.exactly_once else {}
        name, topic, source = self._begin(connect, label, **conf)
        result = SourceRun(label, name, topic)
        stop = threading.Event()
        resumed_at: list[int] = []

        def writer() -> None:
            while not stop.is_set():
                source.append(1)
                stop.wait(1.0 / rate)

        thread = threading.Thread(target=writer, name="source-writer", daemon=True)
        thread.start()
        try:
            source.append(self.lines)
            self.wait_count(topic, "read_uncommitted", self.lines, 60)
            owner = connect.task_worker(name)
            fenced_before = len(connect.fenced_lines(owner))
            self.nemesis.apply("pause_worker", connector=name)
            taker = connect.wait_task(name, exclude=(owner,), timeout=90)
            time.sleep(2.0)  # the successor writes for a while: the zombie is behind
            resumed_at.append(len(source.ends))
            self.nemesis.apply("resume_worker", worker=owner, connector=name)
            time.sleep(after_resume)
        finally:
            stop.set()
            thread.join(5)
        result.observed.update(owner=owner, taken_over_by=taker)
        self._finish(connect, name, topic, source, result)
        late = set(source.values[resumed_at[0]:])
        result.observed.update(
            zombie_duplicates=extra_copies((r.value for r in result.committed), only=late),
            zombie_uncommitted_copies=extra_copies((r.value for r in result.uncommitted),
                                                   only=late),
            zombie_fenced_lines=len(connect.fenced_lines(owner)) - fenced_before)
        return result

    def zombies(self, *connects: Connect, rate: float = 20.0, after_resume: float = 6.0
                ) -> list[SourceRun]:
        """:meth:`zombie` on each Connect cluster at the same time, results in order.

        Why at once: a zombie run is ~20 s of waiting (for the group to notice the frozen
        worker, for the zombie to wake and write) and each cluster has its own workers,
        connector, file and topic. The heal each run begins with is done here first, one
        cluster after the other: the Nemesis heals everything, so a heal inside one run
        would wake the other run's zombie early.
        """
        if len({id(c) for c in connects}) != len(connects) or not connects:
            raise bad_value("connects", connects, "one or more different Connect clusters")
        for connect in connects:
            self._heal(connect)
        # f.result() re-raises a run's error here, in the caller's thread.
        with ThreadPoolExecutor(len(connects), thread_name_prefix="zombie") as pool:
            runs = [pool.submit(self.zombie, c, rate, after_resume) for c in connects]
            return [run.result() for run in runs]


def fence_from_python(runs: Runs, connect: Connect) -> SourceRun:
    """Fencing by ``transactional.id``, from Python (exactly-once on).

    1. A producer takes the live task's id (``<group>-<connector>-0``): its
       ``init_transactions`` bumps the epoch, so the task is fenced -- its next commit
       fails, and it stops with a fenced error;
    2. that producer opens a transaction and writes one value;
    3. the task is restarted (REST): its own ``initTransactions`` fences the producer
       in turn and aborts the open transaction;
    4. the producer's late commit is refused (fenced); its value is in the log, aborted:
       read_uncommitted shows it, read_committed does not. Each line is there once.
    """

    if not connect.exactly_once:
        raise bad_value("connect", connect, "a Connect cluster with exactly_once=True")
    name, topic, source = runs._begin(connect, "eos-fence", exactly_once="required")
    result = SourceRun("eos-python-fence", name, topic)
    source.append(runs.lines)
    runs.wait_count(topic, "read_committed", runs.lines, 60)
    history = runs.nemesis.history
    tid = zombie_id(connect, name)
    history.record("python-producer", "fault", "info", fault="zombie_producer",
                   detail=f"a Python producer takes transactional.id {tid}")
    thief = TxnProducer(runs.cluster, topic, history, transactional_id=tid,
                        process="python-producer")
    source.append(runs.lines)  # the fenced task cannot commit these
    owner = connect.task_worker(name)
    ready.wait_until(f"task {name}/0 to fail, fenced", lambda: any(
        t["state"] == "FAILED" for t in connect.status(name).get("tasks", [])), 60,
        interval=0.5)
    trace = next(t.get("trace", "") for t in connect.status(name)["tasks"])
    thief.begin()
    thief.write(1)
    runs.nemesis.restart_task(name)
    connect.wait_task(name)
    error = None
    try:
        thief.commit()
    except Fenced as exc:
        error = exc.code
    thief.close()  # fenced: close() lets go of it without raising
    result.observed.update(
        owner=owner, task_failed_fenced=any(t in trace for t in FENCED_TEXTS),
        python_commit_error=error)
    runs._finish(connect, name, topic, source, result)
    result.observed.update(
        python_value_committed=sum(1 for r in result.committed
                                   if r.value == "python-producer:0"),
        python_value_uncommitted=sum(1 for r in result.uncommitted
                                     if r.value == "python-producer:0"))
    return result


def zombie_id(connect: Connect, connector: str, task: int = 0) -> str:
    """The transactional.id Connect gives a task with exactly-once support
    (``<group>-<connector>-<task>``, Worker.taskTransactionalId)."""
    return f"{connect.group}-{connector}-{task}"


__all__ = ["ConnectError", "SourceRun", "Runs", "SourceFile", "copies",
           "fence_from_python", "missing", "zombie_id"]
