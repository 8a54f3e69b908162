"""The one wait of the package: poll a probe until it holds, or raise naming what never did.

Every part of the lab waits for something -- a broker to start, a leader, a container to
freeze, a Connect task to move, a service to answer, a child process to reach a batch.
Written by hand each time, such a loop drifts: one returns ``None`` on timeout and the
caller reads on with half the data, one forgets to look whether the process it waits on
has died, one says "timed out" without saying waiting for what. Here it is written once:
:func:`wait_until` polls, raises :class:`~deliverylab.errors.TimedOut` (or a subclass the
caller names, e.g. ``ClusterNotReady``) naming what was awaited, what the last look saw
and how long it waited, and asks the caller's ``check`` every round, so a death is
reported as a death rather than as a timeout.

It sits with the ground vocabulary (it imports only ``errors``), so any module may use it
without reaching into a wing. ``tests/unit/test_layout.py`` checks that no other module,
test or bench writes a wait loop of its own: a ``while`` loop that sleeps
(``time.sleep``, an event's ``wait(timeout)``) or reads a clock, or a ``for`` loop that
sleeps (named allow-lists hold the loops that do work each round, such as reading
records until an end).
:func:`verdict_within` is the same wait for a caller to whom running out of time is an
answer, not an error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .errors import TimedOut


class Deadline:
    """One timeout shared by several waits, so e.g. ``ready_timeout`` means what it says."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self, cap: float = 30.0) -> float:
        return max(0.1, min(cap, self.end - time.monotonic()))

    def expired(self) -> bool:
        return time.monotonic() >= self.end


def wait_until(what: str, probe: Callable[[], Any], deadline: Deadline | float,
               check: Callable[[], object] = lambda: None, interval: float = 0.25,
               explain: Callable[[], str] | None = None, *,
               retry: tuple[type[BaseException], ...] = (),
               error: type[TimedOut] = TimedOut) -> Any:
    """Poll ``probe`` until it returns something truthy, and return that.

    ``what`` names the awaited condition (``"a leader of t/0 other than 1"``); the
    timeout's message says it, so a stuck failover is not reported as a start-up
    problem. ``deadline`` is a :class:`Deadline` shared by several waits, or seconds.
    ``check`` is called first every round and raises if what is waited on died (a node,
    a child process). ``retry`` lists the exceptions of ``probe`` that mean "not yet"
    (a cluster's ``KafkaException`` while it starts); the last one is named on timeout,
    any other propagates at once. ``explain`` is asked only on timeout, for what the
    last look saw or the cause when there is one to name: it returns ``""`` or text
    starting with ``;`` or `` (``. The probe is asked at least once, even for a deadline
    already past. A probe whose answer may be falsy returns it in a 1-tuple.
    """
    if not isinstance(deadline, Deadline):
        deadline = Deadline(deadline)
    started = time.monotonic()
    last_error: BaseException | None = None
    while True:
        check()
        try:
            result = probe()
            if result:
                return result
        except retry as exc:  # not there yet
            last_error = exc
        if deadline.expired():
            why = f" (last error: {last_error})" if last_error is not None else ""
            cause = explain() if explain is not None else ""
            seen = cause.lstrip(" ;(").rstrip(")") if cause else str(last_error or "")
            raise error(f"timed out after {deadline.seconds:g}s waiting for {what}{why}{cause}",
                        what=what, last_seen=seen, waited=time.monotonic() - started)
        time.sleep(interval)


def verdict_within(what: str, probe: Callable[[], Any], deadline: Deadline | float,
                   **how: Any) -> bool:
    """Whether ``probe`` held within ``deadline``: :func:`wait_until` for a caller to
    whom running out of time is itself the answer (a fault asks whether a node froze and
    names it if not; a recipe asks whether a client got that far and says so).

    A probe may end the wait early with a falsy verdict in a 1-tuple, as
    :func:`wait_until` allows (``(False,)``: the container is gone, it will never
    freeze). ``how`` are :func:`wait_until`'s other arguments (``interval``, ``retry``...).
    """
    try:
        answer = wait_until(what, probe, deadline, **how)
    except TimedOut:
        return False
    return bool(answer[0] if isinstance(answer, tuple) and len(answer) == 1 else answer)
