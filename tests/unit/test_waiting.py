"""The one wait: it returns the probe's answer, or raises naming what, what it last saw
and how long -- never hands ``None`` on, never reports a death as a timeout."""
from __future__ import annotations

import time

import pytest

from deliverylab.errors import BrokerExited, ClusterNotReady, LabError, TimedOut
from deliverylab.waiting import Deadline, verdict_within, wait_until


def test_it_returns_the_first_truthy_answer() -> None:
    answers = iter([None, 0, [], {"leader": 2}])
    assert wait_until("a leader", lambda: next(answers), 5, interval=0.001) == {"leader": 2}


def test_a_falsy_answer_comes_through_in_a_one_tuple() -> None:
    assert wait_until("an exit code", lambda: (0,), 1) == (0,)


def test_the_timeout_names_what_was_awaited_what_was_seen_and_how_long() -> None:
    t0 = time.monotonic()
    with pytest.raises(TimedOut) as err:
        wait_until("the moon", lambda: None, 0.05, interval=0.01,
                   explain=lambda: "; the sky is cloudy")
    assert isinstance(err.value, LabError)
    assert str(err.value) == "timed out after 0.05s waiting for the moon; the sky is cloudy"
    assert err.value.what == "the moon"
    assert err.value.last_seen == "the sky is cloudy"
    assert 0.05 <= err.value.waited <= time.monotonic() - t0


def test_an_exception_listed_in_retry_is_not_yet_and_is_named_on_timeout() -> None:
    def probe() -> None:
        raise ConnectionError("refused")

    with pytest.raises(TimedOut, match=r"waiting for a port \(last error: refused\)") as err:
        wait_until("a port", probe, 0.03, interval=0.01, retry=(ConnectionError,))
    assert err.value.last_seen == "refused"


def test_any_other_exception_of_the_probe_propagates_at_once() -> None:
    def probe() -> None:
        raise KeyError("no such topic")

    t0 = time.monotonic()
    with pytest.raises(KeyError):
        wait_until("a topic", probe, 5, retry=(ConnectionError,))
    assert time.monotonic() - t0 < 1


def test_check_runs_every_round_so_a_death_is_not_reported_as_a_timeout() -> None:
    rounds = []

    def check() -> None:
        rounds.append(1)
        if len(rounds) == 3:
            raise RuntimeError("node 3 died")

    with pytest.raises(RuntimeError, match="node 3 died"):
        wait_until("anything", lambda: None, 5, check=check, interval=0.001)


def test_the_caller_names_the_error_type_its_callers_catch() -> None:
    with pytest.raises(ClusterNotReady, match="waiting for a leader") as err:
        wait_until("a leader", lambda: None, 0.01, interval=0.001, error=ClusterNotReady)
    assert isinstance(err.value, TimedOut)  # `except TimedOut` catches a cluster's too


def test_a_shared_deadline_spans_several_waits() -> None:
    deadline = Deadline(0.05)
    wait_until("the first", lambda: True, deadline)
    time.sleep(0.06)
    assert deadline.expired()
    with pytest.raises(TimedOut, match="after 0.05s waiting for the second"):
        wait_until("the second", lambda: None, deadline)


def test_the_probe_is_asked_once_even_when_the_deadline_has_passed() -> None:
    assert wait_until("already true", lambda: "yes", 0) == "yes"


def test_a_verdict_is_false_when_time_runs_out_and_other_errors_still_raise() -> None:
    assert verdict_within("the moon", lambda: None, 0.02, interval=0.005) is False
    assert verdict_within("a node frozen", lambda: (False,), 5) is False  # ended early
    assert verdict_within("a node frozen", lambda: (True,), 5) is True
    assert verdict_within("a write", lambda: 3, 5) is True
    with pytest.raises(BrokerExited):
        verdict_within("a leader", lambda: None, 5, check=_dead)


def _dead() -> None:
    raise BrokerExited("the node died")
