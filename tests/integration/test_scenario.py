"""Scenario runs on the shared real 3-broker cluster: the zombie producer, through the
one hand-driven transactional producer (TxnProducer) and without transactions."""

from __future__ import annotations

import pytest

from deliverylab.cluster import Cluster
from deliverylab.scenario import Scenario

pytestmark = pytest.mark.cluster


def test_a_transactional_zombie_is_fenced_and_its_values_never_read(cluster: Cluster):
    run = Scenario("TRANSACTIONAL", "restart_producer", values=200).run(1, cluster)
    assert run.facts["zombie_fenced"] is True, run.result.summary()
    assert run.failures() == [], run.failures()
    zombie = [op for op in run.history if op.process == "zombie"]
    kinds = [op.kind for op in zombie]
    assert kinds[0] == "init_txn" and "begin_txn" in kinds and "fault" in kinds
    commit = [op for op in zombie if op.kind == "commit_txn"]
    assert [op.outcome for op in commit] == ["fail"]  # the fence, in the History
    assert all(v.startswith("producer-0:") for op in zombie for v in op.values)


def test_a_zombie_without_transactions_writes_twice(cluster: Cluster):
    run = Scenario("IDEMPOTENT", "restart_producer", values=200).run(1, cluster)
    assert run.facts["zombie_fenced"] is False
    assert run.result.counts["duplicates"] > 0, run.result.summary()
    assert run.failures() == [], run.failures()
