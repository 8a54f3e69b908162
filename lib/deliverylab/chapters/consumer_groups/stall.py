"""Chapter 02b's stall: one consumer of a group stalls past ``max.poll.interval.ms``.

The choreography of the chapter's first run, on the vocabulary (``Pipeline``, the
History, ``pending_count``): two instances of one processing stage, one of which stops
polling after it processed a batch and before it committed it. Its client leaves the
group, the other instance is handed every partition and starts from the last committed
offsets (so it processes the batch again), and the late commit of the woken instance is
refused: its generation of the group is gone. Chapter 02 (``02_at_least_once``) shows
the same redelivery after a crash; this is the group's side of it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from ... import values as V
from ...errors import LabError, bad_value
from ...history import History
from ...modes import DeliveryMode
from ...modes import mode as get_mode
from ...readers import pending_count
from ...waiting import wait_until
from ...workload import Pipeline, PipelineReport


@dataclass
class Takeover:
    """Evidence of one stall: who processed what, and whose commit was refused."""

    stalled: PipelineReport
    successor: PipelineReport
    stall: dict[str, Any]
    max_poll_seconds: float
    redone: list[str]
    commit_errors: list[str]

    @property
    def rejected_commits(self) -> int:
        return self.stalled.rejected_commits

    def __str__(self) -> str:
        return (f"{self.stalled.process} processed {self.stalled.processed} values, then "
                f"stalled {self.stall['end'] - self.stall['time']:.1f} s (max.poll.interval "
                f"{self.max_poll_seconds:g} s); {self.successor.process} took over and "
                f"processed {self.successor.processed}; {len(self.redone)} values were "
                f"processed by both; {self.rejected_commits} late commit(s) of "
                f"{self.stalled.process} rejected ({', '.join(self.commit_errors) or '-'})")


def stall_takeover(cluster: Any, source: str, sink: str, mode: DeliveryMode | str,
                   history: History, group: str, stall_after: int,
                   stall_seconds: float | None = None, timeout: float = 120.0) -> Takeover:
    """Stall one processing instance past ``max.poll.interval.ms``; another takes over.

    Instance A (``pipeline-A``) runs in a thread and, at the batch holding its
    ``stall_after``-th value, has written that batch to ``sink`` and then stalls for
    ``stall_seconds`` before committing (a long GC pause, a slow call). Its consumer
    stops polling, so after ``max.poll.interval.ms`` the client leaves the group. Once
    A is stalled, instance B (``pipeline-B``) joins the same ``group``; it gets every
    partition as soon as A is gone and starts from the last *committed* offsets, so it
    processes A's uncommitted batch again. When A wakes up, its commit is refused: the
    partitions are no longer its own.
    """
    mode = get_mode(mode)
    if mode.commit != "after":
        raise bad_value("mode", mode.name, "a mode that commits after processing "
                        "(AT_LEAST_ONCE or IDEMPOTENT)")
    max_poll = int(mode.consumer.get("max.poll.interval.ms", 300000)) / 1000
    stall_seconds = max_poll + 4 if stall_seconds is None else stall_seconds
    if stall_seconds <= max_poll:
        raise bad_value("stall_seconds", stall_seconds,
                        f"more than max.poll.interval.ms ({max_poll:g} s), or no one notices")
    a = Pipeline(cluster, source, sink, mode, history, group=group, process="pipeline-A")
    b = Pipeline(cluster, source, sink, mode, history, group=group, process="pipeline-B")
    errors: list[BaseException] = []

    def run_a() -> None:
        try:
            a.run(expected=stall_after, stall_after=stall_after, stall_seconds=stall_seconds,
                  idle_timeout=30)
        except BaseException as exc:  # re-raised below
            errors.append(exc)

    thread = threading.Thread(target=run_a, name="pipeline-A", daemon=True)
    thread.start()
    end = time.monotonic() + timeout
    wait_until(f"pipeline-A to process {stall_after} values (its stall)",
               lambda: a.report.processed >= stall_after or not thread.is_alive(), timeout,
               interval=0.05, explain=lambda: f"; it processed {a.report.processed}")
    if errors:
        raise errors[0]
    if a.report.processed < stall_after:
        raise LabError(f"pipeline-A ended after {a.report.processed} values, before its "
                       f"stall at {stall_after}: does {source!r} hold enough values?")
    t_stall = history.now()
    # B is done when it has processed what the group has not committed yet (its own
    # "caught up" test waits for partitions it never reads from, so tell it the count).
    b.run(expected=pending_count(cluster, group, source),
          idle_timeout=stall_seconds + max_poll + 15)
    thread.join(max(1.0, end - time.monotonic()) + stall_seconds)
    if thread.is_alive():
        raise LabError("pipeline-A did not wake up from its stall")
    if errors:
        raise errors[0]
    commit_ops = [op for op in history if op.process == "pipeline-A" and op.kind == "commit"
                  and op.outcome == "fail"]
    t_wake = commit_ops[-1].time if commit_ops else history.now()
    redone = sorted(set(a.report.values) & set(b.report.values), key=V.parse)
    return Takeover(a.report, b.report,
                    {"name": "pipeline-A stalls", "time": t_stall, "end": t_wake},
                    max_poll, redone, sorted({op.error or "?" for op in commit_ops}))
