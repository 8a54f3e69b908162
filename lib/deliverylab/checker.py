"""Checkers: pure functions of a History plus the final read-back of the topics.

A checker never talks to Kafka. It compares what clients were *told* (the History) with
what is *in the log* (a list of :class:`~deliverylab.history.Read`), and names each
disagreement. Whether a disagreement is a bug depends on the delivery mode: a duplicate
is allowed under at-least-once and forbidden under idempotence. So :func:`check` takes
the mode's ``allowed`` anomalies and judges only the rest.

Matching rules shared by every detector:

- A value is matched per *topic*: a pipeline copies ``producer-0:7`` from its input
  topic to its output topic, and that is two facts, not a duplicate.
- A record is its ``(topic, partition, offset)``: the same record read by two readers
  (or twice by one) is counted once; two offsets with one value are two records.
- Pass the reads of *one* view. ``read_uncommitted`` shows aborted records by design,
  so judging it reports ``aborted_reads`` that ``read_committed`` rightly hides.

A transaction's fate, from the ops carrying its ``txn`` id: *committed* if a
``commit_txn`` ended ``ok``; else *aborted* if an ``abort_txn`` ended ``ok``; else
*unknown* if a ``commit_txn`` ended ``info`` (it may have committed); else *aborted*
(it never committed: a crashed or fenced producer's transaction is aborted by the
coordinator).

Every detector returns a list of findings: small JSON-ready dicts, sorted, so they
print, serialise and turn into a DataFrame (``pandas.DataFrame(lost(h, reads))``). The
indexes they share, what the sends promise and what the records hold, are built once a
check by :mod:`~deliverylab.matching`.
"""

from __future__ import annotations

import functools
import gc
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import chain, islice
from operator import gt, itemgetter
from typing import Any, TypeVar

from .errors import BadValue, bad_value
from .history import History, Op, Read, parse_value
from .matching import (
    ABORTED,
    ACKED,
    FAILED,
    INDEFINITE,
    Finding,
    Parts,
    Scan,
    Sends,
    stored,
)
from .matching import txn_fates as txn_fates  # the checker's rule, re-exported
from .values import ValueId, decode, split

LOST = "lost"
UNSEEN = "unseen"
DUPLICATES = "duplicates"
ABORTED_READS = "aborted_reads"
REORDERED = "reordered"
UNEXPECTED = "unexpected"
PIPELINE_MISSING = "pipeline_missing"
PIPELINE_EXTRA = "pipeline_extra"

#: Every anomaly :func:`check` can report, in the order summaries list them.
ANOMALIES: tuple[str, ...] = (
    LOST,
    DUPLICATES,
    ABORTED_READS,
    REORDERED,
    UNEXPECTED,
    PIPELINE_MISSING,
    PIPELINE_EXTRA,
    UNSEEN,
)

#: Reported but never invalidating: an indefinite send that is absent broke no promise.
INFORMATIONAL = frozenset({UNSEEN})

#: At most this many examples per anomaly in a Result.
EXAMPLES = 5

_F = TypeVar("_F", bound=Callable[..., Any])

# --- building reads ------------------------------------------------------------------


def _value_text(value: object) -> str | None:
    """A ValueId string from whatever a reader hands back; None if not a lab value."""
    if value is None or isinstance(value, ValueId):
        return None if value is None else str(value)
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8", "replace")
    text = str(value)
    try:
        # Raw record value (JSON from values.encode) or an already-decoded "producer:seq".
        return str(decode(text)) if text.lstrip().startswith("{") else str(parse_value(text))
    except ValueError:
        return None


def reads_from_records(records: Iterable[Any], reader: str = "") -> list[Read]:
    """Build :class:`Read` objects from dicts (or Spark ``Row``s) of topic/partition/offset.

    The value may come as ``value`` (a ``"producer:seq"`` string, a ValueId, or the raw
    JSON record value as str/bytes) or as separate ``producer`` and ``seq`` columns
    (Spark's ``from_json``). Records that are not lab values get ``value=None``.
    ``reader`` (or ``isolation``) in a record overrides the ``reader`` argument.
    """
    reads = []
    for rec in records:
        row: Mapping[str, Any] = rec.asDict() if hasattr(rec, "asDict") else rec
        if row.get("value") is None and row.get("producer") is not None:
            value = _value_text(ValueId(str(row["producer"]), int(row["seq"])))
        else:
            value = _value_text(row.get("value"))
        label = row.get("reader") or row.get("isolation") or reader
        reads.append(
            Read(str(row["topic"]), int(row["partition"]), int(row["offset"]), value, label)
        )
    return reads


# --- shared by the detectors ---------------------------------------------------------


def _bulk(fn: _F) -> _F:
    """Run ``fn`` with the cyclic GC paused: indexing 1M sends starts a collection every
    few hundred allocations, each older one walking every op and read (a third of a 1M
    check's time). The indexes make no cycle to collect."""

    @functools.wraps(fn)
    def paused(*args: Any, **kwargs: Any) -> Any:
        enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if enabled:
                gc.enable()

    return paused  # type: ignore[return-value]


def _vkey(value: str) -> tuple[str, int]:
    """Sort key of a value, in ValueId order; a value that is not one raises BadValue."""
    try:
        return split(value)
    except ValueError:
        parse_value(value)  # raises the lab's one-line BadValue
        raise


def _by_place(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (f["topic"], f["partition"], f["offset"]))


def _missing(sends: Sends, scan: Scan) -> dict[int, list[Finding]]:
    """Acked and indefinite values of the History that no record of their topic holds
    (a send recorded without its topic: that no record of any topic holds)."""
    out: dict[int, list[Finding]] = {ACKED: [], INDEFINITE: []}
    for topic, expected in sends.expected.items():
        for value in scan.absent[topic]:
            rank, op = expected[value]
            if rank >= INDEFINITE:
                out[rank].append({"value": value, "topic": topic, "partition": op.partition,
                                  "offset": op.offset, "process": op.process, "txn": op.txn,
                                  "error": op.error})
    pairs = lambda: ((op.topic, v) for op in sends.sends for v in op.values)  # noqa: E731
    return {rank: _sorted(found, lambda f: (str(f["topic"]), _vkey(f["value"])), pairs)
            for rank, found in out.items()}


def _sorted(found: list[Finding], key: Callable[[Finding], Any],
            pairs: Callable[[], Iterable[tuple[Any, str]]]) -> list[Finding]:
    """``found`` sorted by ``key`` as the detectors always sorted them: findings of equal
    keys (topics None and "None"; "p:7" and "p:07") in the order their (topic, value)
    first comes in ``pairs()``, and of two bad values the one that comes first named."""
    try:
        keys = list(map(key, found))
        if len(set(keys)) == len(keys):
            return [f for _, f in sorted(zip(keys, found, strict=True), key=itemgetter(0))]
    except BadValue:
        pass
    first: dict[tuple[Any, str], int] = {}
    for pair in pairs():
        first.setdefault(pair, len(first))
    return sorted(sorted(found, key=lambda f: first[(f["topic"], f["value"])]), key=key)


# --- detectors -----------------------------------------------------------------------


@_bulk
def lost(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Acknowledged values never read: the send ended ``ok`` (and, in a transaction, the
    transaction committed), yet the topic does not hold the value.

    The example carries where the ack said it was written (partition, offset).
    """
    sends = Sends(history)
    return _missing(sends, Scan(stored(reads), sends))[ACKED]


@_bulk
def unseen(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Indefinite sends never read: outcome ``info`` (or ``ok`` in a transaction whose
    commit timed out), and absent. Not an error -- nobody was promised anything."""
    sends = Sends(history)
    return _missing(sends, Scan(stored(reads), sends))[INDEFINITE]


def extra_copies(items: Iterable[Hashable | None], only: Container[Any] | None = None) -> int:
    """Copies beyond the first, summed over distinct items (``None`` left out):
    ``extra_copies(["a", "a", "a", "b"]) == 2``. With ``only``, over those items alone.

    The one copy counter: values in a topic, rows and calls of chapter 06's services,
    lines of chapter 07's file, records of a Spark sink. :func:`duplicates` names each
    duplicated value and where its copies are; this is their count.
    """
    counts = Counter(i for i in items if i is not None and (only is None or i in only))
    return sum(n - 1 for n in counts.values())


@_bulk
def duplicates(reads: Iterable[Read]) -> list[Finding]:
    """Values held by more than one record of the same topic, with every copy's place."""
    reads = list(reads)
    return _duplicates(Scan(stored(reads)), reads)


def _duplicates(scan: Scan, reads: list[Read], skip_topic: str | None = None) -> list[Finding]:
    out = [{"value": value, "topic": topic, "copies": len(places),
            "offsets": sorted(map(list, places))}
           for (topic, value), places in scan.multi.items()
           if skip_topic is None or topic != skip_topic]
    pairs = lambda: ((t, v) for (t, _, _), v in {  # noqa: E731 - the records, flat
        (r.topic, r.partition, r.offset): r.value for r in reads if r.value is not None}.items())
    return _sorted(out, lambda f: (f["topic"], _vkey(f["value"])), pairs)


@_bulk
def aborted_reads(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Records written by a transaction that did not commit, found in the reads.

    A record is tied to its send by the acked (topic, partition, offset) when the
    History has it -- exact even when a pipeline re-sent the value in a later, committed
    transaction. Otherwise, by value: it is an aborted read only if *every* send of
    that value belongs to a transaction that did not commit.
    """
    return _by_place(Scan(stored(reads), Sends(history)).aborted)


@_bulk
def reordered(reads: Iterable[Read]) -> list[Finding]:
    """Values a producer sent earlier (lower seq) stored *after* a later one.

    Within one topic-partition, walk each producer's values in offset order, by the
    first copy of each value (later copies are ``duplicates``, not reordering: a retried
    batch appended again after its successor would otherwise count twice). A value
    whose seq is below the highest seq already seen is reordered; ``after`` names that
    later value. Needs no History: seq *is* the producer's send order.
    """
    return _reordered(stored(reads))


def _reordered(parts: Parts) -> list[Finding]:
    out: list[Finding] = []
    try:
        for (topic, partition), found in parts.items():
            offsets = list(found)
            if any(map(gt, offsets, islice(offsets, 1, None))):  # not read in offset order
                offsets.sort()
                _walk(topic, partition, zip(offsets, map(found.__getitem__, offsets), strict=True),
                      out)
            else:
                _walk(topic, partition, found.items(), out)
    except (ValueError, AttributeError):  # not a "producer:seq" string
        out = []
        for (topic, partition), found in sorted(parts.items()):
            # In offset order, as ValueId strings: the first bad value raises BadValue.
            offsets = sorted(found)
            values = [str(parse_value(found[offset])) for offset in offsets]
            _walk(topic, partition, zip(offsets, values, strict=True), out)
    return _by_place(out)


def _walk(topic: str, partition: int, places: Iterable[tuple[int, str]],
          out: list[Finding]) -> None:
    """Walk one partition's (offset, value) in offset order, each producer's first copies.

    One loop splits each value and keeps, per producer, the highest seq so far, its
    offset and every seq that rose to it (a sorted list). A seq below the highest is
    *late*; whether an earlier copy of it exists (then it is a duplicate, not reordered)
    is settled after the loop, for the few late ones: an earlier copy either rose (found
    by bisection) or was late itself. A set of every seq seen cost more than the walk.
    """
    producers: dict[str, list[Any]] = {}  # producer -> [highest seq, its offset, rises]
    # Each late value: producer, seq, offset, and the highest seq then with its offset.
    late: list[tuple[str, int, int, int, int]] = []
    get, isdigit = producers.get, str.isdigit
    for offset, value in places:
        producer, _, text = value.rpartition(":")
        if producer and isdigit(text):  # the usual case, without split's checks
            seq = int(text)
        else:  # a negative seq, or not a value id (then it raises ValueError)
            producer, seq = split(value)
        state = get(producer)
        if state is None:
            producers[producer] = [seq, offset, [seq]]
        elif seq > state[0]:  # the usual case: the producer's next value
            state[0], state[1] = seq, offset
            state[2].append(seq)
        elif seq < state[0]:
            late.append((producer, seq, offset, state[0], state[1]))
    reported: set[tuple[str, int]] = set()
    for producer, seq, offset, top, top_offset in late:
        rises = producers[producer][2]  # those after this one are above its highest then
        at = bisect_left(rises, seq)
        if (at < len(rises) and rises[at] == seq) or (producer, seq) in reported:
            continue  # a later copy of a value already stored: a duplicate
        reported.add((producer, seq))  # its first copy: reordered
        out.append({"value": f"{producer}:{seq}", "topic": topic, "partition": partition,
                    "offset": offset, "after": f"{producer}:{top}", "after_offset": top_offset})


@_bulk
def unexpected(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Records the History cannot explain: every send of the value ended ``fail``, or
    no send of it was recorded at all, in a topic the History does write to.

    A ``fail`` that shows up in the log is the classic trap of a definite error on the
    *last* retry of a message whose first attempt was appended (see
    :func:`~deliverylab.history.classify`); "never sent" points at a recording bug.
    """
    return _by_place(Scan(stored(reads), Sends(history)).unexpected)


def pipeline_exactly_once(
    input_reads: Iterable[Read], output_reads: Iterable[Read]
) -> tuple[list[Finding], list[Finding]]:
    """For a consume-transform-produce pipeline: is the output the input, exactly once?

    The pipeline writes each input value under the same ValueId, so each value must
    have as many output records as it has input records (normally one; an input
    duplicate legitimately yields two). Returns ``(missing, extra)``: values with fewer
    output records than input records, and values with more (including values that
    are not in the input at all).
    """

    def counts(reads: Iterable[Read]) -> Counter[str]:
        return Counter(v for found in stored(reads).values() for v in found.values())

    want, got = counts(input_reads), counts(output_reads)
    missing, extra = [], []
    for value in sorted(set(want) | set(got), key=parse_value):
        finding = {
            "value": value,
            "input_records": want.get(value, 0),
            "output_records": got.get(value, 0),
        }
        if finding["output_records"] < finding["input_records"]:
            missing.append(finding)
        elif finding["output_records"] > finding["input_records"]:
            extra.append(finding)
    return missing, extra


# --- the verdict ---------------------------------------------------------------------

_PHRASES = {
    LOST: ("acknowledged value was never read (lost)",
           "acknowledged values were never read (lost)"),
    DUPLICATES: ("value was stored more than once (duplicates)",
                 "values were stored more than once (duplicates)"),
    ABORTED_READS: ("record from a transaction that did not commit was read (aborted_reads)",
                    "records from transactions that did not commit were read (aborted_reads)"),
    REORDERED: ("value was stored after a later value of its producer (reordered)",
                "values were stored after a later value of their producer (reordered)"),
    UNEXPECTED: ("record has no send that could explain it (unexpected)",
                 "records have no send that could explain them (unexpected)"),
    PIPELINE_MISSING: ("input value is missing from the pipeline output (pipeline_missing)",
                       "input values are missing from the pipeline output (pipeline_missing)"),
    PIPELINE_EXTRA: ("value appears in the pipeline output too often (pipeline_extra)",
                     "values appear in the pipeline output too often (pipeline_extra)"),
    UNSEEN: (
        "indefinite send was never read (unseen: it may or may not have been written, "
        "so this is information, not an error)",
        "indefinite sends were never read (unseen: each may or may not have been written, "
        "so this is information, not an error)",
    ),
}


@dataclass(frozen=True)
class Result:
    """The verdict of :func:`check`, independent of any delivery mode.

    ``valid`` is True iff every anomaly with a non-zero count is ``allowed`` or
    informational (``unseen``). ``stats`` are context for the summary (values sent,
    acknowledged, indefinite, failed; records read).
    """

    valid: bool
    counts: dict[str, int]
    examples: dict[str, list[Finding]]
    allowed: frozenset[str]
    stats: dict[str, int] = field(default_factory=dict)

    def violations(self) -> list[str]:
        """Anomalies that were found and are not allowed: why the Result is invalid."""
        return [
            a
            for a in ANOMALIES
            if self.counts.get(a, 0) and a not in self.allowed and a not in INFORMATIONAL
        ]

    def judged_by(self, allowed: Iterable[str]) -> Result:
        """The same findings judged by other rules (e.g. a mode's own ``allowed`` set
        instead of the one its fault widened): a verdict is always relative to rules."""
        allowed = frozenset(allowed)
        unknown = allowed - set(ANOMALIES)
        if unknown:
            raise bad_value("allowed", sorted(unknown), f"names from {', '.join(ANOMALIES)}")
        valid = all(not n or a in allowed or a in INFORMATIONAL for a, n in self.counts.items())
        return Result(valid=valid, counts=dict(self.counts), examples=dict(self.examples),
                      allowed=allowed, stats=dict(self.stats))

    def summary(self) -> str:
        """One paragraph, generated from the counts: what the student saw."""
        s = self.stats
        parts = []
        if s:
            parts.append(
                f"{s.get('values_sent', 0)} values were sent "
                f"({s.get('acknowledged', 0)} acknowledged, {s.get('indefinite', 0)} "
                f"indefinite, {s.get('failed', 0)} failed or aborted) and "
                f"{s.get('records_read', 0)} lab records were read back."
            )
        found = []
        for a in ANOMALIES:
            n = self.counts.get(a, 0)
            if not n:
                continue
            one, many = _PHRASES[a]
            verdict = ""
            if a not in INFORMATIONAL:
                verdict = " -- allowed in this mode" if a in self.allowed else " -- NOT allowed"
            found.append(f"{n} {one if n == 1 else many}{verdict}")
        if found:
            parts.append("Found: " + "; ".join(found) + ".")
        else:
            parts.append("No anomaly found.")
        bad = self.violations()
        parts.append("Verdict: valid." if not bad else "Verdict: INVALID (" + ", ".join(bad) + ").")
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for a results file."""
        return {
            "valid": self.valid,
            "counts": dict(self.counts),
            "examples": {k: list(v) for k, v in self.examples.items()},
            "allowed": sorted(self.allowed),
            "violations": self.violations(),
            "stats": dict(self.stats),
            "summary": self.summary(),
        }


@_bulk
def check(
    history: History | Iterable[Op],
    reads: Iterable[Read],
    allowed: Iterable[str] = frozenset(),
    pipeline: tuple[str, str] | None = None,
) -> Result:
    """Run every detector and judge the findings against the mode's ``allowed`` set.

    ``pipeline=(input_topic, output_topic)`` also checks a consume-transform-produce
    pipeline between those topics. ``unseen`` never affects validity: an indefinite
    send that is absent is permitted in every mode (the client was told nothing).
    """
    allowed = frozenset(allowed)
    unknown = allowed - set(ANOMALIES)
    if unknown:
        raise bad_value("allowed", sorted(unknown), f"names from {', '.join(ANOMALIES)}")
    reads = list(reads)
    # Every detector reads the same indexes, built once: the sends, the records, a scan.
    sends, parts = Sends(history), stored(reads)
    scan = Scan(parts, sends)
    missing = _missing(sends, scan)
    found = {
        LOST: missing[ACKED],
        # A pipeline's output is judged by the pipeline check (re-processing shows up as
        # pipeline_extra), so that a mode can allow one without the other.
        DUPLICATES: _duplicates(scan, reads, None if pipeline is None else pipeline[1]),
        ABORTED_READS: _by_place(scan.aborted),
        REORDERED: _reordered(parts),
        UNEXPECTED: _by_place(scan.unexpected),
        UNSEEN: missing[INDEFINITE],
    }
    if pipeline is not None:
        source, sink = pipeline
        found[PIPELINE_MISSING], found[PIPELINE_EXTRA] = pipeline_exactly_once(
            [r for r in reads if r.topic == source], [r for r in reads if r.topic == sink]
        )
    counts = {a: len(found[a]) for a in ANOMALIES if a in found}
    fates = Counter(map(itemgetter(0), chain.from_iterable(map(dict.values,
                                                               sends.expected.values()))))
    stats = {
        "values_sent": sum(map(len, sends.expected.values())),
        "acknowledged": fates[ACKED],
        "indefinite": fates[INDEFINITE],
        "failed": fates[FAILED] + fates[ABORTED],
        "records_read": sum(map(len, parts.values())),
    }
    valid = all(not n or a in allowed or a in INFORMATIONAL for a, n in counts.items())
    return Result(
        valid=valid,
        counts=counts,
        examples={a: found[a][:EXAMPLES] for a in counts},
        allowed=allowed,
        stats=stats,
    )
