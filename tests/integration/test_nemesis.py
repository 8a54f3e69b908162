"""isolate_leader on every cluster size the lab accepts (2-5 brokers), real brokers.

The fault pauses the partition's followers, lets the leader acknowledge writes alone,
kills it and resumes the followers. The kill was refused with ``QuorumLost`` whenever
the leader and a paused follower were both controller voters -- on 2 brokers in every
run (voters 1, 2 and the controller-only 3), on 4-5 when the replicas fell so
([1,2,4] refused; [1,4,5], [4,1,2] ran) -- so chapter 01's cell ran on 3 brokers only.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import NewTopic

from deliverylab.cluster import Cluster
from deliverylab.nemesis import Nemesis
from deliverylab.scenario import Scenario

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("brokers", [2, 3, 4, 5])
def test_the_at_most_once_isolate_leader_cell_holds_on_every_size(brokers):
    with Cluster(brokers=brokers) as cluster:
        run = Scenario("AT_MOST_ONCE", "isolate_leader", values=100).run(7, cluster)
        assert run.result.valid, run.result.summary()
        assert run.failures() == [], run.faults  # acknowledged writes lost, none twice: every run
        assert "isolate_leader" in [f["name"] for f in run.faults]
        assert set(cluster.status().values()) == {"up"}


#: Placements on 5 brokers (voters 1-3): leader and followers voters or not.
PLACEMENTS = [[1, 2, 4], [4, 1, 2], [2, 5, 1], [4, 5, 1]]


def test_isolate_leader_runs_wherever_the_replicas_fall():
    """Every placement on one 5-broker cluster, in one test: as four tests, xdist's workers
    each started their own five brokers for them (three clusters in a `make test`)."""
    with Cluster(brokers=5) as cluster:
        for replicas in PLACEMENTS:
            topic = f"iso-{uuid.uuid4().hex[:8]}"
            cluster.admin().create_topics(
                [NewTopic(topic, num_partitions=1, replica_assignment=[replicas])]
            )[topic].result(30)
            leader = cluster.wait_leader(topic, 0)
            nemesis = Nemesis(cluster)
            record = nemesis.isolate_leader(topic, 0, hold=0.1)
            assert record.node == leader, (replicas, record)
            new_leader = cluster.wait_leader(topic, 0, exclude=(leader,))
            assert new_leader in replicas, (replicas, new_leader)
            nemesis.heal()
            assert set(cluster.status().values()) == {"up"}, replicas
