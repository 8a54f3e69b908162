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
  pause the loop's own thread is held, librdkafka's threads running on -- a slow call
  turning into a frozen process -- so that what the consumer does on its own happens,
  as it would in production: when it auto-commits, until its timer has committed what
  it has to (:class:`TimerCommit`: the loop's position, or what it stored), inside the
  open transaction.

Both stall by count (the student's calls), never by time. The hold waits for an event
too, the group's offsets reaching what the timer commits, capped at :data:`HOLD_CAP`;
only a consumer with no timer of its own is held a fixed :data:`HOLD_MIN`.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from ..clients import config
from ..waiting import Deadline, verdict_within
from .search import STALL, ZOMBIE, ordinal, writes

#: The hold before a transaction loop's pause when its consumer has no timer of its own
#: that could commit (no auto-commit), and the most a wait for the timer lasts: below
#: the mode's ``max.poll.interval.ms`` (10 s), past which the consumer would leave the
#: group on its own (a different fault), and above librdkafka's default auto-commit
#: interval (5 s), so a timer that fires at all fires within it.
HOLD_MIN = 0.5
HOLD_CAP = 8.0
#: Seconds of each read of the group's offsets during the hold (a read that times out
#: is one more round of the wait, not its end).
READ_WITHIN = 2.0

Offsets = dict[tuple[str, int], int]


def _on(conf: dict[str, Any], key: str) -> bool:
    """A librdkafka boolean as the student may write it (``True``, ``"true"``, ``1``);
    unset is librdkafka's default, on (for both keys this module asks)."""
    return str(conf.get(key, True)).lower() in ("true", "1")


def auto_commits(consumer_conf: dict[str, Any]) -> bool:
    """Does the consumer commit on its own (librdkafka's auto-commit timer)?"""
    return _on(consumer_conf, "enable.auto.commit")


class GroupOffsets:
    """The group's committed offsets, read through a handle of the lab's own.

    Not the student's consumer's ``committed()``: that consumer is read_committed, so
    librdkafka asks for *stable* offsets (KIP-447's ``require_stable``), and while the
    held transaction's offsets are pending the broker answers UNSTABLE_OFFSET_COMMIT,
    which librdkafka retries until the call times out -- for the whole hold. This
    consumer carries the group's id, never subscribes (it joins nothing, takes no
    partition) and reads read_uncommitted: the offsets committed, pending ones aside.
    Opened at the first read, closed by :meth:`close` (before the process stops)."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self.conf = config(bootstrap, **{"group.id": group, "enable.auto.commit": False,
                                         "isolation.level": "read_uncommitted"})
        self._consumer: Consumer | None = None

    def __call__(self, partitions: list[TopicPartition],
                 timeout: float = READ_WITHIN) -> list[TopicPartition]:
        if self._consumer is None:
            self._consumer = Consumer(self.conf)
        return self._consumer.committed(partitions, timeout=timeout)

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()  # never subscribed: no rebalance to wait on


class TimerCommit:
    """What the consumer's auto-commit timer has to commit, and whether the group has
    it: the event the zombie's hold waits for.

    The timer commits the consumer's *stored* offsets: by librdkafka's default
    (``enable.auto.offset.store``) one past each message ``consume()`` handed over, the
    consumer's position; with the store left to the loop, what it stored (``stored``,
    kept by the child's ``store_offsets``). Both are read on the loop's own thread, the
    one held (``position()`` and ``assignment()`` are local to librdkafka). The group's
    offsets are read by ``committed``, a :class:`GroupOffsets` or a stand-in."""

    def __init__(self, consumer: Any,
                 committed: Callable[[list[TopicPartition], float], list[TopicPartition]],
                 stored: Offsets | None = None) -> None:
        self.consumer, self.committed, self.stored = consumer, committed, stored
        self.last: Offsets = {}

    def due(self) -> Offsets:
        """The offsets the timer is to commit, per partition (none: nothing consumed)."""
        if self.stored is not None:
            return dict(self.stored)
        return {(tp.topic, tp.partition): tp.offset for tp in
                self.consumer.position(self.consumer.assignment()) if tp.offset >= 0}

    def covered(self, due: Offsets, timeout: float = READ_WITHIN) -> bool:
        """Has the group committed ``due`` (or past it) on every partition?"""
        if not due:
            return True
        got = self.committed([TopicPartition(t, p) for t, p in sorted(due)], timeout)
        self.last = {(tp.topic, tp.partition): tp.offset for tp in got if not tp.error}
        return all(self.last.get(k, -1) >= offset for k, offset in due.items())

    def wait(self, due: Offsets, cap: float = HOLD_CAP) -> bool:
        """Wait until the group has ``due``; False if ``cap`` seconds passed first (a
        loop whose timer never commits it: the stall goes on, and says so)."""
        deadline = Deadline(cap)
        return verdict_within(f"the auto-commit timer to commit {_text(due)}",
                              lambda: self.covered(due, deadline.left(READ_WITHIN)),
                              deadline, interval=0.1, retry=(KafkaException,))

    def close(self) -> None:
        close = getattr(self.committed, "close", None)
        if callable(close):
            close()


def timer_commit(consumer: Any, bootstrap: str, consumer_conf: dict[str, Any],
                 stored: Offsets) -> TimerCommit | None:
    """The timer the zombie's hold waits for, if the student's consumer has one: it
    commits the position, or -- ``enable.auto.offset.store`` off -- ``stored``."""
    if not auto_commits(consumer_conf):
        return None
    return TimerCommit(consumer, GroupOffsets(bootstrap, consumer_conf["group.id"]),
                       None if _on(consumer_conf, "enable.auto.offset.store") else stored)


def _text(offsets: Offsets) -> str:
    return ",".join(f"{t}/{p}@{o}" for (t, p), o in sorted(offsets.items())) or "nothing"


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
    student's ``n``-th ``commit_transaction`` call, hold the loop's thread (librdkafka's
    threads run on) -- until the consumer's auto-commit timer has committed what it has
    to (``timer``, capped at :data:`HOLD_CAP`), or :data:`HOLD_MIN` with no timer --
    then stop the whole process (``SIGSTOP``). The parent starts a successor and resumes
    this one (``SIGCONT``) once the successor has ended; the commit it then makes is
    refused (the module's doc)."""

    def __init__(self, events: Any, n: int = 2, timer: TimerCommit | None = None) -> None:
        self.events, self.n, self.timer, self.fired = events, n, timer, False

    def hold(self, count: int) -> tuple[float, str]:
        """Hold the loop's thread; returns the seconds held and what ended the hold:
        ``committed`` (the timer's commit landed), ``cap`` or ``no_timer``."""
        started = time.monotonic()
        if self.timer is None:
            self.events.write("held", detail=f"{self.events.process}'s loop is held "
                              f"{HOLD_MIN:.1f} s before its {ordinal(count)} "
                              "commit_transaction (no auto-commit: librdkafka's threads "
                              "run on)")
            time.sleep(HOLD_MIN)  # one hold, no loop: nothing of the consumer's to await
            return time.monotonic() - started, "no_timer"
        try:
            due = self.timer.due()
            self.events.write("held", awaited=_text(due), detail=(
                f"{self.events.process}'s loop is held before its {ordinal(count)} "
                f"commit_transaction until the auto-commit timer has committed "
                f"{_text(due)} (at most {HOLD_CAP:.0f} s)"))
            landed = self.timer.wait(due, HOLD_CAP)
        finally:
            self.timer.close()
        return time.monotonic() - started, "committed" if landed else "cap"

    def before(self, kind: str, count: int) -> None:
        """Before the student's ``count``-th call of ``kind``: stall if it is the plan's."""
        if self.fired or kind != "commit_transaction" or count != self.n:
            return
        self.fired = True
        held, ended = self.hold(count)
        words = (f"stalled before your {ordinal(count)} commit_transaction (its batch "
                 f"written, the transaction open) for {held:.1f} s, then paused while "
                 "a successor fenced your producer, took the group's partitions from "
                 "their committed offsets and finished the input; then resumed")
        seen = (f"; the group's offsets then: {_text(self.timer.last)}"
                if self.timer is not None else "")
        self.events.write("fault", fault=ZOMBIE, outcome="info", words=words,
                          held_s=round(held, 3), hold=ended,
                          detail=f"{self.events.process} is SIGSTOPped {words} (the hold "
                          f"ended: {ended}{seen})")
        os.kill(os.getpid(), signal.SIGSTOP)
        self.events.write("resumed", detail="resumed (SIGCONT): a zombie now")
