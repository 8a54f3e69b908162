"""The History: every operation the clients attempted, and how it ended.

Clients only *record*; checkers only *judge* (see ``checker.py``). An operation ends in
one of three outcomes, and the third is the heart of the course:

- ``ok``   -- the client got a positive answer (a send was acknowledged at an offset);
- ``fail`` -- the client knows the operation did *not* take effect;
- ``info`` -- indefinite: the client does not know (a timed-out send may well be in the
  log). A checker must never count an ``info`` send as lost, nor as failed.

The History is append-only and thread-safe because delivery callbacks, consumer loops
and fault buttons record from different threads. It saves as JSON Lines, one op per
line, so ``spark.read.json(path)`` and ``pandas.read_json(path, lines=True)`` read it
without a custom schema.

A child process (a Spark driver, a service instance, a zombie) records into an
:class:`OpLog` instead: the same lines, appended one op at a time so a ``SIGKILL`` loses
none, on the clock every process shares; :meth:`History.merge_logs` reads several such
logs back into one History, by time. Under it lies the one way the lab appends lines a
kill must not lose, and reads them back: :class:`JsonLines` and :func:`read_json_lines`,
which the grader's events and the HTTP service's ledger use too (records that are not
ops). No other module writes or reads such files.

This module also holds :class:`Read` (one record of the final read-back of a topic, what
checkers compare the History against) and :func:`classify`, which turns a librdkafka
error into ``fail`` or ``info``.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time as _time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, fields, replace
from json.encoder import encode_basestring_ascii
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from confluent_kafka import KafkaError, KafkaException

from .errors import LabError, bad_value
from .values import ValueId, parse

if TYPE_CHECKING:
    import pandas as pd

Outcome = Literal["ok", "fail", "info"]
OUTCOMES: tuple[str, ...] = ("ok", "fail", "info")
KINDS: tuple[str, ...] = (
    "send",
    "poll",
    "commit",
    "begin_txn",
    "commit_txn",
    "abort_txn",
    "init_txn",
    "send_offsets",
    "fault",  # a fault done to the cluster or to a client (Jepsen's nemesis ops)
    "db_write",  # chapter 06: a service instance wrote a database row (or skipped it: fail)
    "http_call",  # chapter 06: a service instance called the HTTP service
)


def parse_value(text: str | ValueId) -> ValueId:
    """:func:`deliverylab.values.parse`, with the lab's one-line ``BadValue`` on failure."""
    try:
        return parse(text)
    except ValueError:
        raise bad_value("value", text, "'producer:seq', e.g. 'producer-0:17'") from None


def offsets_detail(offsets: Iterable[Any]) -> str:
    """A commit's offsets (anything with ``topic``, ``partition``, ``offset``, e.g.
    confluent-kafka's TopicPartition) as an op's detail, ``topic/partition@offset,...``:
    every committer writes this one format, so :func:`offsets_in` reads any of them."""
    return ",".join(f"{tp.topic}/{tp.partition}@{tp.offset}" for tp in offsets)


def offsets_in(detail: str | None) -> dict[tuple[str, int], int]:
    """An op's detail as {(topic, partition): offset}: the parts :func:`offsets_detail`
    wrote; anything else in it (a label such as ``commits/3``) is left out."""
    found: dict[tuple[str, int], int] = {}
    for part in (detail or "").replace(" ", ",").split(","):
        topic, _, rest = part.rpartition("/")
        partition, _, offset = rest.partition("@")
        if topic and partition.isdigit() and offset.lstrip("-").isdigit():
            found[topic, int(partition)] = int(offset)
    return found


@dataclass(frozen=True)
class Op:
    """One attempted operation. Field meanings are the lab's recording contract.

    ``values`` are ValueId strings (``"producer-0:17"``). For a ``send``, ``topic``/
    ``partition``/``offset`` say where it was acknowledged (one value per send op, so the
    offset is unambiguous); for a ``poll``, where it was read. ``txn`` ties sends,
    ``send_offsets`` and ``commit_txn``/``abort_txn`` of one transaction together and must
    be unique within a History (e.g. ``"producer-0/txn-3"``). ``time`` is seconds since
    the History started (monotonic clock, so a wall-clock jump cannot reorder ops).
    """

    process: str
    kind: str
    outcome: str
    time: float
    values: tuple[str, ...] = ()
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    txn: str | None = None
    error: str | None = None
    detail: str | None = None
    #: For ``fault`` ops: the fault's name in :data:`deliverylab.faults.FAULTS`.
    fault: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise bad_value("kind", self.kind, f"one of {', '.join(KINDS)}")
        if self.outcome not in OUTCOMES:
            raise bad_value("outcome", self.outcome, "one of ok, fail, info")
        if isinstance(self.values, (str, ValueId)):
            raise bad_value("values", self.values, "a sequence of 'producer:seq' strings")
        # Normalise (ValueId objects, lists) and validate once, here, so that a
        # malformed value is caught where it is recorded, not later in a checker.
        object.__setattr__(self, "values", tuple(str(parse_value(v)) for v in self.values))

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict (``values`` as a list), keys in field order.

        Built by hand, not with ``dataclasses.asdict``: every field is a scalar, so
        asdict's deep copy bought nothing and cost most of a 1M-op ``save``.
        """
        return {"process": self.process, "kind": self.kind, "outcome": self.outcome,
                "time": self.time, "values": list(self.values), "topic": self.topic,
                "partition": self.partition, "offset": self.offset, "txn": self.txn,
                "error": self.error, "detail": self.detail, "fault": self.fault}

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Op:
        """Inverse of :meth:`to_record`; missing optional fields (Spark drops nulls) are None."""
        kwargs = {k: v for k, v in record.items() if k in _FIELDS}
        kwargs["values"] = tuple(kwargs.get("values") or ())
        return cls(**kwargs)


@dataclass(frozen=True)
class Read:
    """One record of the final read-back of a topic: what checkers compare against.

    ``value`` is the ValueId string, or None for a record that is not a lab value.
    ``reader`` labels the view it came from (e.g. ``"read_committed"``): the two
    isolation levels legitimately see different records, so keep them apart.
    """

    topic: str
    partition: int
    offset: int
    value: str | None
    reader: str = ""


class History:
    """Append-only, thread-safe list of :class:`Op`."""

    def __init__(self, ops: Iterable[Op] = ()) -> None:
        self._lock = threading.Lock()
        self._ops: list[Op] = list(ops)
        self._t0 = _time.monotonic()

    def now(self) -> float:
        """Seconds since this History was created (monotonic)."""
        return _time.monotonic() - self._t0

    @property
    def origin(self) -> float:
        """This History's zero on ``time.monotonic()``'s clock, the clock of op logs."""
        return self._t0

    def append(self, op: Op) -> Op:
        """Append one op and return it."""
        if not isinstance(op, Op):
            raise bad_value("op", op, "an Op")
        with self._lock:
            self._ops.append(op)
        return op

    def record(
        self,
        process: str,
        kind: str,
        outcome: str,
        values: Iterable[str | ValueId] = (),
        *,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
        txn: str | None = None,
        error: object = None,
        detail: str | None = None,
        time: float | None = None,
        fault: str | None = None,
    ) -> Op:
        """Build an :class:`Op` stamped with :meth:`now` and append it.

        ``error`` may be a ``KafkaError``, a ``KafkaException``, any exception or a
        string; it is stored as a short name (``"_MSG_TIMED_OUT"``) via :func:`error_name`.
        """
        return self.append(_new_op(process, kind, outcome, values, topic=topic,
                                   partition=partition, offset=offset, txn=txn, error=error,
                                   detail=detail, fault=fault,
                                   time=self.now() if time is None else time))

    def faults(self) -> list[Op]:
        """The fault ops, in order: what was done to the cluster and the clients."""
        return [op for op in self.snapshot() if op.kind == "fault"]

    def acked_between(self, start: float, end: float, topic: str | None = None) -> list[str]:
        """Values whose send was acknowledged (``ok``) between two times of this History."""
        return [v for op in self.snapshot() if op.kind == "send" and op.outcome == "ok"
                and start <= op.time <= end and (topic is None or op.topic == topic)
                for v in op.values]

    def snapshot(self) -> tuple[Op, ...]:
        """The ops recorded so far, in append order (a copy: safe while others append)."""
        with self._lock:
            return tuple(self._ops)

    def __iter__(self) -> Iterator[Op]:
        return iter(self.snapshot())

    def __len__(self) -> int:
        with self._lock:
            return len(self._ops)

    def to_records(self) -> list[dict[str, Any]]:
        """One JSON-ready dict per op."""
        return [op.to_record() for op in self.snapshot()]

    def save(self, path: str | Path) -> Path:
        """Write JSON Lines (one op per line), readable by ``spark.read.json``.

        Each line is exactly ``json.dumps(op.to_record(), separators=(",", ":"))``
        (the format every reader of the file was written against), built a column at a
        time: a 1M-op History saves in seconds, not the ~20 s a dict per op took.
        """
        path = Path(path)
        ops = self.snapshot()
        with path.open("w", encoding="utf-8") as out:
            for start in range(0, len(ops), _CHUNK):
                out.write(_json_lines(ops[start:start + _CHUNK]))
        return path

    @classmethod
    def load(cls, path: str | Path) -> History:
        """Read a file written by :meth:`save` (blank lines are skipped)."""
        with Path(path).open(encoding="utf-8") as src:
            return cls(Op.from_record(json.loads(line)) for line in src if line.strip())

    def merge_logs(self, paths: Iterable[str | Path]) -> LogRead:
        """Append the ops of child processes' op logs (:class:`OpLog`), all logs merged
        by time, each op moved onto this History's clock. Returns what was read (its
        ops on this clock), with the count of lines a kill cut short and that were
        skipped. A log that does not exist holds no op (its process died first)."""
        read = read_logs(paths)
        ops = tuple(replace(op, time=round(op.time - self._t0, 6)) for op in read.ops)
        with self._lock:
            self._ops.extend(ops)
        return LogRead(ops, read.torn)

    def to_pandas(self) -> pd.DataFrame:
        """The ops as a DataFrame, one row per op (columns even when empty)."""
        import pandas as pd

        columns = [f.name for f in fields(Op)]
        return pd.DataFrame.from_records(self.to_records(), columns=columns)


def _new_op(process: str, kind: str, outcome: str, values: Iterable[str | ValueId] = (), *,
            time: float, error: object = None, **fields: Any) -> Op:
    """The op :meth:`History.record` and :meth:`OpLog.record` build: ``error`` may be any
    exception or a KafkaError, stored as its short name (:func:`error_name`)."""
    return Op(process, kind, outcome, time, tuple(values),  # type: ignore[arg-type]
              error=None if error is None else error_name(error), **fields)


# --- a child process's op log ---------------------------------------------------------


class OpLog:
    """The op log of one child process: append-only JSON Lines, one :class:`Op` a line.

    A child (a Spark driver, a service instance, a zombie) records here what it did, so
    that its parent can read it after the child was SIGKILLed -- which is the point of
    most children the lab starts. The lines are :meth:`History.save`'s, written through
    :class:`JsonLines` (one ``os.write`` per op: a kill loses none).

    Times are ``time.monotonic()`` seconds, the one clock every process of the host
    shares and no wall-clock jump moves; :meth:`History.merge_logs` puts them on a
    History's clock (``History.origin`` is its zero on this clock).
    """

    def __init__(self, path: str | Path) -> None:
        self._lines = JsonLines(path)
        self.path = self._lines.path

    def __repr__(self) -> str:
        return f"<OpLog {self.path}>"

    def now(self) -> float:
        """The log's clock (so a :class:`~deliverylab.clients.Recorder` can record here)."""
        return _time.monotonic()

    def append(self, op: Op) -> Op:
        """Write ``op`` (its ``time`` on ``time.monotonic()``'s clock) as one line, now."""
        if not isinstance(op, Op):
            raise bad_value("op", op, "an Op")
        self._lines.append(op.to_record())  # json.dumps of it: save's line (_json_lines)
        return op

    def record(self, process: str, kind: str, outcome: str,
               values: Iterable[str | ValueId] = (), *, time: float | None = None,
               **fields: Any) -> Op:
        """:meth:`History.record`'s arguments; ``time`` (default: now) is monotonic."""
        return self.append(_new_op(process, kind, outcome, values, **fields,
                                   time=self.now() if time is None else time))


@dataclass(frozen=True)
class LogRead:
    """What op logs held: their ops by time, and the lines a kill cut short (skipped)."""

    ops: tuple[Op, ...]
    torn: int = 0


def read_logs(paths: Iterable[str | Path]) -> LogRead:
    """Every op of the op logs ``paths``, merged by time (the logs' own clock; equal
    times keep the order of the logs and of their lines). Read by
    :func:`read_json_lines`: a line a kill cut short is skipped and counted, a broken
    line amid a log or a whole line that is not an :class:`Op` raised with its place."""
    ops: list[Op] = []
    torn = 0
    for path in paths:
        read = read_json_lines(path, Op.from_record, "an op")
        ops += read.records
        torn += read.torn
    return LogRead(tuple(sorted(ops, key=attrgetter("time"))), torn)


# --- append-only JSON Lines: the one writer and the one reader ------------------------

#: The record a writer appends right after a torn last line it finds (a killed writer's
#: end), closing it: it tells a reader that the broken line before it is a kill's, not
#: a writer's bug. Never handed on as a record.
TORN_MARK: dict[str, Any] = {"torn_line_closed": True}
_TORN_MARK_LINE = (json.dumps(TORN_MARK, separators=(",", ":")) + "\n").encode("ascii")


class JsonLines:
    """An append-only JSON Lines file whose writer may be SIGKILLed at any moment.

    The one way a process of the lab writes down, line by line, what it did for another
    to read after it died: op logs (:class:`OpLog`), the grader's events
    (``grade.events.Events``), the HTTP service's ledger. Each record is one
    ``os.write`` of one whole line to a file opened ``O_APPEND``: nothing waits in a
    buffer of the process for a kill to lose, and two threads, or two processes sharing
    the file, never interleave their lines. No ``fsync``: a killed process's writes are
    in the kernel already; only a crash of the machine loses them, and the lab crashes
    none. A kill inside the ``write`` of a long line can leave it torn, so the first
    append of a writer looks at how the file ends, and closes a torn line it finds with
    :data:`TORN_MARK` before its own. Read back with :func:`read_json_lines`.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()  # the first append: look, close, write as one
        self._looked = False

    def __repr__(self) -> str:
        return f"<JsonLines {self.path}>"

    def append(self, record: dict[str, Any]) -> None:
        """Write ``record`` as one line (``json.dumps``, compact, ASCII), now."""
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode("ascii")
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if self._looked:
                _write(fd, line, self.path)
                return
            with self._lock:
                size = os.fstat(fd).st_size
                if not self._looked and size and os.pread(fd, 1, size - 1) != b"\n":
                    line = b"\n" + _TORN_MARK_LINE + line  # a killed writer's end
                _write(fd, line, self.path)
                self._looked = True
        finally:
            os.close(fd)


def _write(fd: int, line: bytes, path: Path) -> None:
    """One ``os.write`` of the whole line; a short one (a full disk) is raised: a second
    write could land after another writer's line and break both."""
    done = os.write(fd, line)
    if done != len(line):
        raise LabError(f"{path}: wrote {done} of a line's {len(line)} bytes (is the disk "
                       "full?)")


@dataclass(frozen=True)
class LinesRead:
    """What a :class:`JsonLines` file held: its records, in order, and the lines a kill
    cut short (skipped)."""

    records: tuple[Any, ...]
    torn: int = 0


def read_json_lines(path: str | Path, parse: Callable[[dict[str, Any]], Any] | None = None,
                    what: str = "a record") -> LinesRead:
    """Every record of the :class:`JsonLines` file ``path`` (none if it does not exist:
    its writer died first), each through ``parse`` if given.

    A line that is not a JSON object is torn -- cut short by the kill of its writer --
    only where a kill can leave one: last in the file, or closed by :data:`TORN_MARK`;
    it is skipped and counted, since the lines before it are what the process did. A
    broken line anywhere else is a writer's bug, raised with its file and line, as is
    a record ``parse`` refuses (``what`` names what it should be)."""
    path = Path(path)
    if not path.exists():
        return LinesRead(())
    lines = [(n, raw) for n, raw in enumerate(path.read_bytes().split(b"\n"), 1)
             if raw.strip()]
    records: list[Any] = []
    torn = 0
    for i, (number, raw) in enumerate(lines):
        record = _json_object(raw)
        if record == TORN_MARK:
            continue
        if record is None:
            if i + 1 < len(lines) and _json_object(lines[i + 1][1]) != TORN_MARK:
                raise LabError(f"{path}:{number} is broken amid the file (not a JSON object, "
                               f"nor a torn last line): {raw[:80]!r}")
            torn += 1
            continue
        if parse is not None:
            try:
                record = parse(record)
            except (LabError, TypeError, ValueError, KeyError) as exc:
                raise LabError(f"{path}:{number} is not {what}: {exc}") from None
        records.append(record)
    return LinesRead(tuple(records), torn)


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """The JSON object of a line, or None if it is not one (a torn line)."""
    try:
        record = json.loads(raw)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError: a torn line
        return None
    return record if isinstance(record, dict) else None


# --- writing JSON Lines fast ---------------------------------------------------------

_CHUNK = 10_000  # ops per block: bounds its pieces' memory (and 10k ran ~10% faster than 50k)
_FIELDS = tuple(f.name for f in fields(Op))
#: What a History repeats from op to op (a few processes, kinds, topics, partitions; a
#: transaction's id over its sends; an error, a detail, a fault) ...
_REPEATED = attrgetter("process", "kind", "outcome", "topic", "partition", "txn", "error",
                       "detail", "fault")
#: ... and what changes with every op.
_TIME, _VALUES, _OFFSET, _PARTITION = map(attrgetter, ("time", "values", "offset", "partition"))
_INT_OR_NONE = frozenset({int, type(None)})


def _text(value: str | None) -> str:
    """The JSON of a text field; TypeError if it is not a str (then json.dumps decides)."""
    return "null" if value is None else encode_basestring_ascii(value)


class _Around(dict):  # type: ignore[type-arg]
    """For each distinct set of :data:`_REPEATED` fields in a block, the text of a line
    around its time, values and offset, in three pieces: escaped once, not once per op.
    The block's partitions are ints or None (checked first: ``True == 1`` as a key)."""

    def __missing__(self, key: tuple[Any, ...]) -> tuple[str, str, str]:
        process, kind, outcome, topic, partition, txn, error, detail, fault = key
        around = self[key] = (
            f'{{"process":{_text(process)},"kind":{_text(kind)},"outcome":{_text(outcome)}'
            ',"time":',
            f'],"topic":{_text(topic)},"partition":{"null" if partition is None else partition}'
            ',"offset":',
            f',"txn":{_text(txn)},"error":{_text(error)},"detail":{_text(detail)}'
            f',"fault":{_text(fault)}}}\n')
        return around


def _json_lines(ops: Sequence[Op]) -> str:
    """The ops as JSON Lines, each line what ``json.dumps`` writes for its record.

    One ``str.join`` of seven pieces an op, each piece made a column at a time in C: the
    text around the changing fields (:class:`_Around`), the ``repr`` of the time (what
    json writes for a float), the values through the standard library's own string
    escaper, the offset. A column, a type check and an escape per field, the twelve
    zipped into a ``%`` template per line, were some 35 passes over a block and twice the
    cost (perf: a quarter iterating, a seventh formatting); the reprs are now a quarter.

    Only for the types json writes plainly (str, int, finite float, None): a block with
    any other value (a bool offset, an infinite time) is written by ``json.dumps`` itself.
    """
    times, values, offsets = (list(map(get, ops)) for get in (_TIME, _VALUES, _OFFSET))
    try:
        if not (set(map(type, times)) <= {float, int} and all(map(math.isfinite, times))
                and set(map(type, values)) <= {tuple} and set(map(type, offsets)) <= _INT_OR_NONE
                and set(map(type, map(_PARTITION, ops))) <= _INT_OR_NONE):
            raise TypeError
        arounds = list(map(_Around().__getitem__, map(_REPEATED, ops)))
        texts = [encode_basestring_ascii(v[0]) if len(v) == 1
                 else ",".join(map(encode_basestring_ascii, v)) for v in values]
    except (TypeError, OverflowError):  # not a plain JSON type: json.dumps decides
        return "".join(json.dumps(op.to_record(), separators=(",", ":")) + "\n" for op in ops)
    pieces = [',"values":['] * (7 * len(ops))  # the piece every line has, in place already
    pieces[0::7] = map(itemgetter(0), arounds)
    pieces[1::7] = map(repr, times)
    pieces[3::7] = texts
    pieces[4::7] = map(itemgetter(1), arounds)
    pieces[5::7] = ["null" if x is None else str(x) for x in offsets]
    pieces[6::7] = map(itemgetter(2), arounds)
    return "".join(pieces)


# --- classifying client errors -------------------------------------------------------

# Rejected by the broker *before* append (librdkafka's produce error table marks these
# MSG_NOT_PERSISTED), or refused by the client before anything was sent.
_DEFINITE_CODES = frozenset(
    {
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.RECORD_LIST_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.UNKNOWN_PRODUCER_ID,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.INVALID_TXN_STATE,
        KafkaError._PURGE_QUEUE,
        KafkaError._QUEUE_FULL,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._INVALID_ARG,
        KafkaError._STATE,
        # Fencing: the broker refuses the stale epoch, and the coordinator aborts the
        # fenced producer's open transaction, so nothing of it can become committed.
        KafkaError._FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.PRODUCER_FENCED,
    }
)

# The request may have reached the log without the client hearing back (librdkafka marks
# these MSG_POSSIBLY_PERSISTED). Listed for the reader: unknown codes are "info" anyway.
_INDEFINITE_CODES = frozenset(
    {
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError._PURGE_INFLIGHT,
    }
)


def _kafka_error(error: object) -> KafkaError:
    if isinstance(error, KafkaException) and error.args and isinstance(error.args[0], KafkaError):
        return error.args[0]
    if isinstance(error, KafkaError):
        return error
    raise bad_value("error", error, "a confluent_kafka KafkaError or KafkaException")


def classify(error: KafkaError | KafkaException) -> Literal["fail", "info"]:
    """Is this error a definite failure (``fail``) or indefinite (``info``)?

    The question is not "can it be retried" but "can the write be in the log?".
    The rules, in order:

    1. ``txn_requires_abort()`` -> ``fail``. The transaction can only be aborted, so
       whatever it wrote never becomes visible to ``read_committed``; and a
       ``commit_transaction`` that raises it did not commit. (Where the records of an
       aborted transaction *are* visible -- ``read_uncommitted`` -- the checker finds
       them through the transaction's fate, not through this outcome.)
    2. A code the broker returns *before* appending (``NOT_ENOUGH_REPLICAS``,
       ``MSG_SIZE_TOO_LARGE``, ``TOPIC_AUTHORIZATION_FAILED`` ...), a code for a
       message that never left the client (``_PURGE_QUEUE``, ``_QUEUE_FULL``), or
       fencing (``_FENCED``, ``INVALID_PRODUCER_EPOCH``, ``PRODUCER_FENCED``) ->
       ``fail``. These match librdkafka's own produce-error table, which marks them
       ``MSG_NOT_PERSISTED``.
    3. Timeouts and broken connections (``_MSG_TIMED_OUT``, ``_TIMED_OUT``,
       ``REQUEST_TIMED_OUT``, ``_TRANSPORT``, ``NETWORK_EXCEPTION``), a purge of an
       in-flight request (``_PURGE_INFLIGHT``) and ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``
       (the leader *did* append; only the replication wait failed) -> ``info``.
    4. Anything else -> ``info``: we cannot prove it was not written, and calling a
       written value "failed" would turn a real duplicate into a false "unexpected".

    ``retriable()`` and ``fatal()`` are deliberately *not* used as evidence:
    ``NOT_ENOUGH_REPLICAS`` is retriable yet certainly not appended, and a fatal
    idempotence error (sequence desync, ``OUT_OF_ORDER_SEQUENCE_NUMBER``) says the
    producer is unusable, while librdkafka marks its messages *possibly* persisted.

    Caveat, and a lesson: a definite code describes the *last* attempt. With
    ``retries`` > 0 an earlier attempt may have been appended with its ack lost; when
    the retries then run out on, say, ``NOT_ENOUGH_REPLICAS``, the value is in the log
    though its send says ``fail``. librdkafka tracks this per message
    (``rd_kafka_message_status``), but confluent-kafka-python does not expose it, so the
    checker reports such values as ``unexpected`` rather than hiding them.
    """
    err = _kafka_error(error)
    if err.txn_requires_abort():
        return "fail"
    code = err.code()
    if code in _DEFINITE_CODES:
        return "fail"
    return "info"  # _INDEFINITE_CODES and every unknown code


def outcome_of(error: KafkaError | KafkaException | None) -> Outcome:
    """``ok`` if there is no error (a delivery callback's ``err is None``), else classify it."""
    return "ok" if error is None else classify(error)


def error_name(error: object) -> str:
    """Short name for the History: the librdkafka code name, or the exception class."""
    if isinstance(error, str):
        return error
    if isinstance(error, (KafkaError, KafkaException)):
        try:
            return _kafka_error(error).name()
        except ValueError:  # a KafkaException not wrapping a KafkaError
            pass
    return type(error).__name__
