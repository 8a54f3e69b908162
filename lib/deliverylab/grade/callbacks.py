"""The student's own client callbacks, as the grader's child calls them: an exception
one raises is the student's, raised in their code with its own type and line.

librdkafka calls a client's callbacks from inside the blocking call that serves them:
a delivery callback (``produce(..., on_delivery=...)``) from ``flush()``, ``poll()``,
``commit_transaction()`` (which flushes); a consumer's ``on_commit``, ``error_cb``,
``stats_cb``, ``throttle_cb`` and ``logger`` (its ``CONSUMER_SETTINGS``) and the
rebalance callbacks given to ``subscribe()`` (``on_assign``, ``on_revoke``,
``on_lost``) from ``consume()``, ``poll()`` and ``close()``. confluent-kafka (2.13.0 to
at least 2.16.1) keeps an exception raised in any of them for the end of that call
with ``PyErr_Fetch``, dropping its type and traceback: on Python < 3.12 an error raised
by C code (``msg.offset() >= None``) comes out as ``SystemError: _PyErr_SetObject:
exception <class 'str'> is not a BaseException subclass``, and one raised in Python
keeps its type but loses the callback's frames, the traceback ending at the call
(:mod:`deliverylab.clients`' docstring, ``bench/client_callbacks.py``; measured for
every consumer callback on librdkafka's mock cluster, tests/unit/grade/
test_grade_callbacks.py). The grader would then report a SystemError, or an error
with no line of the callback, out of a call the student never got wrong.

:class:`StudentCallbacks` wraps each callback the student hands one of the child's
clients the way the lab wraps its own (:func:`deliverylab.clients.guarded`): its
exception is kept from librdkafka, and :meth:`~StudentCallbacks.check`, called by the
child's wrappers right after each call that may serve callbacks, raises it there --
the exception object the callback raised, its traceback still holding the callback's
frame, noted with the callback and the call it came out of. It then runs through the
student's loop like any exception of theirs, and the child records it (``raised``,
exit :data:`~deliverylab.grade.child.RAISED`) with the student's lines:
:func:`student_traceback` shows both the call in their loop
and the line of their callback that raised. A ``KafkaException`` (a fatal error
confluent-kafka leaves pending surfaces inside the next callback) and an interrupt
still pass through, as in the lab's own callbacks. Kept, an exception no longer cuts
the call short (confluent-kafka yields on one): ``consume(n, timeout)`` returns at its
timeout, then raises it.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..clients import guarded

#: The consumer settings that hand librdkafka a callback of the student's, and how the
#: note names each. ``oauth_cb`` is left out: it runs on librdkafka's background thread
#: (served by no call of the student's), and needs SASL the lab's clusters do not speak.
SETTING_CALLBACKS = {"on_commit": "on_commit callback", "error_cb": "error_cb",
                     "stats_cb": "stats_cb", "throttle_cb": "throttle_cb",
                     "logger": "logger"}
#: ``subscribe()``'s callbacks, in its argument order.
REBALANCE_CALLBACKS = ("on_assign", "on_revoke", "on_lost")


class _Logger:
    """A student's logger as librdkafka calls it (``logger.log(level, fmt, *args)``),
    through a guarded ``log``."""

    def __init__(self, log: Callable[..., None]) -> None:
        self.log = log


def _log_of(logger: Any) -> Callable[..., None]:
    """``logger.log``, looked up at each call: one with no ``log`` fails in the guard."""
    return lambda *args: logger.log(*args)


class StudentCallbacks:
    """The student's callbacks of one client (``client``: its name in the note); what
    they raised, kept until :meth:`check` raises it (the first, when several raised)."""

    def __init__(self, client: str = "producer") -> None:
        self.client = client
        self.raised: list[tuple[str, BaseException]] = []  # (the callback's name, what)

    def wrap(self, callback: Callable[..., Any] | None,
             name: str = "delivery callback") -> Callable[..., None] | None:
        """``callback`` as librdkafka may call it (None stays None)."""
        if callback is None:
            return None
        kept: list[BaseException] = []
        call = guarded(callback, kept)

        def named(*args: Any) -> None:
            try:
                call(*args)
            finally:  # also when a pending fatal error is on its way out
                self.raised += [(name, exc) for exc in kept]
                kept.clear()
        return named

    def check(self, call: str) -> None:
        """Raise what a callback raised during ``call`` (its name, for the note)."""
        if not self.raised:
            return
        (name, first), self.raised[:] = self.raised[0], []
        first.add_note(f"(raised in your {name}, which librdkafka called from inside "
                       f"{self.client}.{call}())")
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
        """A client's attribute passed through: a method as one that :meth:`served`,
        ``subscribe`` with the rebalance callbacks it is given guarded."""
        if not callable(attr):
            return attr
        if name == "subscribe":
            return lambda *args, **kwargs: self.subscribe(attr, *args, **kwargs)
        return lambda *args, **kwargs: self.served(name, attr, *args, **kwargs)

    def settings(self, conf: dict[str, Any],
                 on_commit: Callable[..., Any] | None = None) -> dict[str, Any]:
        """A consumer's ``conf`` with the student's callbacks in it guarded (a value that
        is no callable stays, for confluent-kafka to refuse); ``on_commit``: the lab's own
        (auto-commit's record), which then runs first and theirs after it, not instead."""
        conf = dict(conf)
        for key, name in SETTING_CALLBACKS.items():
            given = conf.get(key)
            if key == "logger" and given is not None:  # an object: its log() is called
                conf[key] = _Logger(self.wrap(_log_of(given), name))
            elif callable(given):
                conf[key] = self.wrap(given, name)
        theirs = conf.get("on_commit")
        if on_commit is not None and callable(theirs):

            def both(err: Any, offsets: Any) -> None:
                on_commit(err, offsets)
                theirs(err, offsets)
            conf["on_commit"] = both
        elif on_commit is not None and theirs is None:
            conf["on_commit"] = on_commit
        return conf

    def subscribe(self, subscribe: Callable[..., Any], topics: Any, *args: Any,
                  **kwargs: Any) -> Any:
        """A consumer's ``subscribe(topics, on_assign, on_revoke, on_lost)`` with the
        student's rebalance callbacks guarded (given positionally or by name; what is
        no callable stays, for confluent-kafka to refuse)."""
        given = {**dict(zip(REBALANCE_CALLBACKS, args, strict=False)), **kwargs}
        given = {k: self.wrap(v, f"{k} callback") if k in REBALANCE_CALLBACKS
                 and callable(v) else v for k, v in given.items()}
        return self.served("subscribe", subscribe, topics,
                           *args[len(REBALANCE_CALLBACKS):], **given)


#: No callback given (a client the lab built with none of the student's): checks nothing.
NONE_GIVEN = StudentCallbacks("consumer")


def student_traceback(exc: BaseException, path: str) -> str:
    """The traceback as the student needs it: the frames of their file, then the error.

    The grader's own frames (the wrappers, the loop around a handler) are left out: the
    student reads their mistake, not the lab's plumbing."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if Path(f.filename).resolve() == Path(path).resolve()]
    lines = ["Traceback (your code):", *traceback.format_list(frames)] if frames else []
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).rstrip()
