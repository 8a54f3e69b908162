"""Small helpers the chapters share, so a notebook holds narrative and calls only.

- :class:`Chapter` -- the chapter's claim, the counts it observed, the checks it makes;
  :meth:`Chapter.finish` writes the results file (read by ``python -m
  deliverylab.course`` and by CI) and fails the run loudly when the claim did not hold.
- :func:`what_you_saw` -- a "what you saw" summary generated from checker Results.
- :func:`self_check` -- an exercise's check: one clear line, right or wrong.
- :class:`Stream` -- a producer running in the background, so a student can press
  failure buttons while it runs; a headless run presses the same buttons on a schedule.
- :class:`LeaderFaults` -- "pause the followers, kill the leader, heal" as buttons:
  the at-most-once loss, by hand.
- :func:`stall_takeover` -- a consumer stalled past ``max.poll.interval.ms`` and the
  instance that takes its partitions over.
- :func:`log_batches` -- the partition's log segment as the broker stored it (producer
  id, epoch, sequence numbers, transaction markers), via Kafka's ``DumpLogSegments``.
- :class:`TxnProducer` -- a transactional producer driven one step at a time (begin,
  write, commit, abort), recording every op like the workloads do.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from . import jars
from . import values as V
from .checker import Result
from .clients import config
from .errors import LabError, bad_value
from .history import History, outcome_of
from .java import find_java
from .modes import TRANSACTIONAL, DeliveryMode
from .modes import mode as get_mode
from .nemesis import partition_meta, wait_leader
from .workload import Pipeline, PipelineReport, ProduceReport, ProducerWorkload, read_back

if TYPE_CHECKING:
    import pandas as pd

    from .nemesis import FaultRecord, Nemesis
    from .widgets import FaultPanel, FaultSpec


# --- the chapter's claim and its results file -------------------------------------------


@dataclass
class Check:
    """One condition of the claim: what it says, and whether it held."""

    what: str
    passed: bool


class Chapter:
    """A chapter's claim, the counts it observed and the checks that decide it.

    >>> ch = Chapter("02_at_least_once", "A lost ack makes a duplicate.", "results/02.json")
    >>> ch.observe(duplicates=3)                                # doctest: +SKIP
    >>> ch.expect("a lost ack made at least one duplicate", 3 >= 1)  # doctest: +SKIP
    >>> ch.finish()                                              # doctest: +SKIP

    The clock starts at construction, so ``seconds`` in the results file is the time the
    chapter took from its first library call to its verdict.
    """

    def __init__(self, name: str, claim: str, results_path: str | Path | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise bad_value("name", name, "the chapter's name, e.g. '02_at_least_once'")
        self.name = name
        self.claim = claim
        self.results_path = Path(results_path) if results_path else None
        self.observed: dict[str, Any] = {}
        self.checks: list[Check] = []
        self.t0 = time.monotonic()

    def observe(self, **counts: Any) -> dict[str, Any]:
        """Record observed counts (numbers, flags, short lists) for the results file."""
        self.observed.update(counts)
        return self.observed

    def expect(self, what: str, passed: bool) -> bool:
        """Record one condition of the claim; returns it, so a cell can print it."""
        self.checks.append(Check(what, bool(passed)))
        return bool(passed)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.t0

    def to_dict(self) -> dict[str, Any]:
        return {
            "chapter": self.name,
            "claim": self.claim,
            "observed": self.observed,
            "checks": [{"what": c.what, "pass": c.passed} for c in self.checks],
            "pass": self.passed,
            "seconds": round(self.seconds, 1),
        }

    def report(self) -> str:
        """The verdict as text: one line per check, then the claim."""
        lines = [f"  [{'x' if c.passed else ' '}] {c.what}" for c in self.checks]
        verdict = "PASS" if self.passed else "FAIL"
        return "\n".join([f"{verdict}: {self.claim}", *lines,
                          f"observed: {json.dumps(self.observed, default=str)}",
                          f"({self.seconds:.0f} s)"])

    def finish(self) -> dict[str, Any]:
        """Write the results file, print the verdict, and raise if the claim failed.

        The file is written *before* raising, so a failed headless run still leaves its
        counts behind for the summary table.
        """
        record = self.to_dict()
        if self.results_path is not None:
            self.results_path.parent.mkdir(parents=True, exist_ok=True)
            self.results_path.write_text(json.dumps(record, indent=2, default=str) + "\n")
        print(self.report(), flush=True)
        if not self.checks:
            raise AssertionError(f"{self.name}: no check was recorded, so nothing was shown")
        failed = [c.what for c in self.checks if not c.passed]
        if failed:
            raise AssertionError(f"{self.name}: the claim did not hold: " + "; ".join(failed))
        return record


# --- "what you saw" ------------------------------------------------------------------------


class Saw:
    """A short generated summary: Markdown in a notebook, plain text everywhere else."""

    def __init__(self, title: str, items: list[tuple[str, str]]) -> None:
        self.title = title
        self.items = items

    def _repr_markdown_(self) -> str:
        body = "\n".join(f"- **{name}** — {text}" for name, text in self.items)
        return f"#### {self.title}\n\n{body}"

    def __str__(self) -> str:
        return self.title + "\n" + "\n".join(f"- {name}: {text}" for name, text in self.items)

    __repr__ = __str__


def what_you_saw(title: str = "What you saw",
                 **runs: Result | str | Iterable[str]) -> Saw:
    """One bullet per run, each generated from its checker :class:`Result` (its
    :meth:`~deliverylab.checker.Result.summary`) or from text built from counts.

    ``what_you_saw(leader_kill=result, consumer_crash=other, note=f"{n} lost")``:
    keyword names become the bullets' names (underscores read as spaces).
    """
    items = []
    for name, run in runs.items():
        if isinstance(run, Result):
            text = run.summary()
        elif isinstance(run, str):
            text = run
        else:
            text = " ".join(str(part) for part in run)
        items.append((name.replace("_", " "), text))
    return Saw(title, items)


def self_check(answer: Any, expected: Any, what: str, hint: str = "") -> None:
    """An exercise's check: raises ``AssertionError`` with a hint, or prints "Correct"."""
    if answer is None:
        raise AssertionError("set `answer` in the exercise cell first (or run the solution)")
    if answer != expected:
        raise AssertionError(f"answer={answer!r}, but {what} is {expected!r}"
                             + (f". Hint: {hint}" if hint else ""))
    print(f"Correct: {what} is {expected!r}.")


# --- a stream to press buttons during ----------------------------------------------------


def plan(faults: Iterable[str | Mapping[str, Any]], count: int) -> list[tuple[int, str]]:
    """A headless schedule as ``(sent, button)`` pairs.

    ``faults`` is the chapter's papermill parameter: button labels or method names
    (spread evenly over the stream: with two, after 1/3 and 2/3 of ``count``), or dicts
    ``{"fault": name, "sent": n}`` to fire after exactly ``n`` values.
    """
    items = list(faults or ())
    bare = sum(isinstance(item, str) for item in items)
    out: list[tuple[int, str]] = []
    k = 0
    for item in items:
        if isinstance(item, str):
            k += 1
            out.append((max(1, round(count * k / (bare + 1))), item))
        elif isinstance(item, Mapping) and "fault" in item and "sent" in item:
            sent = item["sent"]
            if not isinstance(sent, int) or isinstance(sent, bool) or not 0 <= sent <= count:
                raise bad_value("sent", sent, f"a whole number from 0 to {count}")
            out.append((sent, str(item["fault"])))
        else:
            raise bad_value("fault", item, "a button name, or {'fault': name, 'sent': n}")
    return sorted(out, key=lambda pair: pair[0])


class Stream:
    """A :class:`~deliverylab.workload.ProducerWorkload` run in a background thread.

    Why a thread: a notebook processes button clicks only while no cell is running, so
    a cell that produced in the foreground would make the buttons dead until it ended.
    :meth:`start` returns at once (a progress bar fills as values are sent); press the
    panel's buttons meanwhile; :meth:`wait` (in a later cell) joins it.

    ``faults`` (the papermill schedule, see :func:`plan`) presses the panel's buttons
    from a second thread at the planned counts: ``panel.press(name)``, exactly what a
    click does.
    """

    def __init__(self, workload: ProducerWorkload, count: int, *,
                 panel: FaultPanel | None = None,
                 faults: Iterable[str | Mapping[str, Any]] = (), start_seq: int = 0,
                 description: str = "producing") -> None:
        if not isinstance(count, int) or count < 1:
            raise bad_value("count", count, "a whole number >= 1")
        self.workload = workload
        self.count = count
        self.panel = panel
        self.schedule = plan(faults, count)
        if self.schedule and panel is None:
            raise bad_value("panel", panel, "a FaultPanel to press the scheduled faults on")
        for _, name in self.schedule:
            panel.spec(name)  # an unknown button fails now, not halfway through the run
        self.start_seq = start_seq
        self.description = description
        self.sent = 0
        self.report: ProduceReport | None = None
        self.presses: list[Any] = []
        self.errors: list[BaseException] = []
        self._bar: Any = None
        self._threads: list[threading.Thread] = []
        self._done = threading.Event()
        self._progress = threading.Condition()

    def start(self) -> Stream:
        from .widgets import progress

        self._bar = progress(self.count, self.description)
        self._threads = [threading.Thread(target=self._produce, name="stream", daemon=True)]
        if self.schedule:
            self._threads.append(threading.Thread(target=self._press, name="stream-faults",
                                                  daemon=True))
        for thread in self._threads:
            thread.start()
        if self.schedule:
            planned = ", ".join(f"{name!r} after {sent}" for sent, name in self.schedule)
            print(f"scheduled presses: {planned}", flush=True)
        return self

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def _on_sent(self, n: int) -> None:
        with self._progress:
            self.sent = n
            self._progress.notify_all()
        self._bar(n)

    def _produce(self) -> None:
        try:
            self.report = self.workload.run(self.count, start_seq=self.start_seq,
                                            on_sent=self._on_sent)
        except BaseException as exc:  # surfaced by wait()
            self.errors.append(exc)
        finally:
            self._done.set()
            with self._progress:
                self._progress.notify_all()

    def _press(self) -> None:
        for sent, name in self.schedule:
            with self._progress:
                self._progress.wait_for(lambda s=sent: self.sent >= s or self._done.is_set())
            press = self.panel.press(name)
            self.presses.append(press)
            if not press.ok:
                self.errors.append(press.error)
                return

    def wait(self, timeout: float = 300.0) -> ProduceReport:
        """Join the stream (and its scheduled presses); re-raise what went wrong there."""
        end = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, end - time.monotonic()))
        if self.running:
            raise LabError(f"the stream of {self.count} values did not finish within "
                           f"{timeout:.0f} s (sent {self.sent}); is a broker still paused? "
                           "press Heal")
        note = ""
        if self.report is not None:
            r = self.report
            note = f"{r.acked} acked, {r.unknown} unknown, {r.failed} failed"
        self._bar.close(note)
        for press in self.presses:
            print(press.line(), flush=True)
        if self.errors:
            raise self.errors[0]
        return self.report


# --- at-most-once by hand: pause the followers, kill the leader ------------------------


@dataclass
class Did:
    """What a composite button did (the panel shows ``did``)."""

    did: str
    records: list[Any] = field(default_factory=list)


class LeaderFaults:
    """Buttons for losing acknowledged writes by hand, on ``topic``/``partition``.

    ``acks=1`` loses exactly the writes the leader acknowledged and no follower copied.
    Followers copy within milliseconds, so a kill alone rarely catches any; pausing the
    followers first (they stay in the ISR for ``replica.lag.time.max.ms``) makes every
    write acknowledged in between a write only the leader has. Each step goes through
    the :class:`~deliverylab.nemesis.Nemesis`, so it is recorded like any fault.

    The leader is remembered when the followers are paused: with two brokers frozen,
    asking the cluster "who leads?" may wait on a paused broker.
    """

    def __init__(self, nemesis: Nemesis, topic: str, partition: int = 0) -> None:
        self.nemesis = nemesis
        self.cluster = nemesis.cluster
        self.topic = topic
        self.partition = partition
        self.leader: int | None = None
        self.paused_at: float | None = None
        #: (followers paused, leader killed) times: while both held, the leader alone
        #: acknowledged writes.
        self.windows: list[tuple[float, float]] = []

    def pause_followers(self) -> Did:
        leader = wait_leader(self.cluster, self.topic, self.partition, timeout=10)
        meta = partition_meta(self.cluster, self.topic, self.partition)
        followers = [n for n in (meta.replicas if meta else []) if n != leader]
        if not followers:
            raise LabError(f"{self.topic}/{self.partition} has no follower to pause: "
                           "this needs a replicated topic on 3 brokers")
        records = [self.nemesis.pause_broker(n) for n in followers]
        self.leader = leader
        self.paused_at = records[-1].time
        return Did(f"paused brokers {followers} (followers of {self.topic}/{self.partition});"
                   f" broker {leader} now acknowledges writes nobody copies", records)

    def kill_leader(self) -> FaultRecord:
        node = self.leader
        if node is not None and self.cluster.status().get(node) == "up":
            record = self.nemesis.kill_broker(node)
        else:
            record = self.nemesis.kill_leader(self.topic, self.partition)
        if self.paused_at is not None:
            self.windows.append((self.paused_at, record.time))
            self.paused_at = None
        return record

    def heal(self) -> FaultRecord:
        """Heal, then wait until the partition is whole again (every replica in sync):
        a client asking right after a restart may meet a broker not yet back."""
        record = self.nemesis.heal()
        self.leader = None
        self.paused_at = None
        wait_whole(self.cluster, [self.topic])
        return record

    def exposed(self, history: History | Iterable[Any]) -> list[str]:
        """Values acknowledged while the followers were paused and the leader not yet
        killed: the writes only the doomed leader had."""
        ops = list(history)
        return [v for start, end in self.windows
                for v in acked_between(ops, start, end, self.topic)]

    def specs(self) -> list[FaultSpec]:
        from .widgets import FaultSpec

        return [
            FaultSpec("Pause followers", self.pause_followers, style="warning",
                      help="SIGSTOP the brokers that copy partition 0: the leader alone "
                           "acknowledges"),
            FaultSpec("Kill leader", self.kill_leader, style="danger",
                      help="SIGKILL the broker that leads partition 0 (no flush)"),
            FaultSpec("Heal", self.heal, style="success",
                      help="resume paused brokers, restart dead ones, heal the proxies"),
        ]


# --- a consumer stalled past max.poll.interval.ms ---------------------------------------


@dataclass
class Takeover:
    """Evidence of one stall: who processed what, and whose commit was refused."""

    stalled: PipelineReport
    successor: PipelineReport
    stall: dict[str, Any]
    max_poll_seconds: float
    redone: list[str]
    commit_errors: list[str]

    @property
    def rejected_commits(self) -> int:
        return self.stalled.rejected_commits

    def __str__(self) -> str:
        return (f"{self.stalled.process} processed {self.stalled.processed} values, then "
                f"stalled {self.stall['end'] - self.stall['time']:.1f} s (max.poll.interval "
                f"{self.max_poll_seconds:g} s); {self.successor.process} took over and "
                f"processed {self.successor.processed}; {len(self.redone)} values were "
                f"processed by both; {self.rejected_commits} late commit(s) of "
                f"{self.stalled.process} rejected ({', '.join(self.commit_errors) or '-'})")


def stall_takeover(cluster: Any, source: str, sink: str, mode: DeliveryMode | str,
                   history: History, group: str, stall_after: int,
                   stall_seconds: float | None = None, timeout: float = 120.0) -> Takeover:
    """Stall one processing instance past ``max.poll.interval.ms``; another takes over.

    Instance A (``pipeline-A``) runs in a thread and, at the batch holding its
    ``stall_after``-th value, has written that batch to ``sink`` and then stalls for
    ``stall_seconds`` before committing (a long GC pause, a slow call). Its consumer
    stops polling, so after ``max.poll.interval.ms`` the client leaves the group. Once
    A is stalled, instance B (``pipeline-B``) joins the same ``group``; it gets every
    partition as soon as A is gone and starts from the last *committed* offsets, so it
    processes A's uncommitted batch again. When A wakes up, its commit is refused: the
    partitions are no longer its own.
    """
    mode = get_mode(mode)
    if mode.commit != "after":
        raise bad_value("mode", mode.name, "a mode that commits after processing "
                        "(AT_LEAST_ONCE or IDEMPOTENT)")
    max_poll = int(mode.consumer.get("max.poll.interval.ms", 300000)) / 1000
    stall_seconds = max_poll + 4 if stall_seconds is None else stall_seconds
    if stall_seconds <= max_poll:
        raise bad_value("stall_seconds", stall_seconds,
                        f"more than max.poll.interval.ms ({max_poll:g} s), or no one notices")
    a = Pipeline(cluster, source, sink, mode, history, group=group, process="pipeline-A")
    b = Pipeline(cluster, source, sink, mode, history, group=group, process="pipeline-B")
    errors: list[BaseException] = []

    def run_a() -> None:
        try:
            a.run(expected=stall_after, stall_after=stall_after, stall_seconds=stall_seconds,
                  idle_timeout=30)
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    thread = threading.Thread(target=run_a, name="pipeline-A", daemon=True)
    thread.start()
    end = time.monotonic() + timeout
    while a.report.processed < stall_after and thread.is_alive():
        if time.monotonic() > end:
            raise LabError(f"pipeline-A processed only {a.report.processed} of "
                           f"{stall_after} values within {timeout:.0f} s")
        time.sleep(0.05)
    if errors:
        raise errors[0]
    if a.report.processed < stall_after:
        raise LabError(f"pipeline-A ended after {a.report.processed} values, before its "
                       f"stall at {stall_after}: does {source!r} hold enough values?")
    t_stall = history.now()
    # B is done when it has processed what the group has not committed yet (its own
    # "caught up" test waits for partitions it never reads from, so tell it the count).
    b.run(expected=remaining(cluster, group, source),
          idle_timeout=stall_seconds + max_poll + 15)
    thread.join(max(1.0, end - time.monotonic()) + stall_seconds)
    if thread.is_alive():
        raise LabError("pipeline-A did not wake up from its stall")
    if errors:
        raise errors[0]
    commit_ops = [op for op in history if op.process == "pipeline-A" and op.kind == "commit"
                  and op.outcome == "fail"]
    t_wake = commit_ops[-1].time if commit_ops else history.now()
    redone = sorted(set(a.report.values) & set(b.report.values), key=_value_order)
    return Takeover(a.report, b.report,
                    {"name": "pipeline-A stalls", "time": t_stall, "end": t_wake},
                    max_poll, redone, sorted({op.error or "?" for op in commit_ops}))


def _value_order(value: str) -> tuple[str, int]:
    producer, _, seq = value.rpartition(":")
    return producer, int(seq)


def committed_offsets(cluster: Any, group: str, topic: str) -> dict[int, int]:
    """The offsets ``group`` has committed on ``topic``, per partition (-1: none yet).

    Asked with a consumer that carries the group's id but never subscribes, so it does
    not join the group (and cannot disturb a rebalance under way).
    """
    consumer = Consumer(config(_bootstrap(cluster), **{"group.id": group,
                                                       "enable.auto.commit": False}))
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        asked = [TopicPartition(topic, p) for p in sorted(meta.partitions)]
        return {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=10)}
    finally:
        consumer.close()


def remaining(cluster: Any, group: str, topic: str,
              isolation: str = "read_committed") -> int:
    """How many records of ``topic`` lie at or past ``group``'s committed offsets: what
    a new instance of the group has left to process. Counted from the read-back, never
    from offset arithmetic (transaction markers take offsets too)."""
    done = committed_offsets(cluster, group, topic)
    return sum(1 for r in read_back(cluster, [topic], isolation)
               if r.offset >= max(0, done.get(r.partition, -1)))


def peek(cluster: Any, topic: str, isolation: str, seconds: float = 3.0) -> list[str]:
    """Everything a brand-new consumer at ``isolation`` gets from ``topic`` within
    ``seconds`` (from the beginning): what a reader sees *right now*. A
    read_committed reader stops at the last stable offset and waits there."""
    if isolation not in ("read_committed", "read_uncommitted"):
        raise bad_value("isolation", isolation, "'read_committed' or 'read_uncommitted'")
    consumer = Consumer(config(_bootstrap(cluster), **{
        "group.id": f"peek-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": isolation}))
    got: list[str] = []
    try:
        meta = consumer.list_topics(topic, timeout=10).topics[topic]
        consumer.assign([TopicPartition(topic, p, 0) for p in sorted(meta.partitions)])
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            msg = consumer.poll(max(0.0, min(0.2, end - time.monotonic())))
            if msg is None or msg.error():
                continue
            try:
                got.append(str(V.decode(msg.value())))
            except ValueError:
                continue
    finally:
        consumer.close()
    return got


def acked_between(history: History | Iterable[Any], start: float, end: float,
                  topic: str | None = None) -> list[str]:
    """Values whose send was acknowledged (``ok``) between two times of the History."""
    return [v for op in history if op.kind == "send" and op.outcome == "ok"
            and start <= op.time <= end and (topic is None or op.topic == topic)
            for v in op.values]


def client_faults(history: History | Iterable[Any]) -> list[dict[str, Any]]:
    """Client-side events of a History as fault marks for :func:`plots.timeline`:
    crashes (a commit recorded as "crashed before commit") and refused transaction
    commits (a fenced zombie), each with its time and a short name."""
    marks = []
    for op in history:
        if op.kind == "commit" and op.detail == "crashed before commit":
            marks.append({"time": op.time, "name": f"{op.process} crashes"})
        elif op.kind == "commit_txn" and op.outcome == "fail":
            marks.append({"time": op.time,
                          "name": f"{op.process} commit refused ({op.error})"})
    return marks


def _bootstrap(target: Any) -> str:
    return target if isinstance(target, str) else target.bootstrap_servers


# --- the log as the broker stored it ------------------------------------------------------

_PAIR = re.compile(r"(\w+): (\S+)")


def dump_segments(cluster: Any, topic: str, partition: int = 0,
                  node: int | None = None, timeout: float = 120.0) -> str:
    """Raw output of Kafka's ``kafka.tools.DumpLogSegments --print-data-log`` for one
    partition's segment files on ``node`` (default: its leader), as the broker wrote them.

    Reads the files a local broker keeps in its data directory, read-only, with the
    broker's own jars: the same tool as ``bin/kafka-dump-log.sh`` in a Kafka download.
    """
    backend = getattr(cluster, "backend", None)
    if backend is None or getattr(backend, "name", "") != "local" or not hasattr(
            backend, "node_dir"):
        raise LabError("reading log segments needs the local backend (the brokers' data "
                       "directories on this machine); with docker, run "
                       "`kafka-dump-log.sh --files ... --print-data-log` inside the container")
    if node is None:
        node = wait_leader(cluster, topic, partition, timeout=30)
    folder = backend.node_dir(node) / "data" / f"{topic}-{partition}"
    files = sorted(folder.glob("*.log"))
    if not files:
        raise bad_value("topic/partition", f"{topic}/{partition}",
                        f"a partition with a replica on broker {node} (no segment in {folder})")
    cmd = [find_java(), "-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
           "-cp", f"{jars.kafka_libs()}/*", f"-Dlog4j2.configurationFile={jars.log4j_config()}",
           "kafka.tools.DumpLogSegments", "--print-data-log",
           "--files", ",".join(str(f) for f in files)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise LabError(f"DumpLogSegments failed (exit code {done.returncode}): "
                       f"{done.stderr.strip()[-500:]}")
    return done.stdout


def parse_segments(text: str) -> list[dict[str, Any]]:
    """One row per record of ``DumpLogSegments --print-data-log`` output, with its batch.

    Columns: offset, batch (base offset), producer_id, producer_epoch, sequence,
    transactional, control, marker (COMMIT / ABORT for a control record), create_time,
    crc (of the batch: a resent batch has the same), value (``producer:seq`` for a lab
    value).
    """
    rows: list[dict[str, Any]] = []
    batch: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("baseOffset:"):
            batch = dict(_PAIR.findall(line))
        elif line.startswith("| offset:"):
            head, _, payload = line.partition(" payload: ")
            rec = dict(_PAIR.findall(head))
            marker = rec.get("endTxnMarker")
            value = None
            if payload:
                try:
                    value = str(V.decode(payload))
                except ValueError:
                    value = None
            rows.append({
                "offset": int(rec["offset"]),
                "batch": int(batch.get("baseOffset", rec["offset"])),
                "producer_id": int(batch.get("producerId", -1)),
                "producer_epoch": int(batch.get("producerEpoch", -1)),
                "sequence": int(rec.get("sequence", -1)),
                "transactional": batch.get("isTransactional") == "true",
                "control": batch.get("isControl") == "true",
                "marker": marker,
                "create_time": int(rec.get("CreateTime", -1)),
                "crc": int(batch.get("crc", 0)),
                "value": value,
            })
    return rows


def log_batches(cluster: Any, topic: str, partition: int = 0,
                node: int | None = None) -> pd.DataFrame:
    """The partition's records as stored on disk, as a DataFrame (see
    :func:`parse_segments`): producer id, epoch and sequence number of every record, and
    the transaction markers, which no consumer ever returns."""
    import pandas as pd

    rows = parse_segments(dump_segments(cluster, topic, partition, node))
    columns = ["offset", "batch", "producer_id", "producer_epoch", "sequence",
               "transactional", "control", "marker", "create_time", "crc", "value"]
    return pd.DataFrame(rows, columns=columns)


# --- transactions, one step at a time -----------------------------------------------------


class Fenced(LabError):
    """A newer producer with the same ``transactional.id`` has fenced this one."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


_FENCING = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)


class TxnProducer:
    """A transactional producer you drive by hand: :meth:`begin`, :meth:`write`,
    :meth:`commit`, :meth:`abort`. Every op is recorded in ``history`` with the
    conventions of :class:`~deliverylab.workload.ProducerWorkload` (one send per value,
    a ``txn`` id per transaction), so the checker and the Inspector judge it alike.

    Each method returns one line saying what happened (the fault panel shows it).
    ``transaction_timeout_ms`` (default 2 minutes, long enough to look at an open
    transaction) is how long the coordinator lets a transaction stay open before it
    aborts it on its own. A second instance with the same ``transactional_id`` fences
    this one: its next write or commit raises :class:`Fenced`.
    """

    def __init__(self, target: Any, topic: str, history: History,
                 transactional_id: str | None = None, process: str = "txn-producer",
                 mode: DeliveryMode = TRANSACTIONAL, timeout: float = 30.0,
                 transaction_timeout_ms: int = 120_000) -> None:
        self.bootstrap = target if isinstance(target, str) else target.bootstrap_servers
        self.topic = topic
        self.history = history
        self.process = process
        self.transactional_id = transactional_id or f"{process}-{uuid.uuid4().hex[:6]}"
        self.timeout = timeout
        self.producer = Producer(config(self.bootstrap, **{
            **mode.producer, "transactional.id": self.transactional_id,
            "transaction.timeout.ms": int(transaction_timeout_ms)}))
        meta = self.producer.list_topics(topic, timeout=timeout).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise bad_value("topic", topic, "an existing topic")
        self.partitions = len(meta.partitions)
        self.seq = 0
        self.txn: str | None = None
        self.count = 0
        self.fenced = False
        self.last: dict[str, int] = {}
        try:
            self.producer.init_transactions(timeout)
        except KafkaException as exc:
            self.history.record(process, "init_txn", "fail", error=exc)
            raise
        self.history.record(process, "init_txn", "ok", detail=self.transactional_id)

    def __repr__(self) -> str:
        state = "fenced" if self.fenced else (f"in {self.txn}" if self.txn else "idle")
        return f"<TxnProducer {self.process} ({self.transactional_id}) {state}>"

    def _fence(self, exc: KafkaException, what: str) -> Fenced:
        err = exc.args[0]
        self.fenced = True
        return Fenced(f"{self.process} was fenced: {what} refused with {err.name()} -- a "
                      f"newer producer uses transactional.id {self.transactional_id!r}",
                      err.name())

    @staticmethod
    def _is_fencing(exc: KafkaException) -> bool:
        err = exc.args[0]
        return err.code() in _FENCING or err.fatal()

    def begin(self) -> str:
        if self.txn is not None:
            return f"{self.txn} is already open: write, then commit or abort it"
        self.count += 1
        txn = f"{self.process}/txn-{self.count}"
        try:
            self.producer.begin_transaction()
        except KafkaException as exc:
            raise (self._fence(exc, "begin") if self._is_fencing(exc) else exc) from exc
        self.txn = txn
        self.history.record(self.process, "begin_txn", "ok", txn=txn)
        return f"began {txn}"

    def write(self, count: int | None = None) -> str:
        """Write ``count`` values (default: one per partition), round-robin over the
        partitions, and wait until the broker has them (uncommitted, if in a transaction)."""
        if self.txn is None:
            self.begin()
        n = self.partitions if count is None else count
        txn = self.txn
        results: list[tuple[Any, Any]] = []
        pending: dict[str, V.ValueId] = {}
        for _ in range(n):
            vid = V.ValueId(self.process, self.seq)
            partition = self.seq % self.partitions
            self.seq += 1
            pending[str(vid)] = vid

            def done(err, msg, vid=vid) -> None:
                ok = err is None
                pending.pop(str(vid), None)
                results.append((err, msg))
                self.history.record(self.process, "send", outcome_of(err), [vid],
                                    topic=self.topic,
                                    partition=msg.partition() if ok else None,
                                    offset=msg.offset() if ok and msg.offset() >= 0 else None,
                                    txn=txn, error=err)
            try:
                self.producer.produce(self.topic, V.encode(vid.producer, vid.seq),
                                      key=V.key(vid.producer), partition=partition,
                                      on_delivery=done)
            except KafkaException as exc:
                pending.pop(str(vid), None)
                self.history.record(self.process, "send", "fail", [vid], topic=self.topic,
                                    txn=txn, error=exc)
                raise (self._fence(exc, "write") if self._is_fencing(exc) else exc) from exc
        try:
            self.producer.flush(self.timeout)
        except (KafkaException, SystemError) as exc:
            # A fatal error (fencing) is raised from inside flush(), even in the middle
            # of delivery callbacks (Python then wraps it in a SystemError).
            cause = _kafka_cause(exc)
            for vid in pending.values():  # no delivery report: maybe written
                self.history.record(self.process, "send", "info", [vid], topic=self.topic,
                                    txn=txn, error=cause or exc)
            if cause is not None and self._is_fencing(cause):
                raise self._fence(cause, "write") from exc
            raise
        bad = [err for err, _ in results if err is not None]
        if bad:
            if any(e.code() in _FENCING or e.fatal() for e in bad):
                raise self._fence(KafkaException(bad[0]), "write")
            raise LabError(f"{len(bad)} of {n} writes failed: {bad[0].name()}")
        where = sorted((m.partition(), m.offset()) for _, m in results)
        for p, o in where:
            self.last[p] = o
        spots = ", ".join(f"p{p}@{o}" for p, o in where)
        return f"wrote {n} value(s) in {txn} at {spots} (not visible to read_committed yet)"

    def commit(self) -> str:
        if self.txn is None:
            return "no open transaction to commit"
        txn, self.txn = self.txn, None
        try:
            self.producer.commit_transaction(self.timeout)
        except KafkaException as exc:
            self.history.record(self.process, "commit_txn", "fail", txn=txn, error=exc)
            if self._is_fencing(exc):
                raise self._fence(exc, "commit") from exc
            raise
        self.history.record(self.process, "commit_txn", "ok", txn=txn)
        return f"committed {txn}: its values are visible to read_committed readers"

    def abort(self) -> str:
        if self.txn is None:
            return "no open transaction to abort"
        txn, self.txn = self.txn, None
        try:
            self.producer.abort_transaction(self.timeout)
        except KafkaException as exc:
            self.history.record(self.process, "abort_txn", "fail", txn=txn, error=exc)
            if self._is_fencing(exc):
                raise self._fence(exc, "abort") from exc
            raise
        self.history.record(self.process, "abort_txn", "ok", txn=txn)
        return f"aborted {txn}: its values stay in the log, hidden from read_committed"

    def close(self) -> None:
        """Let go of the client (an open transaction is aborted by the coordinator after
        ``transaction.timeout.ms``, or at once by the next producer with this id)."""
        self.producer.flush(0)


class TxnConsole:
    """Buttons for a transaction by hand: Begin, Write, Commit, Abort, Start a twin.

    Each press returns one line; a write also says where the last stable offset (LSO)
    and the high watermark now are, so a student watches an open transaction hold
    read_committed readers back. "Start a twin" starts a second producer with the same
    ``transactional.id``: the first is fenced, and from then on the buttons drive the
    twin (the fenced one can only fail).
    """

    def __init__(self, cluster: Any, topic: str, history: History,
                 process: str = "you", **producer_args: Any) -> None:
        self.cluster = cluster
        self.topic = topic
        self.history = history
        self.producer_args = producer_args
        self.current = TxnProducer(cluster, topic, history, process=process, **producer_args)
        self.fenced: list[TxnProducer] = []

    def bounds(self) -> list[dict[str, int]]:
        """Per partition: high watermark and last stable offset (ListOffsets)."""
        from confluent_kafka import IsolationLevel
        from confluent_kafka.admin import OffsetSpec

        admin = self.cluster.admin()
        parts = [TopicPartition(self.topic, p) for p in range(self.current.partitions)]

        def ask(isolation: Any) -> dict[int, int]:
            futures = admin.list_offsets({tp: OffsetSpec.latest() for tp in parts},
                                         isolation_level=isolation, request_timeout=10)
            return {tp.partition: f.result().offset for tp, f in futures.items()}

        high, stable = ask(IsolationLevel.READ_UNCOMMITTED), ask(IsolationLevel.READ_COMMITTED)
        return [{"partition": p, "high_watermark": high[p], "last_stable_offset": stable[p]}
                for p in sorted(high)]

    def settled_bounds(self, timeout: float = 10.0) -> list[dict[str, int]]:
        """:meth:`bounds` once the markers of the last commit or abort are written.

        ``commit_transaction()`` returns when the coordinator has decided; the markers
        reach the partitions a moment later, and until then the offsets are mid-change.
        """
        end = time.monotonic() + timeout
        while True:
            bounds = self.bounds()
            if all(b["last_stable_offset"] == b["high_watermark"] for b in bounds) or (
                    time.monotonic() > end):
                return bounds
            time.sleep(0.1)

    def offsets_text(self, settle: bool = False) -> str:
        parts = []
        for b in (self.settled_bounds() if settle else self.bounds()):
            held = " (held back)" if b["last_stable_offset"] < b["high_watermark"] else ""
            parts.append(f"p{b['partition']}: LSO {b['last_stable_offset']} / "
                         f"HW {b['high_watermark']}{held}")
        return "; ".join(parts)

    def begin(self) -> str:
        return self.current.begin()

    def write(self) -> str:
        return f"{self.current.write()} -- {self.offsets_text()}"

    def commit(self) -> str:
        return f"{self.current.commit()} -- {self.offsets_text(settle=True)}"

    def abort(self) -> str:
        return f"{self.current.abort()} -- {self.offsets_text(settle=True)}"

    def start_twin(self) -> str:
        old = self.current
        twin = TxnProducer(self.cluster, self.topic, self.history,
                           transactional_id=old.transactional_id,
                           process=f"{old.process}-twin{len(self.fenced) + 1}",
                           **self.producer_args)
        self.fenced.append(old)
        self.current = twin
        return (f"started {twin.process} with transactional.id {old.transactional_id!r}: "
                f"{old.process} is fenced (its open transaction, if any, was aborted); "
                "press Zombie writes to let it try to write")

    def old_write(self) -> str:
        """Let the most recently fenced producer try to write: it must fail."""
        if not self.fenced:
            return "no fenced producer yet: press Start a twin first"
        return self.fenced[-1].write()

    def specs(self) -> list[FaultSpec]:
        from .widgets import FaultSpec

        return [
            FaultSpec("Begin", self.begin, style="info", help="begin_transaction()"),
            FaultSpec("Write", self.write, style="primary",
                      help="write one value to each partition, inside the transaction"),
            FaultSpec("Commit", self.commit, style="success", help="commit_transaction()"),
            FaultSpec("Abort", self.abort, style="danger", help="abort_transaction()"),
            FaultSpec("Start a twin", self.start_twin, style="warning",
                      help="a second producer with the same transactional.id fences this one"),
            FaultSpec("Zombie writes", self.old_write, style="warning",
                      help="the fenced producer tries to write again"),
        ]


def zombie_write(producer: Producer, topic: str, history: History,
                 process: str = "zombie", timeout: float = 30.0) -> str | None:
    """Let a producer that may have been fenced write one value and commit.

    For a crashed pipeline's producer (``Pipeline.zombie``): its transaction was left
    open when it crashed. Returns ``None`` if the write *and* commit succeeded (the
    zombie was not fenced), else the error's name, recorded in ``history``.
    """
    txn = f"{process}/late-write"
    vid = V.ValueId(process, 0)
    errors: list[Any] = []

    def done(err, msg) -> None:
        if err is not None:
            errors.append(err)
        history.record(process, "send", outcome_of(err), [vid], topic=topic,
                       partition=msg.partition() if err is None else None,
                       offset=msg.offset() if err is None else None, txn=txn, error=err)
    try:
        producer.produce(topic, V.encode(vid.producer, vid.seq), key=V.key(process),
                         on_delivery=done)
        producer.flush(timeout)
        producer.commit_transaction(timeout)
    except (KafkaException, SystemError) as exc:
        # confluent-kafka may raise a fatal error (fencing) from inside flush() while a
        # delivery callback runs, which Python then reports as a SystemError around it.
        cause = _kafka_cause(exc)
        history.record(process, "commit_txn", "fail", txn=txn, error=cause or exc)
        return cause.args[0].name() if cause is not None else type(exc).__name__
    if errors:
        history.record(process, "commit_txn", "fail", txn=txn, error=errors[0])
        return errors[0].name()
    history.record(process, "commit_txn", "ok", txn=txn)
    return None


def _kafka_cause(exc: BaseException | None) -> KafkaException | None:
    """The KafkaException in an exception's chain (itself, its cause or context)."""
    seen = 0
    while exc is not None and seen < 5:
        if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
            return exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return None


def wait_whole(cluster: Any, topics: Iterable[str], timeout: float = 120.0,
               steady: float = 4.0) -> None:
    """Wait until every broker is registered and every partition of ``topics`` has a
    leader and all its replicas in sync -- and has stayed so for ``steady`` seconds.

    Why steady: right after a broker is killed and restarted, the metadata may still
    show the old registration (the controller fences a dead broker only after
    ``broker.session.timeout.ms``, 3 s here); "whole" must outlast that.
    """
    nodes = set(cluster.nodes)
    topics = list(topics)
    since: list[float] = []

    def whole_now() -> bool:
        try:
            md = cluster.admin().list_topics(timeout=5)
        except KafkaException:
            return False
        if set(md.brokers) != nodes:
            return False
        for name in topics:
            meta = md.topics.get(name)
            if meta is None or meta.error is not None:
                return False
            for p in meta.partitions.values():
                if p.leader < 0 or sorted(p.isrs) != sorted(p.replicas):
                    return False
        return True

    def whole() -> bool:
        if not whole_now():
            since.clear()
            return False
        if not since:
            since.append(time.monotonic())
        return time.monotonic() - since[0] >= steady

    wait_for(whole, f"every broker up and every replica of {', '.join(topics)} in sync "
             f"for {steady:g} s", timeout)


def final_read(cluster: Any, topics: Iterable[str], isolation: str = "read_committed",
               attempts: int = 3) -> list[Any]:
    """The final drain of a run: wait until the cluster is whole, then read the topics
    back (:func:`~deliverylab.workload.read_back`), retrying a client error caused by a
    broker that was just restarted."""
    topics = list(topics)
    wait_whole(cluster, topics)
    for attempt in range(1, attempts + 1):
        try:
            return read_back(cluster, topics, isolation)
        except KafkaException:
            if attempt == attempts:
                raise
            time.sleep(2.0)
            wait_whole(cluster, topics)
    raise AssertionError("unreachable")


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``predicate`` until it holds; raise naming ``what`` after ``timeout``."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise LabError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


__all__ = [
    "Chapter",
    "Check",
    "Did",
    "Fenced",
    "LeaderFaults",
    "Saw",
    "Stream",
    "Takeover",
    "TxnConsole",
    "TxnProducer",
    "acked_between",
    "client_faults",
    "committed_offsets",
    "peek",
    "remaining",
    "dump_segments",
    "final_read",
    "log_batches",
    "parse_segments",
    "plan",
    "self_check",
    "stall_takeover",
    "wait_for",
    "wait_whole",
    "what_you_saw",
    "zombie_write",
]
