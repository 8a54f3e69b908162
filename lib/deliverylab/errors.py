"""Errors a student can act on.

Every error the lab raises on purpose derives from ``LabError`` and says, in one line,
what went wrong and what to do; where a broker is involved the path of its log is kept
on the exception so a notebook can show it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec

P = ParamSpec("P")


class LabError(RuntimeError):
    """Base class: the message is meant to be read by a person, not parsed."""

    def __init__(self, message: str, log: Path | None = None, log_tail: str = "") -> None:
        self.log = log
        self.log_tail = log_tail
        text = message
        if log is not None:
            text += f" (broker log: {log})"
        if log_tail:
            text += "\n--- last lines of the broker log ---\n" + log_tail
        super().__init__(text)


class JavaNotFound(LabError):
    """No usable Java runtime (missing, or older than Kafka needs)."""


class JarsUnavailable(LabError):
    """The Kafka broker or Spark connector jars could not be found or fetched."""


class PortTaken(LabError):
    """A port the cluster was asked to use is already bound by another process."""


class BrokerExited(LabError):
    """A broker process died while the cluster was starting or was expected to run."""


class TimedOut(LabError):
    """A condition the lab waited for never held in time (``waiting.wait_until`` raises
    it): ``what`` names the condition, ``last_seen`` what the last look found (the
    probe's last error or the waiter's account of the state), ``waited`` the seconds
    waited. A program can tell a wait that ran out from a refusal without parsing text."""

    def __init__(self, message: str, log: Path | None = None, log_tail: str = "", *,
                 what: str = "", last_seen: str = "", waited: float = 0.0) -> None:
        self.what = what
        self.last_seen = last_seen
        self.waited = waited
        super().__init__(message, log, log_tail)


class ClusterNotReady(TimedOut):
    """A condition the lab waited for (readiness, a leader, the ISR) never held in time;
    the message names it, and the cause when known (e.g. no controller quorum)."""


class BadValue(LabError, ValueError):
    """An argument outside what the lab accepts; the message names both."""


def bad_value(name: str, value: object, accepted: str) -> BadValue:
    """Build the one message shape used for bad input: the value and what is accepted."""
    return BadValue(f"{name}={value!r} is not accepted; expected {accepted}")


class QuorumLost(LabError):
    """A fault was refused because it would leave the KRaft controller quorum without a
    majority (no elections, no new leaders): the message names the voters."""


class QuorumWarning(UserWarning):
    """A fault took the controller quorum away, as asked: failovers wait until it is back."""


def command_failed(name: str, exc: Exception, code: int = 1) -> int:
    """Say why a command-line run failed, in one line on stderr (``name: message``), and
    give its exit code: a person at a terminal reads the lab's message, not a traceback."""
    print(f"{name}: {exc}", file=sys.stderr)
    return code


def command(name: str, code: int = 1) -> Callable[[Callable[P, int]], Callable[P, int]]:
    """Wrap a ``main()`` whose every ``LabError`` ends the run: the error becomes
    :func:`command_failed`'s one line and ``code``, so each command says it one way."""
    def wrap(main: Callable[P, int]) -> Callable[P, int]:
        @functools.wraps(main)
        def run(*args: P.args, **kwargs: P.kwargs) -> int:
            try:
                return main(*args, **kwargs)
            except LabError as exc:
                return command_failed(name, exc, code)
        return run
    return wrap
