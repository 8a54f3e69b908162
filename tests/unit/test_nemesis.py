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


def test_a_deliberate_quorum_loss_is_said_in_the_fault_line_not_warned_into_the_cell(
        tmp_path, monkeypatch, recwarn):
    """pause_followers takes the quorum away on purpose: the cluster's QuorumWarning goes
    to the lab's log (no red box in the student's cell), the fault's line says it."""
    import warnings

    from deliverylab.errors import QuorumWarning
    from deliverylab.process import lablog

    monkeypatch.setenv(lablog.LOG_ENV, str(tmp_path / "lab.log"))
    paused = []

    def pause(node, allow_quorum_loss=None):
        assert allow_quorum_loss is True
        paused.append(node)
        if len(paused) == 2:
            warnings.warn(QuorumWarning("pausing node 3 leaves the controller quorum "
                                        "(voters 1,2,3) with only 1 of 3 running"), stacklevel=2)

    cluster = SimpleNamespace(wait_leader=lambda topic, partition, timeout: 1,
                              wait_partition=lambda topic, partition: SimpleNamespace(
                                  replicas=[1, 2, 3]), pause=pause)
    record = Nemesis(cluster, History()).pause_followers("orders")
    assert paused == [2, 3]
    assert "the controller quorum is gone" in record.did
    assert [w for w in recwarn if issubclass(w.category, QuorumWarning)] == []
    assert "pausing node 3 leaves the controller quorum" in (tmp_path / "lab.log").read_text()
