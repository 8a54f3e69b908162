"""Scenario bookkeeping without a cluster: argument checks and the expectation rules."""

from __future__ import annotations

import pytest

from deliverylab.checker import check
from deliverylab.history import History, Read
from deliverylab.matrix import table
from deliverylab.modes import MODES
from deliverylab.scenario import EXPECTATIONS, FAULTS, RunResult, Scenario, expectation_failures


def run_with(mode: str, fault: str, **facts: int) -> RunResult:
    """A RunResult whose checker counts come from a tiny hand-written history."""
    history = History()
    history.record("producer-0", "send", "ok", ["producer-0:0"], topic="in", partition=0,
                   offset=0)
    reads = [Read("in", 0, 0, "producer-0:0")]
    for i in range(facts.pop("duplicates", 0)):
        reads.append(Read("in", 0, i + 1, "producer-0:0"))
    return RunResult(mode, fault, 1, check(history, reads), facts)


def test_bad_fault_and_values_are_named():
    with pytest.raises(ValueError, match="fault='unplug' is not accepted"):
        Scenario("AT_LEAST_ONCE", "unplug")
    with pytest.raises(ValueError, match="values=3 is not accepted"):
        Scenario("AT_LEAST_ONCE", "none", values=3)
    with pytest.raises(ValueError, match="mode='sometimes' is not accepted"):
        Scenario("sometimes")


def test_always_rule_fails_when_the_anomaly_is_missing():
    assert expectation_failures(run_with("AT_LEAST_ONCE", "lost_ack", duplicates=1)) == []
    failures = expectation_failures(run_with("AT_LEAST_ONCE", "lost_ack"))
    assert failures == ["AT_LEAST_ONCE/lost_ack seed 1: expected duplicates, saw none"]


def test_never_rule_fails_when_the_anomaly_appears():
    # Two extra copies of one value: one duplicated value.
    failures = expectation_failures(run_with("IDEMPOTENT", "lost_ack", duplicates=2))
    assert failures == ["IDEMPOTENT/lost_ack seed 1: expected no duplicates, saw 1"]


def test_facts_count_as_observations():
    ok = run_with("TRANSACTIONAL", "zombie_producer", zombie_fenced=1,
                  aborted_visible_uncommitted=3)
    assert expectation_failures(ok) == []
    unfenced = run_with("TRANSACTIONAL", "zombie_producer", zombie_fenced=0,
                        aborted_visible_uncommitted=3)
    assert "expected zombie_fenced, saw none" in expectation_failures(unfenced)[0]


def test_every_expectation_names_a_known_cell():
    for (mode, fault), rules in EXPECTATIONS.items():
        assert mode in MODES and fault in FAULTS
        assert set(rules.values()) <= {"always", "never"}


def test_table_counts_runs_per_cell():
    runs = [run_with("AT_LEAST_ONCE", "lost_ack", duplicates=1),
            run_with("AT_LEAST_ONCE", "lost_ack")]
    text = table(runs)
    row = next(line for line in text.splitlines() if line.startswith("AT_LEAST_ONCE"))
    assert "1/2" in row and "FAILED (1)" in row
