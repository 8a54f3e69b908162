"""A Connect worker killed mid-stream, with an offset flush interval the student chooses.

Chapter 07's first kill comes after every line is in Kafka and before the lab's
10-minute offset flush: the committed position is always the start of the file, and the
prediction is always "every line". Here the student picks ``offset.flush.interval.ms``
and the moment of the kill, so the committed position at the kill is wherever the last
flush left it, and the duplicate count is a computation:

    duplicates = lines already in Kafka at the kill that end past the committed position

Where the committed position *at the kill* comes from matters. Asking Connect's REST API
just before the kill races the next flush; asking after it races the successor's first
flush. So we read Connect's own offsets topic (``<group>-offsets``) after the kill and
take the connector's last record written *before* the kill (record timestamps are the
worker's clock, the same host's): that is exactly the position the successor starts at.

With exactly-once support (:func:`kill_in_open_transaction`, the same kill on a task with
``transaction.boundary=interval``) the position is committed *in* the task's transaction,
with the records: a kill inside an open transaction leaves the records after the
committed position in the log, to be aborted, and the successor writes them again:

    aborted copies = read_uncommitted duplicates = lines past the committed position
    read_committed duplicates = 0
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from ...clients import bootstrap_of
from ...errors import BadValue, LabError, bad_value
from ...readers import bounds, partitions, read_records
from .sources import Runs, SourceFile, SourceRun, after


@dataclass
class OffsetRecord:
    """One record of Connect's offsets topic, for the file connector."""

    connector: str
    position: int | None  # None: a tombstone (offsets reset)
    timestamp_ms: int


def parse_offset_record(key: bytes | None, value: bytes | None,
                        timestamp_ms: int) -> OffsetRecord | None:
    """A file connector's offset record (key ``["<connector>", {partition}]``, value
    ``{"position": N}``), or None for any other record."""
    try:
        k = json.loads(key) if key else None
    except ValueError:
        return None
    if not (isinstance(k, list) and len(k) == 2 and isinstance(k[0], str)):
        return None
    position = None
    if value:
        try:
            position = json.loads(value).get("position")
        except (ValueError, AttributeError):
            return None
    return OffsetRecord(k[0], None if position is None else int(position), timestamp_ms)


def committed_before(records: list[OffsetRecord], connector: str,
                     before_ms: int) -> int | None:
    """The last position ``connector`` committed before ``before_ms`` (None: none)."""
    mine = [r for r in records if r.connector == connector and r.timestamp_ms < before_ms]
    return mine[-1].position if mine else None


def offset_records(bootstrap: str, topic: str, timeout: float = 30.0) -> list[OffsetRecord]:
    """Every file-connector record of Connect's offsets topic, in order: its keys and
    timestamps from :func:`~deliverylab.readers.read_records`, the one read-back."""
    try:
        partitions(bootstrap, topic)
    except BadValue:
        raise LabError(f"Connect's offsets topic {topic!r} does not exist") from None
    out = (parse_offset_record(r.key, r.value, r.timestamp_ms)
           for r in read_records(bootstrap, [topic], "read_committed", timeout))
    return [rec for rec in out if rec is not None]


_COMMITTING = re.compile(r"^\[([\d:,]+)\].*WorkerSourceTask\{id=(.+?)-(\d+)\} Committing "
                         r"offsets for (\d+) acknowledged messages")


def commit_lines(log_text: str, connector: str) -> list[tuple[str, int]]:
    """The offset flushes a worker logged for ``connector``'s tasks: (time of day, how
    many acknowledged records the flush covered). Connect logs each flush at INFO,
    ``Committing offsets for N acknowledged messages``, the empty ones too (N = 0)."""
    return [(m.group(1), int(m.group(4))) for m in map(_COMMITTING.match,
                                                       log_text.splitlines())
            if m is not None and m.group(2) == connector]


@dataclass
class WindowRun:
    """What the mid-stream kill saw; ``result`` is the run's read-back and counts."""

    flush_ms: int
    kill_after: int
    position_at_kill: int | None
    line_ends: list[int] = field(repr=False)
    predicted: int = 0
    found: int = 0
    result: SourceRun | None = field(default=None, repr=False)
    flushes: list[tuple[str, int]] = field(default_factory=list)  # the killed worker's

    def margins(self) -> dict[str, int]:
        """What the lesson rests on, for the results file (``bench/loaded.py`` prints it):
        the count holds however the flushes fell ("found == predicted" also with none),
        but a window *between* flushes needs one that committed records before the kill
        and lines past it; a loaded worker that flushed late shrinks both."""
        return {"window: offset flushes with records before the kill":
                sum(1 for _, acked in self.flushes if acked > 0),
                "window: lines past the committed position at the kill": self.predicted}

    def __str__(self) -> str:
        return (f"offset.flush.interval.ms={self.flush_ms}: killed after {self.kill_after} "
                f"lines in Kafka; committed position then {self.position_at_kill}; predicted "
                f"{self.predicted} duplicates, found {self.found}")


def stream(source: SourceFile, count: int, chunk: int = 10, pace_s: float = 0.5) -> None:
    """Append ``count`` lines in chunks of ``chunk``, one chunk every ``pace_s``: a log
    that grows while the task reads it, so that commits land mid-stream."""
    written = 0
    while written < count:
        n = min(chunk, count - written)
        source.append(n)
        written += n
        time.sleep(pace_s)


def kill_mid_stream(runs: Runs, connect: Any, lines: int, kill_after: int,
                    chunk: int = 10, pace_s: float = 0.5) -> WindowRun:
    """Append ``kill_after`` lines in chunks of ``chunk`` every ``pace_s`` (so flushes
    land mid-stream), wait until they are in Kafka, SIGKILL the task's worker, read the
    committed position at the kill, append the rest; the other worker finishes."""
    if not (isinstance(kill_after, int) and isinstance(lines, int) and 1 <= kill_after < lines):
        raise bad_value("kill_after", kill_after, f"a whole number from 1 to {lines - 1} "
                        "(fewer than the lines written)")
    if connect.exactly_once or len(connect.workers) < 2:
        raise bad_value("connect", connect, "a Connect cluster without exactly-once support "
                        "and with 2 or more workers (one takes over)")
    name, topic, source = runs._begin(connect, "plain-window")
    result = SourceRun("plain-window", name, topic)
    stream(source, kill_after, chunk, pace_s)
    runs.wait_count(topic, "read_uncommitted", kill_after, 60)
    owner = connect.task_worker(name)
    runs.nemesis.apply("kill_worker", worker=owner, connector=name)
    # The clock is read once the worker is dead, not before the kill: a flush it made
    # while the kill was on its way (a loaded host: the REST lookup, the signals) is one
    # the successor resumes from, and a cut before it predicted copies that never came (a
    # cold run, 2026-11-29: 10 predicted, 0 found). The offsets are read once another
    # worker holds the task, so a flush still in flight at the kill has landed; the
    # successor's own flushes all come after ``dead_ms``.
    dead_ms = int(time.time() * 1000)
    ends = list(source.ends)
    taker = connect.wait_task(name, exclude=(owner,), timeout=90)
    bootstrap = bootstrap_of(runs.cluster, direct=True)
    records = offset_records(bootstrap, f"{connect.group}-offsets")
    position = committed_before(records, name, dead_ms + 1)
    predicted = after(ends, position)
    result.observed.update(position_before=position, predicted=predicted, owner=owner,
                           taken_over_by=taker)
    source.append(lines - kill_after)
    # the lines and the predicted copies; a wrong prediction raises, naming the count
    runs.wait_count(topic, "read_uncommitted", lines + predicted, 60)
    runs._finish(connect, name, topic, source, result)
    return WindowRun(connect.offset_flush_ms, kill_after, position, ends, predicted,
                     result.observed["uncommitted_duplicates"], result,
                     commit_lines(connect.log_text(owner), name))


# ------------------------------------------------------------ with exactly-once support
@dataclass(frozen=True)
class OpenPrediction:
    """What a kill inside an open transaction leaves, stated from the committed state.

    The task commits its records and its source position in one transaction, so the
    records after the committed position are exactly the open transaction's: the kill
    leaves them to be aborted, and the successor, starting at that position, writes them
    again, this time committed."""

    aborted: int  # the open transaction's records: the lines past the committed position
    read_uncommitted_duplicates: int  # each aborted copy beside its committed one
    read_committed_duplicates: int  # always 0: aborted records are hidden
    committed_while_down: int  # what read_committed shows until the successor commits


def predict_open_kill(ends: list[int], position: int | None) -> OpenPrediction:
    """The prediction for a kill when every line ending at ``ends`` is in Kafka and the
    task committed up to byte ``position`` (None: nothing yet).

    A position that is not the end of a line is refused: a file connector commits line
    ends only, so another position comes from somewhere else (another connector, a file
    that changed)."""
    if any(b <= a for a, b in pairwise([0, *ends])):
        raise bad_value("ends", ends, "the byte positions after each line, increasing")
    if position not in (None, 0, *ends):
        raise bad_value("position", position, "None or the end of one of the lines "
                        f"({', '.join(map(str, ends[:5]))}{', ...' if len(ends) > 5 else ''})")
    aborted = after(ends, position)
    return OpenPrediction(aborted=aborted, read_uncommitted_duplicates=aborted,
                          read_committed_duplicates=0, committed_while_down=len(ends) - aborted)


@dataclass
class OpenKill:
    """What the kill inside an open transaction saw; ``result`` is the run's read-back."""

    interval_ms: int
    kill_after: int
    tries: int  # freezes until one found a transaction open
    position_at_kill: int | None
    open_records: int  # high watermark - last stable offset of the partition, frozen
    prediction: OpenPrediction
    line_ends: list[int] = field(repr=False)
    committed_while_down: int = 0
    result: SourceRun | None = field(default=None, repr=False)

    @property
    def predicted(self) -> int:
        return self.prediction.aborted

    def __str__(self) -> str:
        return (f"transaction.boundary.interval.ms={self.interval_ms}: killed with "
                f"{len(self.line_ends)} lines in Kafka (freeze {self.tries}); committed "
                f"position then {self.position_at_kill}; open transaction "
                f"{self.open_records} records; predicted {self.predicted} aborted copies")


def kill_in_open_transaction(runs: Runs, connect: Any, lines: int, kill_after: int,
                             interval_ms: int, chunk: int = 10, pace_s: float = 0.5,
                             tries: int = 10, settle_s: float = 0.5) -> OpenKill:
    """:func:`kill_mid_stream` on a task with exactly-once support and
    ``transaction.boundary=interval``: the kill lands inside an open transaction.

    Why a freeze: the task commits whenever ``interval_ms`` has passed, even when no
    new line came (Connect's send loop ends each poll, empty or not, with the boundary
    check), so a kill "after the last line" lands inside an open transaction only part
    of the time. Here the task's worker is frozen (SIGSTOP) once the lines are in Kafka;
    after ``settle_s`` (a commit sent just before the freeze completes on the broker)
    the partition's last stable offset is compared to its high watermark. Below it: a
    transaction holds records, and nothing can change while the worker is frozen --
    the committed position is read (from the other worker) and the frozen worker is
    SIGKILLed. Equal: the task had just committed; it is thawed, ``chunk`` more lines
    are appended and it is frozen again, at most ``tries`` times.
    """
    if not (isinstance(kill_after, int) and isinstance(lines, int) and 1 <= kill_after < lines):
        raise bad_value("kill_after", kill_after, f"a whole number from 1 to {lines - 1} "
                        "(fewer than the lines written)")
    if not connect.exactly_once or len(connect.workers) < 2:
        raise bad_value("connect", connect, "a Connect cluster with exactly-once support "
                        "and 2 or more workers (one takes over)")
    name, topic, source = runs._begin(connect, "eos-open", exactly_once="required",
                                      boundary="interval", interval_ms=interval_ms)
    result = SourceRun("eos-open-txn", name, topic)
    stream(source, kill_after, chunk, pace_s)
    attempt, owner, held = _freeze_inside(runs, connect, name, topic, source, interval_ms,
                                          tries, chunk, pace_s, settle_s)
    position = connect.committed_position(name)  # the other worker answers
    ends = list(source.ends)
    prediction = predict_open_kill(ends, position)  # stated before the kill
    runs.nemesis.apply("kill_worker", worker=owner, connector=name)
    # Until the successor's first commit read_committed shows exactly what was committed.
    down = runs.count(topic, "read_committed")
    result.observed.update(position_before=position, predicted=prediction.aborted,
                           open_records=held, tries=attempt, owner=owner,
                           lines_at_kill=len(ends), committed_while_down=down)
    t0 = time.monotonic()
    result.observed["taken_over_by"] = connect.wait_task(name, exclude=(owner,), timeout=90)
    result.observed["takeover_seconds"] = round(time.monotonic() - t0, 1)
    if len(source.ends) < lines:
        source.append(lines - len(source.ends))
    # every line committed once; short of that raises, naming the count
    runs.wait_count(topic, "read_committed", len(source.ends), interval_ms / 1000 + 60)
    runs._finish(connect, name, topic, source, result, settle=0.5)
    return OpenKill(interval_ms, kill_after, attempt, position, held, prediction, ends,
                    down, result)


def _freeze_inside(runs: Runs, connect: Any, name: str, topic: str, source: SourceFile,
                   interval_ms: int, tries: int, chunk: int, pace_s: float,
                   settle_s: float) -> tuple[int, int, int]:
    """Freeze the task's worker once every line is in Kafka, until a freeze finds a
    transaction open; returns (freezes, the frozen worker, records held open)."""
    for attempt in range(1, tries + 1):
        runs.wait_count(topic, "read_uncommitted", len(source.ends), 60)
        owner = connect.task_worker(name)
        runs.nemesis.apply("pause_worker", worker=owner, connector=name)
        time.sleep(settle_s)
        part = bounds(runs.cluster, topic)[0]
        held = part["high_watermark"] - part["last_stable_offset"]
        if held > 0:
            return attempt, owner, held
        runs.nemesis.apply("resume_worker", worker=owner, connector=name)
        stream(source, chunk, chunk, pace_s)
    raise bad_value("interval_ms", interval_ms, f"a longer interval: the task had committed "
                    f"each of the {tries} times it was frozen (no open transaction); 2000 ms "
                    "or more leaves one open most of the time")
