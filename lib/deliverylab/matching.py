"""Matching: how the History's sends meet the records read back, indexed once a check.

Every detector of :mod:`~deliverylab.checker` asks the same questions of a History and
a read-back: what the log should hold for each value (the strongest fate of its sends),
what it does hold (the records, per topic-partition and offset), and where the two
disagree. This module builds those indexes once for all of them, at the size issue 41
measures (a million sends and records, ``bench/history_check.py``); the checker names
and sorts the anomalies, and its docstring states the matching rules and a
transaction's fate.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from itertools import chain, filterfalse
from typing import Any, cast

from .history import Op, Read

Finding = dict[str, Any]

# Fate of one (topic, value), as a rank, strongest first: what the log is expected to
# hold. Ints, so that the best of a value's sends is one comparison.
ACKED, INDEFINITE, ABORTED, FAILED = 3, 2, 1, 0
# A send's rank by its outcome, per its transaction's fate (a send outside transactions
# counts as committed); any other outcome is failed, and an aborted transaction's sends
# are aborted whatever their outcome.
_BY_FATE = {"committed": {"ok": ACKED, "info": INDEFINITE},
            "unknown": {"ok": INDEFINITE, "info": INDEFINITE},
            "aborted": {"ok": ABORTED, "info": ABORTED, "fail": ABORTED}}

Parts = dict[tuple[str, int], dict[int, str]]  # (topic, partition) -> offset -> value
Where = tuple[int, int]  # (partition, offset) within a topic


def txn_fates(history: Iterable[Op]) -> dict[str, str]:
    """Fate of every transaction id in the History: committed, aborted or unknown."""
    return _fates_and_sends(history)[0]


# The strongest end of a transaction seen so far, as a rank, and the fate each gives.
_END_MARKS = {("commit_txn", "ok"): 3, ("abort_txn", "ok"): 2, ("commit_txn", "info"): 1}
_FATE_OF_MARK = ("aborted", "unknown", "aborted", "committed")  # 0: it never ended


def _fates_and_sends(history: Iterable[Op]) -> tuple[dict[str, str], list[Op]]:
    """Transaction fates and the send ops, in one pass over the History: at a million
    ops, each pass costs a fetch of every op from memory, whatever the loop does."""
    marks: dict[str, int] = {}  # txn -> its strongest end, in order of first appearance
    sends: list[Op] = []
    ends: list[Op] = []
    keep_send, keep_end, mark = sends.append, ends.append, marks.setdefault
    for op in history:
        kind = op.kind
        if kind == "send":
            keep_send(op)
        if op.txn is not None:
            mark(op.txn, 0)
            if kind != "send":
                keep_end(op)
    for op in ends:
        marks[op.txn] = max(marks[op.txn], _END_MARKS.get((op.kind, op.outcome), 0))
    return {txn: _FATE_OF_MARK[m] for txn, m in marks.items()}, sends


def _send_rank(op: Op, fates: Mapping[str, str]) -> int:
    """What one send op says the log should hold for its value."""
    fate = fates.get(op.txn, "committed") if op.txn is not None else "committed"
    return _BY_FATE[fate].get(op.outcome, FAILED)


class Sends:
    """The History's sends, indexed once for every detector of a check.

    ``expected[topic][value]``: the value's strongest fate over all its sends to the
    topic, and the first op with it (a value re-sent, by the application or by a
    pipeline redoing an aborted transaction, is acknowledged if any send was).
    ``at[(topic, partition)][offset]``: the last acknowledged one-value send there, kept
    only where an aborted transaction's send was (elsewhere it agrees with ``expected``).
    """

    def __init__(self, history: Iterable[Op]) -> None:
        self.fates, self.sends = fates, sends = _fates_and_sends(history)
        self.topics: set[str | None] = set()
        self.expected: dict[str | None, dict[str, tuple[int, Op]]] = {}
        self.at: dict[tuple[str, int], dict[int, Op]] = {}
        self.low: dict[str | None, set[str]] = {}
        by_txn = {None: _BY_FATE["committed"]} | {t: _BY_FATE[f] for t, f in fates.items()}
        last, best, at_offsets = object(), {}, set()
        keep, failed, aborted = best.setdefault, FAILED, ABORTED  # locals: a million lookups
        for op in sends:
            rank = by_txn[op.txn].get(op.outcome, failed)
            topic, values = op.topic, op.values
            if topic is not last:
                best, last = self.expected.setdefault(topic, {}), topic
                keep = best.setdefault
                self.topics.add(topic)
            for value in values:
                entry = (rank, op)
                prev = keep(value, entry)  # one lookup for a value's first send: the usual
                if prev is not entry and rank > prev[0]:  # a stronger send of a value sent before
                    best[value] = prev = entry
                if prev is entry and rank <= aborted:  # failed or aborted, for now: findings
                    self.low.setdefault(topic, set()).add(value)
            if ((rank == aborted or (at_offsets and op.offset in at_offsets))
                    and op.outcome == "ok" and len(values) == 1 and op.offset is not None):
                if rank == ABORTED:
                    self.at.setdefault((topic, op.partition), {})[op.offset] = op
                    at_offsets.add(op.offset)
                elif op.offset in self.at.get((topic, op.partition), ()):
                    self.at[(topic, op.partition)][op.offset] = op  # the last one wins
        self.topics.discard(None)


def stored(reads: Iterable[Read]) -> Parts:
    """Distinct lab records, per topic-partition: offset -> value (the last read wins)."""
    parts: Parts = {}
    topic = partition = object()  # the read before's: a consumer hands back batches
    offsets: dict[int, str] = {}
    for r in reads:
        value = r.value
        if value is not None:
            if r.partition != partition or r.topic != topic:
                topic, partition = r.topic, r.partition
                offsets = parts.setdefault((topic, partition), {})
            offsets[r.offset] = value
    return parts


class Scan:
    """Where each value is stored in each topic and, given the sends, the records of
    transactions that did not commit and those no send explains.

    Found by *place* first: a value's expected send says where it was acknowledged, and
    whether the record there holds it is an int lookup. An index of every value by
    string cost a dict of a million keys and two million lookups in it: most of a
    check. Only the records not at their value's place (copies, records of failed,
    aborted or unplaced sends, values never sent) are indexed by value, as ``loose``.

    ``absent[topic]``: the topic's expected values that no record of it holds (for
    sends recorded without a topic: that no record of any topic holds). ``multi``: every
    place of each value stored more than once in a topic.
    """

    def __init__(self, parts: Parts, sends: Sends | None = None) -> None:
        self.expected = expected = {} if sends is None else sends.expected
        self.by_topic: dict[str, dict[int, dict[int, str]]] = {}  # -> partition -> offsets
        for (topic, partition), offsets in parts.items():
            self.by_topic.setdefault(topic, {})[partition] = offsets
        self.loose: dict[str, dict[str, list[Where]]] = {}
        self.absent: dict[str | None, list[str]] = {}
        self.multi: dict[tuple[str, str], list[Where]] = {}
        self.aborted: list[Finding] = []
        self.unexpected: list[Finding] = []
        for topic, partitions in self.by_topic.items():
            self._index(topic, partitions, expected.get(topic, {}))
        for topic, values in expected.items():  # topics never read: nothing is stored
            self.absent.setdefault(topic, list(values))
        if None in expected:
            self.absent[None] = [value for value in expected[None]
                                 if not any(self.holds(topic, value) for topic in self.by_topic)]
        if sends is not None:
            for topic, partitions in self.by_topic.items():
                self._judge(topic, partitions, sends)

    def _index(self, topic: str, partitions: dict[int, dict[int, str]],
               expected: dict[str, tuple[int, Op]]) -> None:
        # Each partition's records, less those found at their send's place: the loose.
        rest = {partition: offsets.copy() for partition, offsets in partitions.items()}
        away = []  # expected values not at their send's place: elsewhere, or absent
        get, keep = rest.get, away.append
        for value, (_, op) in expected.items():  # a million: bound methods in locals
            offsets, offset = get(op.partition), op.offset
            if offsets is not None and offsets.get(offset) == value:
                del offsets[offset]
            else:
                keep(value)
        self.loose[topic] = loose = {}
        for partition, offsets in rest.items():
            for offset, value in offsets.items():
                loose.setdefault(value, []).append((partition, offset))
        self.absent[topic] = [value for value in away if value not in loose]
        for value, places in loose.items():
            placed = self._at_send(topic, value)
            if placed is not None or len(places) > 1:  # stored more than once
                self.multi[(topic, value)] = places if placed is None else [placed, *places]

    def _at_send(self, topic: str, value: str) -> Where | None:
        """Where the value's expected send was acknowledged, if the record there holds it."""
        entry = self.expected.get(topic, {}).get(value)
        if entry is None or entry[1].partition is None or entry[1].offset is None:
            return None
        where = (entry[1].partition, entry[1].offset)
        offsets = self.by_topic.get(topic, {}).get(where[0], {})
        return where if offsets.get(where[1]) == value else None

    def holds(self, topic: str, value: str) -> bool:
        """Whether a record of the topic holds the value."""
        return value in self.loose.get(topic, ()) or self._at_send(topic, value) is not None

    def place(self, topic: str, value: str) -> Where:
        """One place of a value the topic holds: loose, else at its send's place."""
        places = self.loose[topic].get(value)
        return places[0] if places else cast(Where, self._at_send(topic, value))

    def _judge(self, topic: str, partitions: dict[int, dict[int, str]], sends: Sends) -> None:
        # A record tied to its send by the acked place: that send decides.
        tied: dict[Where, Op] = {}
        for partition, offsets in partitions.items():
            for offset, op in sends.at.get((topic, partition), {}).items():
                if offsets.get(offset, tied) == op.values[0]:
                    tied[(partition, offset)] = op
        for where, op in tied.items():
            if _send_rank(op, sends.fates) == ABORTED:
                self.aborted.append(_placed(op.values[0], topic, where, txn=op.txn))
        # Elsewhere the value's fate: never sent (to this topic, nor without one), failed, aborted.
        # A value never sent to the topic is at no send's place: it is loose.
        expected = sends.expected.get(topic, {})
        topicless = sends.expected.get(None, {})
        held = functools.partial(self.holds, topic)
        for value in chain(filterfalse(expected.__contains__, self.loose[topic]),
                           filter(held, sends.low.get(topic, ()))):
            fate = expected.get(value) or topicless.get(value)
            if fate is None and topic not in sends.topics or fate and fate[0] > ABORTED:
                continue
            for where in self.multi.get((topic, value)) or [self.place(topic, value)]:
                if fate is None:
                    self.unexpected.append(_placed(value, topic, where, why="never sent"))
                elif fate[0] == FAILED:
                    self.unexpected.append(_placed(value, topic, where, why="every send failed"))
                elif where not in tied:
                    self.aborted.append(_placed(value, topic, where, txn=fate[1].txn))


def _placed(value: str, topic: str, where: Where, **more: Any) -> Finding:
    return {"value": value, "topic": topic, "partition": where[0], "offset": where[1], **more}
