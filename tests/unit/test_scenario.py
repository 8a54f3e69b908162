"""Scenario bookkeeping without a cluster: argument checks and how a run is judged."""

from __future__ import annotations

import pytest

from deliverylab.checker import check
from deliverylab.history import History, Read
from deliverylab.matrix import table
from deliverylab.modes import MODES, mode
from deliverylab.scenario import RunResult, Scenario


def run_with(mode_name: str, fault: str, lost: int = 0, **facts: int) -> RunResult:
    """A RunResult judged like a real one, from a tiny hand-written history."""
    history = History()
    for seq in range(1 + lost):
        history.record("producer-0", "send", "ok", [f"producer-0:{seq}"], topic="in",
                       partition=0, offset=seq)
    reads = [Read("in", 0, 0, "producer-0:0")]
    for i in range(facts.pop("duplicates", 0)):
        reads.append(Read("in", 0, i + 1, "producer-0:0"))
    result = check(history, reads, mode(mode_name).allowed_under(fault))
    return RunResult(mode_name, fault, 1, result, facts)


def test_bad_fault_and_values_are_named():
    with pytest.raises(ValueError, match="fault='unplug' is not accepted"):
        Scenario("AT_LEAST_ONCE", "unplug")
    with pytest.raises(ValueError, match="fault='lost_ack' is not accepted"):
        Scenario("AT_LEAST_ONCE", "lost_ack")  # the old spelling: one name per fault
    with pytest.raises(ValueError, match="values=3 is not accepted"):
        Scenario("AT_LEAST_ONCE", "none", values=3)
    with pytest.raises(ValueError, match="mode='sometimes' is not accepted"):
        Scenario("sometimes")


def test_always_rule_fails_when_the_anomaly_is_missing():
    assert run_with("AT_LEAST_ONCE", "lose_ack", duplicates=1, acks_lost=1).failures() == []
    assert run_with("AT_LEAST_ONCE", "lose_ack", acks_lost=1).failures() == [
        "AT_LEAST_ONCE/lose_ack: expected duplicates, saw none (seed 1)"]
    # A fault that never bit teaches nothing: a run without a lost ack fails its cell.
    assert run_with("IDEMPOTENT", "lose_ack").failures() == [
        "IDEMPOTENT/lose_ack: expected acks_lost, saw none (seed 1)"]


def test_a_transactional_lost_ack_must_land_inside_a_transaction():
    assert run_with("TRANSACTIONAL", "lose_ack", acks_lost=1, ack_lost_in_txn=1
                    ).failures() == []
    assert run_with("TRANSACTIONAL", "lose_ack", acks_lost=1, ack_lost_in_txn=0
                    ).failures() == [
        "TRANSACTIONAL/lose_ack: expected ack_lost_in_txn, saw none (seed 1)"]


def test_transactions_commit_by_size_or_time_and_bad_settings_are_named():
    m = mode("TRANSACTIONAL")
    assert (m.txn_size, m.commit_interval_ms) == (1000, 100.0)
    small = m.with_commits(txn_size=5, commit_interval_ms=1000)
    assert not small.commit_due(4, 0.5)
    assert small.commit_due(5, 0.0)  # by size
    assert small.commit_due(1, 1.0)  # by time
    assert m.with_commits(commit_interval_ms=0).commit_due(1, 0.0)
    assert Scenario("TRANSACTIONAL", "none", txn_size=7).mode.txn_size == 7
    with pytest.raises(ValueError, match="txn_size=0 is not accepted"):
        m.with_commits(txn_size=0)
    with pytest.raises(ValueError, match="commit_interval_ms=-1 is not accepted"):
        Scenario("TRANSACTIONAL", "none", commit_interval_ms=-1)


def test_a_mode_is_held_to_its_promise_beyond_the_cells_claim():
    # IDEMPOTENT allows no duplicates: invalid, and the cell's "never" rule fails too.
    failures = run_with("IDEMPOTENT", "lose_ack", duplicates=2).failures()
    assert failures[0].startswith("IDEMPOTENT/lose_ack: outside what IDEMPOTENT allows: "
                                  "duplicates")
    # AT_MOST_ONCE promises nothing twice: a duplicate after a lost ack is invalid even
    # though the cell's own claim says nothing about losses.
    assert "outside what AT_MOST_ONCE allows" in run_with(
        "AT_MOST_ONCE", "lose_ack", duplicates=1).failures()[0]
    # AT_LEAST_ONCE never loses an acknowledged value: invalid under any fault.
    assert "outside what AT_LEAST_ONCE allows: lost" in run_with(
        "AT_LEAST_ONCE", "crash_producer", lost=1).failures()[0]


def test_a_zombie_may_duplicate_unless_transactions_fence_it():
    assert run_with("AT_MOST_ONCE", "restart_producer", duplicates=1).failures() == []
    fenced = run_with("TRANSACTIONAL", "restart_producer", duplicates=1, zombie_fenced=1,
                      aborted_visible_uncommitted=3).failures()
    assert any("outside what TRANSACTIONAL allows" in f for f in fenced)


def test_facts_count_as_observations():
    ok = run_with("TRANSACTIONAL", "restart_producer", zombie_fenced=1,
                  aborted_visible_uncommitted=3)
    assert ok.failures() == []
    unfenced = run_with("TRANSACTIONAL", "restart_producer", zombie_fenced=0,
                        aborted_visible_uncommitted=3)
    assert "expected zombie_fenced, saw none" in unfenced.failures()[0]


def test_table_counts_runs_per_cell():
    runs = [run_with("AT_LEAST_ONCE", "lose_ack", duplicates=1, acks_lost=1),
            run_with("AT_LEAST_ONCE", "lose_ack", acks_lost=1)]
    text = table(runs)
    row = next(line for line in text.splitlines() if line.startswith("AT_LEAST_ONCE"))
    assert "1/2" in row and "FAILED (1)" in row


def test_every_mode_has_a_fault_free_run():
    for name in MODES:
        assert run_with(name, "none").failures() == []
