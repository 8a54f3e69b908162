"""Transactional workloads commit by size or by time, as applications do (real brokers)."""

from __future__ import annotations

import pytest

from deliverylab.scenario import Scenario

pytestmark = pytest.mark.cluster


def _commits(run, process):
    return [op for op in run.history if op.process == process and op.kind == "commit_txn"
            and op.outcome == "ok"]


def test_transactions_commit_after_txn_size_values(cluster):
    run = Scenario("TRANSACTIONAL", "none", values=200, rate=2000, txn_size=50,
                   commit_interval_ms=60_000).run(1, cluster)
    assert run.result.valid, run.result.summary()
    assert len(_commits(run, "producer-0")) == 4  # 200 values / 50 per transaction
    # The pipeline's transactions span poll batches (10 values each) up to 50 values.
    assert 4 <= len(_commits(run, "pipeline-0")) <= 20


def test_transactions_commit_by_time_and_every_value_is_judged(cluster):
    run = Scenario("TRANSACTIONAL", "none", values=400, rate=200, txn_size=10**6,
                   commit_interval_ms=100).run(1, cluster)
    assert run.result.valid, run.result.summary()
    assert run.result.stats["values_sent"] == 400 + 400
    # A transaction never fills (10**6 values), so every commit but the last is due to
    # time. How many fit in 2 s of writing depends on how long each commit takes (a
    # loaded machine saw 250 ms), so the test asserts the events, not a count by time:
    # more than one transaction, none ended before its 100 ms, never one per value.
    commits = _commits(run, "producer-0")
    assert 2 <= len(commits) <= 2000 // 100 + 1
    opened = {op.txn: op.time for op in run.history
              if op.process == "producer-0" and op.kind == "begin_txn"}
    for op in commits[:-1]:
        assert op.time - opened[op.txn] >= 0.1, op
