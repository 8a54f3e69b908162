"""Exercise 06's second half: the handler's call to the lab's payment service, and the
service's call log judged.

Chapter 06's handler has two side effects. The row joins the database transaction; the
payment cannot: it is a call to another process (the lab's real HTTP service,
:mod:`deliverylab.services.http`, one per graded run), which is done the moment it
answers, whatever the handler's database does next. A crash between the service's answer
and the database commit (``kill_after_http``, searched at the student's ``http_call``
boundary) makes the next instance call again; the service applies that second call only
if it can tell it is the same payment -- by an ``Idempotency-Key`` derived from the
message's identity. A key per attempt (a uuid) or from the offset (a producer's duplicate
sits at another offset) is a second payment; no key at all, likewise.

Two halves, one module: :class:`Payments`, the client the child hands the student's
``handle`` (its ``pay`` counted as a boundary of the crash search, after the answer came);
and :func:`effect_counts`, the parent's judgement of the database's rows and the service's
log (:func:`deliverylab.services.check.count_effects`, chapter 06's checker, imported there:
the child needs only :class:`Payments`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..history import History
from ..services.http import call

#: A sender: (request body, idempotency key or None) -> the service's answer.
Send = Callable[[dict[str, Any], "str | None"], dict[str, Any]]


class Payments:
    """The student's client to the lab's payment service: ``payments.pay(order, key)``.

    ``pay`` POSTs one payment of ``order`` (its ``order_id`` and ``amount``) to the
    service, with ``key`` as its ``Idempotency-Key`` header (None: no header, a payment
    every time), and returns the service's answer (``payment``, its number, and
    ``replayed``: True when the key was known and nothing new happened). The call is
    recorded (``http_call``, a History op: a failing cell's excerpt shows each call of
    the value with its key) and then counted for the crash plan, so ``kill_after_http``
    lands after the service applied it and before whatever the handler does next.
    ``send`` is the transport (the real HTTP call by default; a unit test hands the
    service's :class:`~deliverylab.services.http.CallLog` directly)."""

    def __init__(self, url: str, events: Any, plan: Any = None, run: str = "",
                 send: Send | None = None) -> None:
        self.url, self.events, self.plan, self.run = url, events, plan, run
        self._send: Send = send or (lambda body, key: call(self.url, body, key))
        self.calls = 0

    def pay(self, order: Mapping[str, Any], key: str | None = None) -> dict[str, Any]:
        if not isinstance(order, Mapping) or "order_id" not in order:
            raise ValueError(f"order={order!r} is not accepted; expected the order your "
                             "handler was given, a dict with 'order_id' and 'amount'")
        if key is not None and (not isinstance(key, str) or not key):
            raise ValueError(f"key={key!r} is not accepted; expected a non-empty string "
                             "(an HTTP header's value) or None for no idempotency key")
        body = {"run": self.run, "message_id": str(order["order_id"]),
                "amount": order.get("amount"), "instance": self.events.process}
        answer = self._send(body, key)
        self.calls += 1
        said = f"Idempotency-Key {key!r}" if key is not None else "no idempotency key"
        self.events.write("http_call", values=[body["message_id"]], message=body["message_id"],
                          key=key, detail=f"{said}: payment {answer.get('payment')}"
                          + (" (replayed: no new payment)" if answer.get("replayed") else ""))
        if self.plan is not None:
            self.plan.after("http_call")
        return answer


def effect_counts(counts: dict[str, int], input_ids: list[str], rows: list[str],
                  history: History, calls: Iterable[Mapping[str, Any]] = ()
                  ) -> dict[str, list[dict[str, Any]]]:
    """Chapter 06's checker over the handler's rows and the payment service's call log:
    duplicate and missing rows, duplicate and missing effects (payments the service
    applied: a replay of a known key is a call, not an effect), into ``counts``; returns
    examples of each, as the Checker's findings look."""
    from ..services.check import count_effects

    polls = [op for op in history if op.kind == "poll"]
    calls = list(calls)
    effects = count_effects("student", input_ids, rows, calls, polls)
    counts.update(duplicate_rows=effects.duplicate_rows, missing_rows=effects.missing_rows,
                  duplicate_effects=effects.duplicate_effects,
                  missing_effects=effects.missing_effects, http_calls=effects.calls,
                  input_copies=effects.input_copies, redelivered=effects.redelivered)
    missing = sorted(set(input_ids) - set(rows))
    unpaid = sorted(set(input_ids) - {c["message_id"] for c in calls if c.get("effect")})
    return {"duplicate_rows": [{"value": v} for v in effects.twice_rows[:5]],
            "missing_rows": [{"value": v} for v in missing[:5]],
            "duplicate_effects": [{"value": v} for v in effects.twice_effects[:5]],
            "missing_effects": [{"value": v} for v in unpaid[:5]]}
