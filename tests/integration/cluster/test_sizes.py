"""Every cluster size the lab accepts (1-5 brokers) on real brokers, one cluster per size:
failover and the controller quorum on each, chapter 01's isolate_leader cell on 2-5, and
isolate_leader wherever the replicas fall on 5.

isolate_leader: the fault pauses the partition's followers, lets the leader acknowledge
writes alone, kills it and resumes the followers. The kill was refused with ``QuorumLost``
whenever the leader and a paused follower were both controller voters -- on 2 brokers in
every run (voters 1, 2 and the controller-only 3), on 4-5 when the replicas fell so
([1,2,4] refused; [1,4,5], [4,1,2] ran) -- so chapter 01's cell ran on 3 brokers only.

Each size starts once (:func:`started`: module-scoped, each test names its sizes), and
every test of that size runs on it: pytest runs the tests of one module-scoped parameter
together, in the order they are defined here, and stops that cluster before the next
size starts. 3 is the suite's shared cluster (``cluster3``, through its ``cluster``
fixture: healed after each test). Before, test_cluster.py and test_nemesis.py each
started their own 2-, 4- and 5-broker clusters, test_nemesis.py a second 5-broker one for
the placements and a 3-broker one of its own: five starts, 20 broker JVMs a run.

The failover test ends with the quorum lost on purpose, so it is defined last: it runs
last on each cluster, which is stopped right after (no heal: that would restart brokers
for nothing). A test that got a cluster after it would fail saying so (:func:`sized`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import NewTopic

from deliverylab.cluster import Cluster
from deliverylab.cluster.quorum import with_quorum
from deliverylab.errors import ClusterNotReady, QuorumLost, QuorumWarning
from deliverylab.nemesis import Nemesis
from deliverylab.scenario import Scenario

pytestmark = pytest.mark.cluster


def brokers_id(size: int) -> str:
    return f"{size}-brokers"


#: Sizes whose cluster a test broke for good (the failover test: quorum lost), with that
#: test's name; emptied when the cluster stops.
BROKEN: dict[int, str] = {}


@pytest.fixture(scope="module")
def started(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """The cluster of one size (``request.param``, given by each test's ``parametrize``),
    started once for every test of that size; 3 is the shared one. 1 with a small heap
    (it holds a topic of one partition), 2, 4 and 5 with the brokers' default heap, which
    the isolate_leader cell ran on when it started its own."""
    size = request.param
    if size == 3:
        yield request.getfixturevalue("cluster3")
        return
    with Cluster.start(brokers=size, jvm_opts=["-Xmx256m"] if size == 1 else None) as cluster:
        yield cluster
    BROKEN.pop(size, None)


def _whole(cluster: Cluster) -> None:
    broken_by = BROKEN.get(cluster.brokers)
    assert broken_by is None, (
        f"the {cluster.brokers}-broker cluster was broken for good by {broken_by}: a test "
        "that breaks a cluster must run last on it (define it last in this module)")
    before = cluster.status()
    assert set(before.values()) == {"up"}, \
        f"the {cluster.brokers}-broker cluster is not whole before this test: {before!r}"


@pytest.fixture
def sized(started: Cluster, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """``started`` for a test that leaves it whole: checked whole before the test, and
    healed after it (a failing test may leave its fault behind; on a whole cluster the
    heal does nothing). The shared 3-broker one through the suite's ``cluster`` fixture."""
    if started.brokers == 3:
        yield request.getfixturevalue("cluster")
        return
    _whole(started)
    yield started
    Nemesis(started).heal()


@pytest.fixture
def sized_to_break(started: Cluster, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """``started`` for the test that breaks it for good, the last on it: checked whole
    before, not healed after (the cluster stops next), and marked broken. The shared
    3-broker one through ``cluster``, healed after as always."""
    if started.brokers == 3:
        yield request.getfixturevalue("cluster")
        return
    _whole(started)
    BROKEN[started.brokers] = request.node.name
    yield started


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


# Last in this module: it leaves its cluster without a quorum (see the module docstring).
@pytest.mark.parametrize("started", [1, 2, 3, 4, 5], indirect=True, ids=brokers_id)
def test_failover_and_quorum_at_every_size(sized_to_break, topic_name):
    """Kill the leader of an RF=min(3, size) partition: a new leader for 2+ brokers, a
    reason for 1. Then take a majority of voters away: refused unless asked for, and
    when done, waits say the quorum has no leader rather than timing out blindly."""
    cluster = sized_to_break
    plan = cluster.quorum_plan
    cluster.create_topic(topic_name, partitions=1, replication_factor=min(3, cluster.brokers))
    before = cluster.status()
    assert set(before.values()) == {"up"}
    controller = before.quorum.leader
    assert controller in plan.voters
    assert f"active controller {controller}" in repr(before)
    assert with_quorum(cluster, "x", "<div></div>")[0].endswith(f"controller {controller}")
    old = cluster.leader(topic_name, 0)
    cluster.kill(old)
    if cluster.brokers == 1:
        with pytest.raises(ClusterNotReady) as err:
            cluster.wait_leader(topic_name, 0, timeout=3)
        assert "waiting for a leader of" in str(err.value)
        assert "a 1-broker cluster has no other replica or controller to fail over to" \
            in str(err.value)
        return
    new = cluster.wait_leader(topic_name, 0, exclude=(old,), timeout=60)
    assert new != old and cluster.status()[new] == "up"
    assert cluster.quorum().leader in plan.voters
    # Pause running voters until the next pause would leave no majority: refused.
    running = [v for v in plan.voters if v in cluster.nodes and cluster.status()[v] == "up"]
    while not cluster.quorum().down or len(plan.voters) - len(cluster.quorum().down) > 2:
        cluster.pause(running.pop(), allow_quorum_loss=False)  # the quorum survives these
    victim = running.pop()
    with pytest.raises(QuorumLost, match=r"^refused: pausing node \d leaves the controller "
                       r"quorum \(voters 1,2,3\) with only 1 of 3 running"):
        cluster.pause(victim, allow_quorum_loss=False)
    assert cluster.status()[victim] == "up", "a refused fault does nothing"
    with pytest.warns(QuorumWarning, match="no controller, so no elections"):
        cluster.pause(victim, allow_quorum_loss=True)
    assert "NO LEADER" in cluster.quorum().line()
    with pytest.raises(ClusterNotReady, match="the controller quorum has no leader: voters "
                       r"1,2,3 and 2 of them are down \("):
        cluster.wait_leader(topic_name, 0, exclude=tuple(cluster.nodes), timeout=2)
