"""Chapter 01's recipes on the shared real 3-broker cluster (chapter 02's lost-ack recipe,
written on their helpers: tests/integration/chapters/at_least_once/test_lost_ack.py).

The recipes are the course's central claims, so each runs ``REPEAT`` times on fresh
topics and must show its outcome *every* time: a demo that shows the anomaly only
sometimes is worse than none. Three times in ``make test`` (chapter 01's own run adds one
more); ``bench/loaded.py`` runs the same tests 50 times on a machine loaded by CPU hogs
(``DELIVERYLAB_REPEAT``).
"""

from __future__ import annotations

import os
import uuid

import pytest

from deliverylab.chapters.at_most_once import recipes
from deliverylab.cluster import Cluster

pytestmark = pytest.mark.cluster
#: How often each outcome is shown: 3 in make test, more in bench/loaded.py.
REPEAT = int(os.environ.get("DELIVERYLAB_REPEAT", "3"))


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


# --- the recipes, five times each -----------------------------------------------------


def test_acks1_acknowledged_write_is_lost_every_time(cluster: Cluster):
    for i in range(REPEAT):
        result = recipes.acked_then_lost(cluster, fresh(f"acks1-{i}"), acks=1)
        print(result, result.phases)
        assert result.acked_before_kill and result.acked, f"run {i}: {result}"
        assert result.lost and result.copies == 0, f"run {i}: {result}"
        labels = [label for _, label in result.records]
        assert result.before in labels and result.after in labels  # the controls survive
        # The offset the client was given now holds another value.
        assert dict(result.records)[result.acked_offset] == result.after
        assert result.new_leader != result.old_leader
        assert cluster.status() == {1: "up", 2: "up", 3: "up"}
        assert [op.fault for op in result.history.faults()] == [
            "pause_followers", "kill_leader", "resume_broker", "resume_broker"]


def test_acks_all_acknowledged_write_survives_every_time(cluster: Cluster):
    for i in range(REPEAT):
        result = recipes.acked_then_lost(cluster, fresh(f"acksall-{i}"), acks="all")
        print(result, result.phases)
        assert not result.acked_before_kill, f"run {i}: {result}"
        assert result.acked and result.present and not result.lost, f"run {i}: {result}"
        assert result.copies == 1
        assert cluster.status() == {1: "up", 2: "up", 3: "up"}
