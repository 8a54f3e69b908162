"""What the child that runs a student's code writes, and the one event that ends it.

Why a module of its own: the child's wrappers (the consumer, the producer, the database)
all write to one events file and all count their calls toward one searched crash point;
both live here, below the wrappers, so that each wrapper's module imports them and none
imports another's. The parent reads the file back as History ops
(:func:`deliverylab.grade.runner.to_history`).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from ..history import JsonLines
from ..values import decode
from .search import CallCounter, CrashPoint


class Events:
    """The run's events file, one line per event (``t``: ``time.monotonic()``), written
    through :class:`~deliverylab.history.JsonLines`, so a SIGKILL loses none."""

    def __init__(self, path: str, process: str) -> None:
        self.log, self.process = JsonLines(path), process

    def write(self, kind: str, **fields: Any) -> None:
        self.log.append({"t": time.monotonic(), "process": self.process, "kind": kind, **fields})


def value_text(raw: bytes | str | None) -> str | None:
    try:
        return str(decode(raw)) if raw is not None else None
    except ValueError:
        return None


class KillPlan:
    """The searched crash: SIGKILL right after the student's n-th call of one kind.

    Every boundary call the student makes is counted (:class:`~deliverylab.grade.search.
    CallCounter`), whether or not this run kills there, so that the end of a run can
    say how far the student's code got, and the kill names its place in their words."""

    def __init__(self, events: Events, point: CrashPoint | None = None,
                 cycle: tuple[str, ...] | list[str] = (), fault: str = "crash_consumer") -> None:
        self.events, self.fault = events, fault
        self.counter = CallCounter(cycle, point)
        #: Auto-commit is on, and how many times the loop stored offsets: with auto-commit
        #: a store is the loop's offset commit (the timer sends what was stored), counted
        #: when the call returns; the timer's reports are then no boundary of the loop's
        #: (they reach it behind the messages fetched before them, batches late).
        self.auto_commit = False
        self.stores, self.stored = 0, {}  # and the last stored: what the timer commits

    def after(self, kind: str, how: str = "") -> None:
        """One call of ``kind`` returned: die now if this is the planned point."""
        if self.counter.saw(kind):
            words = self.counter.words(kind, how)
            self.events.write("fault", fault=self.fault, outcome="info",
                              point=self.counter.point.name if self.counter.point else None,
                              words=words,
                              detail=f"{self.events.process} is SIGKILLed {words}")
            os.kill(os.getpid(), signal.SIGKILL)


