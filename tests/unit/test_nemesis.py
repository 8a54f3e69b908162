"""The Nemesis without a cluster: a stand-in cluster records what heal asked of it."""

from __future__ import annotations

from types import SimpleNamespace

from deliverylab.history import History
from deliverylab.nemesis import Nemesis


def test_heal_brings_connect_workers_back_and_records_it():
    """Chapter 07's workers heal with everything else, and the History says so."""
    healed = []
    connect = SimpleNamespace(heal=lambda: healed.append(1) or ["restarted worker 2 in 5.0 s"])
    cluster = SimpleNamespace(partitioned=(), proxies={}, status=lambda: {1: "up"},
                              connects=[connect])
    history = History()
    record = Nemesis(cluster, history).heal()
    assert healed == [1]
    assert "restarted worker 2" in record.did
    assert [op.detail for op in history if op.fault == "heal"] == [record.did]
