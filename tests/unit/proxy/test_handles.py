"""The hold fault's handle without a proxy process: what ``release`` and ``inject``
return, and that a missing broker answer is an error, never a gap in the evidence.
The holding itself runs through a real proxy in tests/unit/proxy/test_framing.py."""

from __future__ import annotations

import pytest

from deliverylab.errors import LabError
from deliverylab.proxy.framing import RequestHeader
from deliverylab.proxy.handles import HeldRequest, Hold


class _Proxy:
    """Stands in for the proxy process: sends a held request on, and answers it with
    the broker's error name, or (``None``) never."""

    def __init__(self, answers: dict[int, str | None]) -> None:
        self.answers = answers

    def _release(self, held: HeldRequest) -> str:
        if self.answers.get(held.id) is not None:
            held.hold._answered(held, "released", self.answers[held.id])
        return "released"

    def _inject(self, held: HeldRequest, timeout: float) -> None:
        held.hold._sent(held, "injected")
        if self.answers.get(held.id) is not None:
            held.hold._answered(held, "injected", self.answers[held.id])


def _hold(answers: dict[int, str | None]) -> Hold:
    hold = Hold("Produce", count=len(answers))
    proxy = _Proxy(answers)
    for i in answers:
        head = RequestHeader(api_key=0, api_version=9, correlation_id=i, client_id="c")
        hold._keep(HeldRequest(proxy, head, b"", hold, id=i))  # type: ignore[arg-type]
    return hold


@pytest.mark.parametrize("verb", ["release", "inject"])
def test_the_brokers_answers_come_back_in_order(verb):
    hold = _hold({1: "NONE", 2: "INVALID_TXN_STATE"})
    assert getattr(hold, verb)(timeout=1) == ["NONE", "INVALID_TXN_STATE"]


@pytest.mark.parametrize("verb", ["release", "inject"])
def test_an_answer_that_never_comes_is_an_error_not_a_gap(verb):
    """A ``None`` in the answers would be recorded as what the late request did."""
    hold = _hold({1: "NONE", 2: None})
    with pytest.raises(LabError) as info:
        getattr(hold, verb)(timeout=0.2)
    message = str(info.value)
    assert "answered 1 of 2 held Produce request(s) within 0.2 s" in message
    assert "(answers so far: NONE)" in message and "\n" not in message
