"""The proxy's ``hold`` fault: a request kept from the broker, delivered late.

Why its own module: the published-bug reproductions (:mod:`deliverylab.chapters.kafka_bugs`) need a
request to arrive *after* its client gave up on it, which no delay of a connection can
do. :class:`Hold` is the handle (budget, what was held, the broker's answers); the
proxy's links do the holding, in the proxy's process (:mod:`.engine`), which
tells this handle what it held and what the broker answered.
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import LabError, bad_value
from .framing import RequestHeader, api_key, api_name

_ids = itertools.count(1)  # fault handles, as the proxy process knows them


class FaultHandle:
    """What the proxy's fault handles (:class:`Hold`, ``proxy.AckLoss``) share: a
    budget of ``count`` requests of one api (of one client, if ``client_id``), an id the
    proxy process knows it by, the process it is armed in, and cancelling.

    The budget is spent in the proxy process; the handle lives in the owner's process
    and is kept current by the process's events (under ``_cond``, which waits use).
    """

    #: The proxy process's verb that cancels this kind of budget.
    _cancel_verb = ""

    def __init__(self, api: str | int, count: int, client_id: str | None) -> None:
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise bad_value("count", count, "a whole number >= 1")
        self.api_key = api_key(api)
        self.count = count
        self.client_id = client_id
        self._id = next(_ids)
        self._child: Any = None  # the proxy process it is armed in (proxy._Child)
        self._cond = threading.Condition()
        self._cancelled = False

    @property
    def api(self) -> str:
        return api_name(self.api_key)

    def cancel(self) -> None:
        """Choose no further request (what a hold already holds stays held)."""
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()
        if self._child is not None:
            self._child.tell(self._cancel_verb, self._id)


class HoldingProxy(Protocol):
    """What a held request needs of the proxy that holds it (``proxy.Proxy``), named
    here so the handles, which the proxy imports, need not import it back."""

    def _release(self, held: HeldRequest) -> str: ...

    def _inject(self, held: HeldRequest, timeout: float) -> None: ...


def _proxy_of(held: HeldRequest) -> HoldingProxy:
    if held.proxy is None:
        raise LabError("the proxy that held this request is gone (stopped and dropped)")
    return held.proxy


@dataclass
class HeldRequest:
    """One request a :class:`Hold` kept from the broker: its header and whole frame."""

    proxy: HoldingProxy | None  # None: the proxy was dropped meanwhile
    head: RequestHeader
    frame: bytes
    hold: Hold
    error: str | None = None  # the broker's answer once released or injected
    how: str = ""  # "released" (on the client's own connection) or "injected"
    id: int = 0  # as the proxy process knows it


class Hold(FaultHandle):
    """Handle of one ``hold`` fault: requests of one api kept from the broker until told.

    Why: Kafka's published transaction bugs need a request to arrive *late* (after the
    client gave up on it and moved on), which no delay of a whole connection can do,
    since a broker answers one connection's requests in order. The proxy keeps the
    chosen request's frame (and everything the client pipelined after it on that
    connection), lets ``skip`` earlier matching requests through first, and then:

    - :meth:`release` forwards it on the connection it came on (a retry that arrives
      late); a client still waiting gets the answer. The proxy reads nothing more from
      that client once it holds the request, so even a client that gave up and closed
      leaves the broker side of the connection open for the late request.
    - :meth:`inject` sends the kept bytes to the broker on a connection of the proxy's
      own, once the client has given up and moved on (a stale request surfacing); the
      client's connection, if still open, is closed first.

    Either way the broker's error code is recorded (``errors``), so the History can say
    what the late request did. ``count`` requests are held at most; the budget is shared
    by every proxy the hold is armed on.
    """

    _cancel_verb = "cancel_hold"

    def __init__(self, api: str | int = "Produce", count: int = 1, skip: int = 0,
                 client_id: str | None = None) -> None:
        super().__init__(api, count, client_id)
        if not isinstance(skip, int) or isinstance(skip, bool) or skip < 0:
            raise bad_value("skip", skip, "a whole number >= 0")
        self._skip = skip
        self._chosen = 0
        self.held: list[HeldRequest] = []

    @property
    def finished(self) -> bool:
        with self._cond:
            return self._cancelled or self._chosen >= self.count

    @property
    def errors(self) -> list[str | None]:
        """The broker's answer to each held request sent so far (None: not sent yet)."""
        with self._cond:
            return [h.error for h in self.held]

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``count`` requests are held; False if the timeout came first."""
        with self._cond:
            return self._cond.wait_for(lambda: len(self.held) >= self.count, timeout)

    def wait_answers(self, timeout: float | None = None) -> bool:
        """Block until every held request sent on has its broker answer."""
        with self._cond:
            return self._cond.wait_for(
                lambda: all(h.error is not None for h in self.held if h.how), timeout)

    def release(self, timeout: float = 10.0) -> list[str]:
        """Forward every held request on its client's connection (or inject it when the
        client gave up), wait for the broker's answers and return their error names.

        Raises ``LabError`` when not every answer came within ``timeout``."""
        self.cancel()
        for held in list(self.held):
            if not held.how:
                self._sent(held, _proxy_of(held)._release(held))
        return self._answers("release", timeout)

    def inject(self, timeout: float = 10.0) -> list[str]:
        """Send every held request to the broker on the proxy's own connection; return
        the broker's error names (``NONE``: the late request took effect).

        Raises ``LabError`` when not every answer came within ``timeout``."""
        self.cancel()
        for held in list(self.held):
            if not held.how:
                _proxy_of(held)._inject(held, timeout)
        return self._answers("inject", timeout)

    def _answers(self, verb: str, timeout: float) -> list[str]:
        """The broker's answer to every held request sent on, once all came.

        Why it raises: the answers are the evidence (``NONE``: the late request took
        effect); a list with a gap for an answer still on its way would be read as
        "it had no effect", or recorded as such in the History.
        """
        self.wait_answers(timeout)
        with self._cond:
            answers = [h.error for h in self.held if h.how]
        got = [e for e in answers if e is not None]
        if len(got) < len(answers):
            raise LabError(f"Hold.{verb}: the broker answered {len(got)} of {len(answers)} "
                           f"held {self.api} request(s) within {timeout:g} s (answers so "
                           f"far: {', '.join(got) or 'none'}); a broker or proxy may be "
                           "stuck: look at the broker's log, or allow a longer timeout")
        return got

    def _spec(self) -> tuple:
        """What the proxy process needs to spend this budget (``Proxy.arm_hold``)."""
        with self._cond:
            return (self._id, self.api_key, self.count, self._skip, self.client_id,
                    self._cancelled)

    # The proxy process's news (on the owner's pipe-reader thread).
    def _update(self, chosen: int, cancelled: bool) -> None:
        with self._cond:
            self._chosen = chosen
            self._cancelled = self._cancelled or cancelled
            self._cond.notify_all()

    def _keep(self, held: HeldRequest) -> None:
        with self._cond:
            self.held.append(held)
            self._cond.notify_all()

    def _answered(self, held: HeldRequest, how: str, error: str | None) -> None:
        with self._cond:
            held.how = how or held.how
            held.error = error if error is not None else held.error
            self._cond.notify_all()

    def _sent(self, held: HeldRequest, how: str) -> None:
        with self._cond:
            held.how = held.how or how
            self._cond.notify_all()

    def __repr__(self) -> str:
        return f"<Hold {self.api} held {len(self.held)}/{self.count} {self.errors}>"
