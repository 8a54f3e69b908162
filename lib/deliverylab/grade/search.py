"""Where the grader's crash lands, searched, not sampled; and how much a crash may redo.

A crash fault is worth only the moment it hits. A seeded random moment kept landing on
the same easy one (right after the first commit), so a loop that commits every other
batch, or one offset too early, passed. Here each exercise names the *boundaries* of a
student's run that matter -- the calls its student makes, in the order a correct loop
makes them (02: ``poll``, ``flush``, ``commit``) -- and the grader kills the student's
process right after the n-th call of each kind, for n over the first few batches
(:func:`crash_points`). The child counts the calls (:class:`CallCounter`), so the kill
lands by count, never by timing, and the report says where it landed in the student's
own words: "after your 2nd flush, before your 2nd offset commit".

:func:`redo_bound` is the exact bound on what a crash may redo: the values the killed
process polled since its last promise that was durable at the kill (a ``commit()`` it
made, or a ``store_offsets`` the group had committed by then) -- what was uncommitted at
the kill -- instead of a fixed tolerance that hid an off-by-one commit; and which of them
the group still owed the student (stored, not yet committed by auto-commit's timer).

Pure: no clients, no processes; unit-tested on hand-written events.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: How the report names each counted call, as the student wrote it.
LABELS = {
    "poll": "poll",
    "flush": "flush",
    "commit": "offset commit",
    "send_offsets": "send_offsets_to_transaction",
    "commit_transaction": "commit_transaction",
    "db_commit": "database commit",
    "http_call": "call to the payment service",
    "batch": "micro-batch",
}


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 21st."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    return f"{n}{ {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


@dataclass(frozen=True)
class CrashPoint:
    """Kill the student's process right after its ``n``-th call of ``kind`` returned."""

    kind: str
    n: int

    @property
    def name(self) -> str:
        """``flush#2``: how a replay command names it."""
        return f"{self.kind}#{self.n}"

    @classmethod
    def parse(cls, text: str) -> CrashPoint:
        kind, _, n = text.partition("#")
        if kind not in LABELS or not n.isdigit() or int(n) < 1:
            raise ValueError(f"crash point {text!r} is not accepted; expected KIND#N with "
                             f"KIND one of {', '.join(LABELS)} and N >= 1, e.g. flush#2")
        return cls(kind, int(n))

    def label(self) -> str:
        return f"after your {ordinal(self.n)} {LABELS[self.kind]}"


def crash_points(boundaries: Iterable[str], depth: int) -> list[CrashPoint]:
    """Every boundary over the first ``depth`` batches, in the order a run meets them:
    poll#1, flush#1, commit#1, poll#2, ..."""
    kinds = list(boundaries)
    for k in kinds:
        if k not in LABELS:
            raise ValueError(f"boundary {k!r} is not accepted; expected one of "
                             f"{', '.join(LABELS)}")
    return [CrashPoint(k, n) for n in range(1, depth + 1) for k in kinds]


class CallCounter:
    """Counts the student's calls of each boundary kind; says when the kill is due.

    ``cycle`` is the order a correct loop makes the calls in (it names "before your
    next ..." in :meth:`words`); ``point`` the crash to place (None: count only).
    """

    def __init__(self, cycle: Iterable[str] | None, point: CrashPoint | None = None) -> None:
        self.cycle = list(cycle or ())
        self.point = point
        self.counts: dict[str, int] = {k: 0 for k in self.cycle}

    def saw(self, kind: str) -> bool:
        """One more call of ``kind`` returned: True if the process must die now."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        p = self.point
        return p is not None and p.kind == kind and self.counts[kind] == p.n

    def words(self, kind: str, how: str = "") -> str:
        """Where the process is, in the student's words: "after your 2nd flush, before
        your 2nd offset commit" (the next kind of the cycle, counted as the student's
        run did: a loop that never flushes shows that too); ``how`` names the call that
        stood for the kind ("store_offsets, sent by auto-commit")."""
        text = f"after your {ordinal(self.counts.get(kind, 0))} {LABELS[kind]}"
        text += f" ({how})" if how else ""
        if kind in self.cycle and len(self.cycle) > 1:
            nxt = self.cycle[(self.cycle.index(kind) + 1) % len(self.cycle)]
            text += f", before your {ordinal(self.counts.get(nxt, 0) + 1)} {LABELS[nxt]}"
        return text

    def shortfall(self) -> str:
        """Why the planned crash never came (the run ended first), in one line."""
        p = self.point
        if p is None:
            return ""
        made = self.counts.get(p.kind, 0)
        return (f"the grader could not place its crash {p.label()}: your run made "
                f"{made} {LABELS[p.kind]} call{'s' if made != 1 else ''}")


#: Offsets per (topic, partition): what a commit or a ``store_offsets`` named, or what
#: the group had committed.
Offsets = dict[tuple[str, int], int]


def parse_offsets(text: str | None) -> Offsets:
    """The child's ``in/0@6,in/1@4`` (a commit's or a store's detail) as offsets.

    Kafka topic names hold no ``/``, ``@`` or ``,``; one clear line for anything else."""
    out: Offsets = {}
    for item in filter(None, (text or "").split(",")):
        where, _, offset = item.rpartition("@")
        topic, _, partition = where.rpartition("/")
        if not topic or not partition.isdigit() or not offset.lstrip("-").isdigit():
            raise ValueError(f"offsets {item!r} are not accepted; expected "
                             "TOPIC/PARTITION@OFFSET, e.g. in/0@6")
        out[(topic, int(partition))] = int(offset)
    return out


@dataclass(frozen=True)
class RedoBound:
    """What a crash of one process may redo, from its events and the group's offsets.

    ``allowed``: the values it polled after its last promise that was durable at the
    kill -- what was uncommitted then; any other value redone is beyond the bound.
    ``owed``: those of them a ``store_offsets`` of the student had covered (their offset
    below the one stored on their partition) while the group had not committed it by the
    kill: done, promised, and waiting for auto-commit's timer -- the library's debt, not
    the loop's, so they do not count against the one batch a crash may redo.
    """

    allowed: list[str]
    owed: list[str]


def redo_bound(events: list[dict[str, Any]], process: str,
               committed: Offsets | None = None) -> RedoBound:
    """The exact bound on what a crash of ``process`` may redo (:class:`RedoBound`).

    A *promise* is the student's word that everything it polled so far is done: a
    ``commit`` it made (the child makes every ``commit()`` synchronous, so a commit
    recorded ok had reached the broker when the call returned), or a ``store_offsets``
    whose offsets the group had committed by the kill (``committed``: the group's
    offsets read right after the kill, before the successor starts; None: nothing
    read, every store still owed). A promise is placed by time, not by its offsets: a
    value polled before it and redone by the successor was committed one offset short,
    or only on another partition -- beyond the bound.

    A store is judged by the broker, not by the ``on_commit`` reports of auto-commit:
    librdkafka's timer commits in its own thread some time after the store, and its
    report reaches the loop behind the messages already fetched, during a later
    ``consume()`` -- several batches later, or never when the kill comes first. Placed
    at its own time, a report would cover batches polled after the commit it reports
    (a correct loop failed); the group's offsets at the kill are exactly where the
    successor resumes. Those reports are no promise of the loop's (with librdkafka's
    own offset store they commit what was fetched, done or not).
    """
    got = committed or {}
    mine = sorted((e for e in events if e.get("process") == process), key=lambda e: e["t"])
    since: list[tuple[str, tuple[str, int] | None, int]] = []
    owed: set[str] = set()
    for e in mine:
        kind, ok = e["kind"], e.get("outcome", "ok") == "ok"
        if kind == "poll":
            tp = (e["topic"], e["partition"]) if e.get("partition") is not None else None
            since += [(v, tp, e.get("offset", -1)) for v in e.get("values") or [] if v]
        elif kind == "commit" and ok and e.get("how") != "auto":
            since, owed = [], set()
        elif kind == "store_offsets" and ok and (stored := parse_offsets(e.get("detail"))):
            if all(got.get(tp, -1) >= o for tp, o in stored.items()):
                since, owed = [], set()  # the group had it: a promise kept
            else:  # promised, and the timer had not committed it when the process died
                owed |= {v for v, tp, off in since if tp in stored and off < stored[tp]}
    return RedoBound([v for v, _, _ in since], [v for v, _, _ in since if v in owed])


def redo_allowed(events: list[dict[str, Any]], process: str,
                 committed: Offsets | None = None) -> list[str]:
    """The values ``process`` polled after its last durable promise: what a crash of it
    may redo (:func:`redo_bound`)."""
    return redo_bound(events, process, committed).allowed


def redone_values(output: Iterable[str]) -> list[str]:
    """Values that appear more than once in the output, in first-seen order."""
    seen: dict[str, int] = {}
    for v in output:
        seen[v] = seen.get(v, 0) + 1
    return [v for v, n in seen.items() if n > 1]


def redo_beyond(redone: Iterable[str], allowed: Iterable[str]) -> list[str]:
    """The redone values the crash had no right to redo (committed before the kill)."""
    ok = set(allowed)
    return [v for v in redone if v not in ok]


#: The overlap fault (the registry's): a first instance of the student's handler is
#: stopped right before its first database write of a message, a successor takes the
#: group's partitions and handles the same messages, then the first one resumes
#: (:class:`deliverylab.grade.stall.Stall`, :meth:`deliverylab.grade.runner.Stage.overlap`).
STALL = "stall_consumer"

#: 04's overlap fault (the registry's): a first instance of the student's transaction
#: loop is held, then stopped, right before its n-th ``commit_transaction``; a successor
#: with the same ``transactional.id`` fences it and finishes the input; then it resumes,
#: a zombie (:class:`deliverylab.grade.stall.TxnStall`).
ZOMBIE = "zombie_producer"

#: The statements that write rows (a ``WITH`` clause may lead any of them).
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")


def writes(sql: str) -> bool:
    """Does this SQL text (one statement, or an ``executescript`` script) write rows?

    Where the overlap fault stalls a handler: right before its first write of the
    message, after whatever it read to decide (:mod:`deliverylab.grade.child`). Read by
    each statement's first keyword, past any ``--`` comment, so that a read that merely
    names a write's keyword (``SELECT replace(...)``) is no write."""
    for statement in str(sql).split(";"):
        lines = [ln.split("--", 1)[0] for ln in statement.splitlines()]
        words = " ".join(lines).replace("(", " ").split()
        if not words:
            continue
        first = words[0].upper()
        if first in WRITES or (first == "WITH" and any(w.upper() in WRITES
                                                        for w in words)):
            return True
    return False


def _ends(statement: str) -> str:
    """"commit", "rollback" or "" for one SQL statement's text."""
    words = statement.strip().rstrip(";").split()
    first = words[0].upper() if words else ""
    if first in ("COMMIT", "END"):
        return "commit"
    if first == "ROLLBACK" and not (len(words) > 1 and words[1].upper() == "TO"):
        return "rollback"
    return ""


def db_commit(statements: Iterable[str], in_transaction: bool, total_changes: int,
              committed_changes: int) -> tuple[bool, int]:
    """Did the student's database just make writes durable, however it did it?

    ``statements`` are the SQL texts the connection ran since the last look (sqlite3's
    trace callback sees ``with db:``'s and ``db.commit()``'s ``COMMIT`` as well as the
    student's own ``COMMIT``/``END``); ``total_changes`` the connection's count of rows
    written, ``committed_changes`` its value at the last commit. A commit is the moment
    the connection is out of any transaction with rows written since the last one and
    not rolled back -- so a transaction that only read counts for nothing, and an
    autocommit ``INSERT`` counts as the commit it is. Returns (committed, the new
    ``committed_changes``).
    """
    if in_transaction or total_changes == committed_changes:
        return False, committed_changes
    last = ""
    for s in statements:
        last = _ends(s) or last
    return last != "rollback", total_changes
