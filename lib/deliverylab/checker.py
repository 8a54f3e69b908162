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
print, serialise and turn into a DataFrame (``pandas.DataFrame(lost(h, reads))``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Container, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import bad_value
from .history import History, Op, Read, parse_value
from .values import ValueId, decode

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

Finding = dict[str, Any]

# Fate of one (topic, value), strongest first: what the log is expected to hold.
_ACKED, _INDEFINITE, _ABORTED, _FAILED = "acked", "indefinite", "aborted", "failed"
_RANK = {_ACKED: 3, _INDEFINITE: 2, _ABORTED: 1, _FAILED: 0}


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


# --- shared indexes ------------------------------------------------------------------


def _sends(history: Iterable[Op]) -> list[Op]:
    return [op for op in history if op.kind == "send"]


def txn_fates(history: Iterable[Op]) -> dict[str, str]:
    """Fate of every transaction id in the History: committed, aborted or unknown."""
    seen: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for op in history:
        if op.txn is not None:
            seen[op.txn].add((op.kind, op.outcome))
    fates = {}
    for txn, marks in seen.items():
        if ("commit_txn", "ok") in marks:
            fates[txn] = "committed"
        elif ("abort_txn", "ok") in marks:
            fates[txn] = "aborted"
        elif ("commit_txn", "info") in marks:
            fates[txn] = "unknown"
        else:
            fates[txn] = "aborted"
    return fates


def _send_fate(op: Op, fates: Mapping[str, str]) -> str:
    """What one send op says the log should hold for its value."""
    fate = fates.get(op.txn, "committed") if op.txn is not None else "committed"
    if fate == "aborted":
        return _ABORTED
    if op.outcome == "ok":
        return _ACKED if fate == "committed" else _INDEFINITE
    return _INDEFINITE if op.outcome == "info" else _FAILED


def _expectations(history: Iterable[Op]) -> dict[tuple[str | None, str], tuple[str, Op]]:
    """Per (topic, value): its strongest fate over all its sends, and the op that set it.

    A value re-sent (by the application or by a pipeline redoing an aborted
    transaction) counts as acknowledged if any of its sends was.
    """
    ops = list(history)
    fates = txn_fates(ops)
    best: dict[tuple[str | None, str], tuple[str, Op]] = {}
    for op in _sends(ops):
        fate = _send_fate(op, fates)
        for value in op.values:
            key = (op.topic, value)
            if key not in best or _RANK[fate] > _RANK[best[key][0]]:
                best[key] = (fate, op)
    return best


def _records(reads: Iterable[Read]) -> dict[tuple[str, int, int], str]:
    """Distinct lab records: (topic, partition, offset) -> value."""
    return {(r.topic, r.partition, r.offset): r.value for r in reads if r.value is not None}


def _missing(history: Iterable[Op], reads: Iterable[Read], wanted: str) -> list[Finding]:
    records = _records(reads)
    present = {(t, v) for (t, _, _), v in records.items()}
    present_values = {v for _, v in present}
    out = []
    for (topic, value), (fate, op) in _expectations(history).items():
        if fate != wanted:
            continue
        if (topic, value) in present or (topic is None and value in present_values):
            continue
        out.append(
            {
                "value": value,
                "topic": topic,
                "partition": op.partition,
                "offset": op.offset,
                "process": op.process,
                "txn": op.txn,
                "error": op.error,
            }
        )
    return sorted(out, key=lambda f: (str(f["topic"]), parse_value(f["value"])))


# --- detectors -----------------------------------------------------------------------


def lost(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Acknowledged values never read: the send ended ``ok`` (and, in a transaction, the
    transaction committed), yet the topic does not hold the value.

    The example carries where the ack said it was written (partition, offset).
    """
    return _missing(history, reads, _ACKED)


def unseen(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Indefinite sends never read: outcome ``info`` (or ``ok`` in a transaction whose
    commit timed out), and absent. Not an error -- nobody was promised anything."""
    return _missing(history, reads, _INDEFINITE)


def extra_copies(items: Iterable[Hashable | None], only: Container[Any] | None = None) -> int:
    """Copies beyond the first, summed over distinct items (``None`` left out):
    ``extra_copies(["a", "a", "a", "b"]) == 2``. With ``only``, over those items alone.

    The one copy counter: values in a topic, rows and calls of chapter 06's services,
    lines of chapter 07's file, records of a Spark sink. :func:`duplicates` names each
    duplicated value and where its copies are; this is their count.
    """
    counts = Counter(i for i in items if i is not None and (only is None or i in only))
    return sum(n - 1 for n in counts.values())


def duplicates(reads: Iterable[Read]) -> list[Finding]:
    """Values held by more than one record of the same topic, with every copy's place."""
    places: dict[tuple[str, str], set[tuple[int, int]]] = defaultdict(set)
    for (topic, partition, offset), value in _records(reads).items():
        places[(topic, value)].add((partition, offset))
    out = [
        {"value": value, "topic": topic, "copies": len(ps), "offsets": sorted(map(list, ps))}
        for (topic, value), ps in places.items()
        if len(ps) > 1
    ]
    return sorted(out, key=lambda f: (f["topic"], parse_value(f["value"])))


def aborted_reads(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Records written by a transaction that did not commit, found in the reads.

    A record is tied to its send by the acked (topic, partition, offset) when the
    History has it -- exact even when a pipeline re-sent the value in a later, committed
    transaction. Otherwise, by value: it is an aborted read only if *every* send of
    that value belongs to a transaction that did not commit.
    """
    ops = list(history)
    fates = txn_fates(ops)
    # Acked sends of one value with a known place: (topic, partition, offset) -> op.
    at = {
        (op.topic, op.partition, op.offset): op
        for op in _sends(ops)
        if op.outcome == "ok" and len(op.values) == 1 and op.offset is not None
    }
    expected = _expectations(ops)
    out = []
    for (topic, partition, offset), value in _records(reads).items():
        op = at.get((topic, partition, offset))
        if op is not None and op.values[0] == value:
            aborted = _send_fate(op, fates) == _ABORTED
        else:
            fate, op = expected.get((topic, value)) or expected.get((None, value)) or ("", None)
            aborted = fate == _ABORTED
        if aborted and op is not None:
            out.append(
                {
                    "value": value,
                    "topic": topic,
                    "partition": partition,
                    "offset": offset,
                    "txn": op.txn,
                }
            )
    return sorted(out, key=lambda f: (f["topic"], f["partition"], f["offset"]))


def reordered(reads: Iterable[Read]) -> list[Finding]:
    """Values a producer sent earlier (lower seq) stored *after* a later one.

    Within one topic-partition, walk each producer's values in offset order, by the
    first copy of each value (later copies are ``duplicates``, not reordering: a retried
    batch appended again after its successor would otherwise count twice). A value
    whose seq is below the highest seq already seen is reordered; ``after`` names that
    later value. Needs no History: seq *is* the producer's send order.
    """
    first: dict[tuple[str, int, str], dict[int, int]] = defaultdict(dict)
    for (topic, partition, offset), value in sorted(_records(reads).items()):
        vid = parse_value(value)
        seqs = first[(topic, partition, vid.producer)]
        seqs.setdefault(vid.seq, offset)  # sorted by offset: first copy wins
    out = []
    for (topic, partition, producer), seqs in first.items():
        top_seq, top_offset = None, None
        for seq, offset in sorted(seqs.items(), key=lambda item: item[1]):
            if top_seq is not None and seq < top_seq:
                out.append(
                    {
                        "value": str(ValueId(producer, seq)),
                        "topic": topic,
                        "partition": partition,
                        "offset": offset,
                        "after": str(ValueId(producer, top_seq)),
                        "after_offset": top_offset,
                    }
                )
            elif top_seq is None or seq > top_seq:
                top_seq, top_offset = seq, offset
    return sorted(out, key=lambda f: (f["topic"], f["partition"], f["offset"]))


def unexpected(history: Iterable[Op], reads: Iterable[Read]) -> list[Finding]:
    """Records the History cannot explain: every send of the value ended ``fail``, or
    no send of it was recorded at all, in a topic the History does write to.

    A ``fail`` that shows up in the log is the classic trap of a definite error on the
    *last* retry of a message whose first attempt was appended (see
    :func:`~deliverylab.history.classify`); "never sent" points at a recording bug.
    """
    ops = list(history)
    expected = _expectations(ops)
    written_topics = {op.topic for op in _sends(ops) if op.topic is not None}
    out = []
    for (topic, partition, offset), value in _records(reads).items():
        fate, _ = expected.get((topic, value)) or expected.get((None, value)) or ("", None)
        if fate == _FAILED:
            why = "every send failed"
        elif not fate and topic in written_topics:
            why = "never sent"
        else:
            continue
        out.append(
            {"value": value, "topic": topic, "partition": partition, "offset": offset, "why": why}
        )
    return sorted(out, key=lambda f: (f["topic"], f["partition"], f["offset"]))


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

    def counts(reads: Iterable[Read]) -> dict[str, int]:
        n: dict[str, int] = defaultdict(int)
        for value in _records(reads).values():
            n[value] += 1
        return n

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
    LOST: (
        "acknowledged value was never read (lost)",
        "acknowledged values were never read (lost)",
    ),
    DUPLICATES: (
        "value was stored more than once (duplicates)",
        "values were stored more than once (duplicates)",
    ),
    ABORTED_READS: (
        "record from a transaction that did not commit was read (aborted_reads)",
        "records from transactions that did not commit were read (aborted_reads)",
    ),
    REORDERED: (
        "value was stored after a later value of its producer (reordered)",
        "values were stored after a later value of their producer (reordered)",
    ),
    UNEXPECTED: (
        "record has no send that could explain it (unexpected)",
        "records have no send that could explain them (unexpected)",
    ),
    PIPELINE_MISSING: (
        "input value is missing from the pipeline output (pipeline_missing)",
        "input values are missing from the pipeline output (pipeline_missing)",
    ),
    PIPELINE_EXTRA: (
        "value appears in the pipeline output too often (pipeline_extra)",
        "values appear in the pipeline output too often (pipeline_extra)",
    ),
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
    ops, reads = list(history), list(reads)
    found = {
        LOST: lost(ops, reads),
        # A pipeline's output is judged by the pipeline check (re-processing shows up as
        # pipeline_extra), so that a mode can allow one without the other.
        DUPLICATES: duplicates([r for r in reads if pipeline is None or r.topic != pipeline[1]]),
        ABORTED_READS: aborted_reads(ops, reads),
        REORDERED: reordered(reads),
        UNEXPECTED: unexpected(ops, reads),
        UNSEEN: unseen(ops, reads),
    }
    if pipeline is not None:
        source, sink = pipeline
        missing, extra = pipeline_exactly_once(
            [r for r in reads if r.topic == source], [r for r in reads if r.topic == sink]
        )
        found[PIPELINE_MISSING], found[PIPELINE_EXTRA] = missing, extra
    counts = {a: len(found[a]) for a in ANOMALIES if a in found}
    fates = [fate for fate, _ in _expectations(ops).values()]
    stats = {
        "values_sent": len(fates),
        "acknowledged": fates.count(_ACKED),
        "indefinite": fates.count(_INDEFINITE),
        "failed": fates.count(_FAILED) + fates.count(_ABORTED),
        "records_read": len(_records(reads)),
    }
    valid = all(not n or a in allowed or a in INFORMATIONAL for a, n in counts.items())
    return Result(
        valid=valid,
        counts=counts,
        examples={a: found[a][:EXAMPLES] for a in counts},
        allowed=allowed,
        stats=stats,
    )
