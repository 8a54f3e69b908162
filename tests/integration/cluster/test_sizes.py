"""isolate_leader on every cluster size the lab accepts (2-5 brokers), real brokers, one
cluster per size.

The fault pauses the partition's followers, lets the leader acknowledge writes alone,
kills it and resumes the followers. The kill was refused with ``QuorumLost`` whenever
the leader and a paused follower were both controller voters -- on 2 brokers in every
run (voters 1, 2 and the controller-only 3), on 4-5 when the replicas fell so
([1,2,4] refused; [1,4,5], [4,1,2] ran) -- so chapter 01's cell ran on 3 brokers only.

Each size starts once (:func:`started`: module-scoped, each test names its sizes), and
every test of that size runs on it: pytest runs the tests of one module-scoped parameter
together, in the order they are defined here, and stops that cluster before the next
size starts. 3 is the suite's shared cluster (``cluster3``, through its ``cluster``
fixture: healed after each test). Before, each test started its own: the cell a cluster
of each size, the placements a second 5-broker one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import NewTopic

from deliverylab.cluster import Cluster
from deliverylab.nemesis import Nemesis
from deliverylab.scenario import Scenario

pytestmark = pytest.mark.cluster


def brokers_id(size: int) -> str:
    return f"{size}-brokers"


@pytest.fixture(scope="module")
def started(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The cluster of one size (``request.param``, given by each test's ``parametrize``),
    started once for every test of that size; 3 is the shared one."""
    if request.param == 3:
        yield request.getfixturevalue("cluster3")
        return
    with Cluster.start(brokers=request.param) as cluster:
        yield cluster


@pytest.fixture
def sized(started: Cluster, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """``started`` for a test that leaves it whole: checked whole before the test, and
    healed after it (a failing test may leave its fault behind; on a whole cluster the
    heal does nothing). The shared 3-broker one through the suite's ``cluster`` fixture."""
    if started.brokers == 3:
        yield request.getfixturevalue("cluster")
        return
    before = started.status()
    assert set(before.values()) == {"up"}, \
        f"the {started.brokers}-broker cluster is not whole before this test: {before!r}"
    yield started
    Nemesis(started).heal()


@pytest.mark.parametrize("started", [2, 3, 4, 5], indirect=True, ids=brokers_id)
def test_the_at_most_once_isolate_leader_cell_holds_on_every_size(sized):
    cluster = sized
    run = Scenario("AT_MOST_ONCE", "isolate_leader", values=100).run(7, cluster)
    assert run.result.valid, run.result.summary()
    assert run.failures() == [], run.faults  # acknowledged writes lost, none twice: every run
    assert "isolate_leader" in [f["name"] for f in run.faults]
    assert set(cluster.status().values()) == {"up"}


#: Placements on 5 brokers (voters 1-3): leader and followers voters or not.
PLACEMENTS = [[1, 2, 4], [4, 1, 2], [2, 5, 1], [4, 5, 1]]


@pytest.mark.parametrize("started", [5], indirect=True, ids=brokers_id)
def test_isolate_leader_runs_wherever_the_replicas_fall(sized):
    """Every placement on one 5-broker cluster, in one test: as four tests, xdist's workers
    each started their own five brokers for them (three clusters in a `make test`). The
    cluster is the 5-broker one the cell above ran on."""
    cluster = sized
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
