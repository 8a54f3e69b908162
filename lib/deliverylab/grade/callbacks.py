"""The student's own client callbacks, as the grader's child calls them: an exception
one raises is the student's, raised in their code with its own type and line.

librdkafka calls a delivery callback (``produce(..., on_delivery=...)``) from inside
the blocking call that serves it -- ``flush()``, ``poll()``, ``commit_transaction()``
(which flushes) -- and confluent-kafka keeps an exception raised there for the end of
that call, mangled: on Python < 3.12 an error raised by C code (``msg.offset() >= 0``
with an offset of None) comes out of ``flush()`` as ``SystemError: _PyErr_SetObject:
exception <class 'str'> is not a BaseException subclass``, the student's error and its
line lost (:mod:`deliverylab.clients`' docstring, ``bench/client_callbacks.py``). The
grader would then report a SystemError out of a call the student never got wrong.

:class:`StudentCallbacks` wraps each callback the student hands the child's producer
the way the lab wraps its own (:func:`deliverylab.clients.guarded`): its exception is
kept from librdkafka, and :meth:`~StudentCallbacks.check`, called by the child's
wrappers right after each call that may serve callbacks, raises it there -- the
exception object the callback raised, its traceback still holding the callback's
frame, noted with the call it came out of. It then runs through the student's loop
like any exception of theirs, and the child records it (``raised``, exit
:data:`~deliverylab.grade.child.RAISED`) with the student's lines:
:func:`~deliverylab.grade.child.student_traceback` shows both the call in their loop
and the line of their callback that raised. A ``KafkaException`` (a fatal error
confluent-kafka leaves pending surfaces inside the next callback) and an interrupt
still pass through, as in the lab's own callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..clients import guarded


class StudentCallbacks:
    """The student's callbacks of one client; what they raised, kept until
    :meth:`check` raises it (the first, when several reports of one call raised)."""

    def __init__(self) -> None:
        self.raised: list[BaseException] = []

    def wrap(self, callback: Callable[..., Any] | None) -> Callable[..., None] | None:
        """``callback`` as librdkafka may call it (None stays None)."""
        return None if callback is None else guarded(callback, self.raised)

    def check(self, call: str) -> None:
        """Raise what a callback raised during ``call`` (its name, for the note)."""
        if not self.raised:
            return
        first, self.raised[:] = self.raised[0], []
        first.add_note(f"(raised in your delivery callback, which librdkafka called "
                       f"from inside producer.{call}())")
        raise first

    def served(self, call: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Make a call that may serve callbacks, then :meth:`check`: a callback's
        exception wins over the call's own outcome, as confluent-kafka raises it."""
        try:
            result = fn(*args, **kwargs)
        except Exception:
            self.check(call)
            raise
        self.check(call)
        return result

    def passing(self, name: str, attr: Any) -> Any:
        """A client's attribute passed through: a method as one that :meth:`served`."""
        if not callable(attr):
            return attr
        return lambda *args, **kwargs: self.served(name, attr, *args, **kwargs)
