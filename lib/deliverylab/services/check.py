"""The checker of chapter 06: duplicate rows, duplicate calls, duplicate effects.

Pure functions over what the database holds, what the HTTP service logged and what the
instances recorded -- no cluster, no database here, so they are unit-tested on
hand-written evidence. A *call* is a request that reached the service; an *effect* is a
call the service applied (a repeat of a known idempotency key is a call, not an
effect). Duplicates are counted as extra copies: three rows of one message are two
duplicate rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checker import extra_copies
from ..history import Op


def twice(ids: Iterable[str]) -> list[str]:
    """The ids seen more than once, sorted."""
    return sorted(i for i, n in Counter(ids).items() if n > 1)


@dataclass
class Effects:
    """What one run of one pattern did to the world outside Kafka, counted."""

    pattern: str
    messages: int  # distinct message ids in the input
    rows: int
    duplicate_rows: int
    missing_rows: int
    calls: int
    duplicate_calls: int
    effects: int
    duplicate_effects: int
    missing_effects: int
    redelivered: int  # message ids handed to an instance more than once
    input_copies: int  # extra copies of messages in the input topic (producer duplicates)
    faults: list[str] = field(default_factory=list)
    rejected_commits: int = 0
    twice_rows: list[str] = field(default_factory=list)
    twice_effects: list[str] = field(default_factory=list)

    @property
    def duplicates(self) -> int:
        """Duplicate rows plus duplicate effects: what the fixes bring to zero."""
        return self.duplicate_rows + self.duplicate_effects

    def summary(self) -> str:
        fired = ", ".join(self.faults) or "no fault"
        return (f"{self.pattern}: {self.messages} messages, {fired}; "
                f"{self.rows} rows ({self.duplicate_rows} duplicate, {self.missing_rows} "
                f"missing), {self.calls} HTTP calls ({self.duplicate_calls} duplicate), "
                f"{self.effects} effects ({self.duplicate_effects} duplicate); "
                f"{self.redelivered} message(s) redelivered, {self.rejected_commits} "
                "commit(s) refused")

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__} | {
            "duplicates": self.duplicates}


def count_effects(pattern: str, input_ids: Iterable[str], rows: Iterable[str],
                  calls: Iterable[Mapping[str, Any]], ops: Iterable[Op]) -> Effects:
    """Count one pattern's side effects.

    ``input_ids``: the message id of every record in the input topic (a producer
    duplicate appears twice); ``rows``: the message id of every database row the run
    wrote; ``calls``: the HTTP service's log records of the run (``message_id``,
    ``effect``); ``ops``: the instances' ops (``poll``, ``fault``, ``commit``).
    """
    input_ids = list(input_ids)
    rows = list(rows)
    calls = list(calls)
    ops = list(ops)
    wanted = set(input_ids)
    called = [c["message_id"] for c in calls]
    applied = [c["message_id"] for c in calls if c.get("effect")]
    polled = [v for op in ops if op.kind == "poll" for v in op.values]
    return Effects(
        pattern=pattern, messages=len(wanted),
        rows=len(rows), duplicate_rows=extra_copies(rows), missing_rows=len(wanted - set(rows)),
        calls=len(called), duplicate_calls=extra_copies(called),
        effects=len(applied), duplicate_effects=extra_copies(applied),
        missing_effects=len(wanted - set(applied)),
        redelivered=len(twice(polled)), input_copies=extra_copies(input_ids),
        faults=[op.fault for op in ops if op.kind == "fault" and op.fault],
        rejected_commits=sum(1 for op in ops if op.kind == "commit" and op.outcome == "fail"),
        twice_rows=twice(rows), twice_effects=twice(applied))
