"""Chapter 02's lost-ack recipe (chapter 03 runs it idempotent) on the shared real
3-broker cluster.

The recipe is the course's central claim about a lost ack, so it runs five times on fresh
topics and must show its outcome *every* time: a demo that shows the anomaly only
sometimes is worse than none. Five times in ``make test`` (a run costs under 2 s);
``bench/loaded.py`` runs it 50 times on a machine loaded by CPU hogs
(``DELIVERYLAB_REPEAT``).
"""

from __future__ import annotations

import os
import uuid

import pytest

from deliverylab.chapters.at_least_once.lost_ack import lost_ack_duplicate
from deliverylab.cluster import Cluster

pytestmark = pytest.mark.cluster
REPEAT = int(os.environ.get("DELIVERYLAB_REPEAT", "5"))


def fresh(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_lost_ack_duplicates_without_idempotence_every_time(cluster: Cluster):
    for i in range(REPEAT):
        result = lost_ack_duplicate(cluster, fresh(f"lost-ack-{i}"), idempotent=False)
        assert result.acks_dropped == 1, result
        assert result.copies == 2, f"run {i}: {result}"
        assert result.error is None and result.acked_offset in result.offsets
        faults = result.history.faults()  # the fault went through the Nemesis
        assert [(f.fault, f.process) for f in faults] == [("lose_ack", "nemesis")], faults
        assert f"broker {result.leader}" in faults[0].detail


def test_lost_ack_single_copy_with_idempotence_every_time(cluster: Cluster):
    for i in range(REPEAT):
        result = lost_ack_duplicate(cluster, fresh(f"lost-ack-idem-{i}"), idempotent=True)
        assert result.acks_dropped == 1, result
        assert result.copies == 1, f"run {i}: {result}"
        assert result.offsets == (result.acked_offset,)
