"""The overlap faults in the student's process: where a first instance stops while a
successor takes its place (:meth:`deliverylab.grade.runner.Stage.overlap` runs both).

Two instances of one stage at once is what a crash never shows: the first is not dead,
only stopped, and it comes back. Each exercise stops it where coming back can hurt:

- 06 (:data:`~deliverylab.grade.search.STALL`, :class:`Stall`): a handler stops right
  before its first database write of a message, after whatever it read to decide; its
  successor handles the same message meanwhile.
- 04 (:data:`~deliverylab.grade.search.ZOMBIE`, :class:`TxnStall`): a transaction loop
  stops right before its n-th ``commit_transaction``, its batch written and its offsets
  sent, the transaction open. Its successor's ``init_transactions`` (same
  ``transactional.id``) aborts that transaction and fences the producer, its consumer
  takes the group's partitions (same ``group.instance.id``) from the committed offsets
  and finishes the input; then the first resumes, a zombie: its commit is refused with a
  fatal error (``_FENCED``: KIP-98's epoch), which only stopping answers. Before the
  pause the loop's own thread is held a while, librdkafka's threads running on -- a slow
  call turning into a frozen process -- so that whatever the consumer does on its own
  (auto-commit's timer committing what the loop has fetched, inside the open
  transaction) happens, as it would in production.

Both stall by count (the student's calls), never by time; only the hold is a time, and
it is the consumer's own: one auto-commit interval and a margin (:func:`hold_seconds`).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

from .search import STALL, ZOMBIE, ordinal, writes

#: The hold before a transaction loop's pause when its consumer has no timer of its own
#: that could commit (no auto-commit): librdkafka's default auto-commit interval and the
#: most a hold lasts (below the mode's ``max.poll.interval.ms``, 10 s, past which the
#: consumer would leave the group on its own: a different fault).
HOLD_MIN = 0.5
AUTO_COMMIT_INTERVAL_MS = 5000
HOLD_CAP = 8.0


def hold_seconds(consumer_conf: dict[str, Any]) -> float:
    """How long :class:`TxnStall` holds the loop's thread before the pause: long enough
    for auto-commit's timer to fire once (its interval and 1 s), when the student's
    consumer commits on its own; :data:`HOLD_MIN` otherwise. Capped at :data:`HOLD_CAP`.
    Pure: unit-tested."""
    auto = str(consumer_conf.get("enable.auto.commit", True)).lower() in ("true", "1")
    if not auto:
        return HOLD_MIN
    interval = consumer_conf.get("auto.commit.interval.ms", AUTO_COMMIT_INTERVAL_MS)
    try:
        seconds = float(interval) / 1000 + 1.0
    except (TypeError, ValueError):  # librdkafka refused it at Consumer(): never here
        seconds = AUTO_COMMIT_INTERVAL_MS / 1000 + 1.0
    return min(max(seconds, HOLD_MIN), HOLD_CAP)


class Stall:
    """06's overlap fault (:data:`~deliverylab.grade.search.STALL`): this process stops
    (``SIGSTOP``, heartbeats too, as in a long GC pause) right before the student's first
    database write of its ``n``-th message, after whatever the handler read; by count,
    never by time. The parent starts a successor that takes the partitions and handles
    the same messages, then resumes this one (``SIGCONT``): it finishes that call, its
    offset commit is refused, and it ends (:func:`~deliverylab.grade.child.run_handler`)."""

    def __init__(self, events: Any, n: int = 1) -> None:
        self.events, self.n, self.fired = events, n, False

    def before(self, count: int, message: str | None, sql: Any) -> None:
        """Before each statement of the student's: stop here if it is the planned write."""
        if self.fired or count != self.n or not writes(sql):
            return
        self.fired, words = True, (f"stalled before your first database write for message "
                                   f"#{count}, while a successor took the group's "
                                   "partitions and handled the same messages")
        self.events.write("fault", fault=STALL, outcome="info", message=message,
                          words=words, detail=f"{self.events.process} is SIGSTOPped {words}")
        os.kill(os.getpid(), signal.SIGSTOP)
        self.events.write("resumed", message=message, detail="resumed (SIGCONT)")


class TxnStall:
    """04's overlap fault (:data:`~deliverylab.grade.search.ZOMBIE`): right before the
    student's ``n``-th ``commit_transaction`` call, hold the loop's thread ``hold``
    seconds (librdkafka's threads run on), then stop the whole process (``SIGSTOP``).
    The parent starts a successor and resumes this one (``SIGCONT``) once the successor
    has ended; the commit it then makes is refused (the module's doc)."""

    def __init__(self, events: Any, n: int = 2, hold: float = HOLD_MIN) -> None:
        self.events, self.n, self.hold, self.fired = events, n, hold, False

    def before(self, kind: str, count: int) -> None:
        """Before the student's ``count``-th call of ``kind``: stall if it is the plan's."""
        if self.fired or kind != "commit_transaction" or count != self.n:
            return
        self.fired = True
        self.events.write("held", detail=f"{self.events.process}'s loop is held "
                          f"{self.hold:.1f} s before its {ordinal(count)} "
                          "commit_transaction (librdkafka's threads run on)")
        time.sleep(self.hold)  # one hold, no loop: the consumer's timers do their work
        words = (f"stalled before your {ordinal(count)} commit_transaction (its batch "
                 f"written, the transaction open) for {self.hold:.1f} s, then paused while "
                 "a successor fenced your producer, took the group's partitions from "
                 "their committed offsets and finished the input; then resumed")
        self.events.write("fault", fault=ZOMBIE, outcome="info", words=words,
                          detail=f"{self.events.process} is SIGSTOPped {words}")
        os.kill(os.getpid(), signal.SIGSTOP)
        self.events.write("resumed", detail="resumed (SIGCONT): a zombie now")
