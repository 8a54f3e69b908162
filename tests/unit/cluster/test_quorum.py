"""Where the controller quorum's voters go, and what the lab says about it (no brokers)."""

from __future__ import annotations

import struct

import pytest

from deliverylab.cluster import quorum as kraft
from deliverylab.cluster.properties import ClusterSpec, NodePorts, server_properties
from deliverylab.proxy.framing import parse_request_header


@pytest.mark.parametrize(("size", "voters", "controller_only"), [
    (1, (1,), ()),
    (2, (1, 2, 3), (3,)),
    (3, (1, 2, 3), ()),
    (4, (1, 2, 3), ()),
    (5, (1, 2, 3), ()),
])
def test_plan_places_an_odd_number_of_voters(size, voters, controller_only):
    p = kraft.plan(size)
    assert p.voters == voters
    assert p.controller_only == controller_only
    assert p.brokers == tuple(range(1, size + 1))
    assert len(p.voters) % 2 == 1
    assert p.processes == tuple(sorted({*p.brokers, *controller_only}))


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_any_one_broker_killed_or_paused_keeps_a_majority(size):
    p = kraft.plan(size)
    for broker in p.brokers:
        assert not kraft.lost_by(p, {broker}), f"size {size}: losing {broker} loses the quorum"
    assert p.tolerates == 1


def test_two_voters_down_lose_the_quorum():
    p = kraft.plan(3)
    assert kraft.lost_by(p, {2, 3})
    assert kraft.lost_by(kraft.plan(2), {1, 2})
    assert not kraft.lost_by(kraft.plan(5), {4, 5}), "broker-only nodes do not vote"


def test_single_broker_cannot_fail_over():
    p = kraft.plan(1)
    assert kraft.lost_by(p, {1})
    assert "no failover possible" in p.describe()


@pytest.mark.parametrize("size", [0, 6, 2.0, True])
def test_plan_refuses_sizes_the_lab_does_not_run(size):
    with pytest.raises(ValueError, match=f"size={size!r} is not accepted"):
        kraft.plan(size)


def test_roles_per_node():
    assert kraft.plan(2).roles(1) == "broker,controller"
    assert kraft.plan(2).roles(3) == "controller"
    assert kraft.plan(4).roles(4) == "broker"
    with pytest.raises(ValueError, match="node 9"):
        kraft.plan(3).roles(9)


def test_describe_names_voters_and_extra_roles():
    assert kraft.plan(2).describe().startswith("voters 1,2,3 (3 controller-only)")
    assert "(4 broker-only, 5 broker-only)" in kraft.plan(5).describe()
    assert "a controller needs 2" in kraft.plan(3).describe()


def _spec(size: int) -> ClusterSpec:
    p = kraft.plan(size)

    def ports(n: int) -> NodePorts:
        return NodePorts(n, 1000 * n, 1000 * n + 1, 1000 * n + 2, 1000 * n)

    return ClusterSpec(tuple(ports(n) for n in p.brokers), "cid",
                       controllers=tuple(NodePorts(n, 0, 0, 1000 * n + 2, 0)
                                         for n in p.controller_only), voter_ids=p.voters)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5])
def test_properties_follow_the_plan(size):
    spec = _spec(size)
    p = kraft.plan(size)
    expected_voters = ",".join(f"{v}@127.0.0.1:{1000 * v + 2}" for v in p.voters)
    for node in spec.all_nodes:
        props = server_properties(spec, node, "/data")
        assert props["process.roles"] == p.roles(node.node_id)
        assert props["controller.quorum.voters"] == expected_voters
        controller_listener = f"CONTROLLER://127.0.0.1:{node.controller}"
        assert (controller_listener in props["listeners"]) == (node.node_id in p.voters)
        if node.node_id in p.controller_only:
            assert props["listeners"] == controller_listener, "no client or replication port"
            assert "advertised.listeners" not in props
        else:
            assert "CLIENT://" in props["listeners"]


def test_default_spec_keeps_every_node_a_voter():
    """A spec built without a plan (the compose file's) stays all-voters, as before."""
    spec = ClusterSpec(_spec(3).nodes, "cid")
    assert [n.node_id for n in spec.voter_nodes] == [1, 2, 3]


def test_describe_quorum_request_is_a_kafka_request():
    frame = kraft._request(7)
    (size,) = struct.unpack(">i", frame[:4])
    assert size == len(frame) - 4
    header = parse_request_header(frame[4:])
    assert (header.api_key, header.api_version, header.correlation_id) == (55, 0, 7)
    assert header.client_id == "lab"


def _response(error: int, leader: int, partition_error: int = 0) -> bytes:
    topic = b"__cluster_metadata"
    voters = b"\x02" + struct.pack(">iq", leader, 10) + b"\x00"
    return (struct.pack(">i", 7) + b"\x00" + struct.pack(">h", error)
            + b"\x02" + bytes([len(topic) + 1]) + topic
            + b"\x02" + struct.pack(">ihiiq", 0, partition_error, leader, 4, 10)
            + voters + b"\x01" + b"\x00" + b"\x00" + b"\x00")


def test_leader_read_from_a_describe_quorum_response():
    assert kraft._leader_from(_response(0, 2)) == 2
    assert kraft._leader_from(_response(6, -1)) is None  # NOT_LEADER_OR_FOLLOWER
    assert kraft._leader_from(_response(0, 2, partition_error=6)) is None
    assert kraft._leader_from(_response(0, -1)) is None


def test_nobody_listening_means_no_leader():
    assert kraft.probe_leader({1: ("127.0.0.1", 1)}, timeout=0.5) is None


def test_explanations_name_the_voters_and_the_down_ones():
    lost = kraft.QuorumState(kraft.plan(2), {1: "dead", 2: "paused", 3: "up"}, None)
    assert lost.explain() == (
        "; the controller quorum has no leader: voters 1,2,3 and 2 of them are down "
        "(1 dead, 2 paused); a controller needs 2 of 3, so no elections, no new leaders, "
        "no ISR changes until one is back (heal)")
    assert lost.line().startswith("controller quorum: NO LEADER - the controller quorum")
    fine = kraft.QuorumState(kraft.plan(3), {1: "up", 2: "dead", 3: "up"}, 3)
    assert fine.explain() == ""
    assert fine.line() == "controller quorum: voters 1,2,3, active controller 3"
    single = kraft.QuorumState(kraft.plan(1), {1: "dead"}, None)
    assert "a 1-broker cluster has no other replica or controller to fail over to" \
        in single.explain()
    electing = kraft.QuorumState(kraft.plan(3), {1: "up", 2: "up", 3: "up"}, None, "x")
    assert "has no leader yet (x)" in electing.explain()


def test_with_quorum_appends_to_both_lines():
    class Fake:
        def quorum(self) -> kraft.QuorumState:
            return kraft.QuorumState(kraft.plan(3), {1: "up", 2: "up", 3: "up"}, 1)

    text, html_text = kraft.with_quorum(Fake(), "brokers: 1:up", "<div>x</div>")
    assert text == "brokers: 1:up | controller quorum: voters 1,2,3, active controller 1"
    assert html_text.startswith("<div>x &nbsp;|&nbsp; <span class='dl-quorum'")
    assert html_text.endswith("active controller 1</span></div>")
    assert kraft.with_quorum(object(), "t", "<div></div>") == ("t", "<div></div>")


def test_docker_backend_creates_the_controller_only_node(tmp_path, monkeypatch):
    """The docker backend runs the same plan (no engine needed: the CLI calls are
    recorded): 3 containers for 2 brokers, the controller-only one with controller JVM
    options and only its CONTROLLER port published, for Cluster.quorum() to ask."""
    from deliverylab.cluster import docker as dk

    calls: list[tuple[str, ...]] = []
    monkeypatch.setattr(dk, "_docker", lambda *args, **kw: calls.append(args))
    backend = object.__new__(dk.DockerBackend)
    backend.__dict__.update(
        workdir=tmp_path, docker="docker", image="img", project="p", peers="p-peers",
        clients="p-clients", broker_opts="-Xmx384m", controller_opts="-Xmx128m", tool_opts="",
        containers={}, partitioned=set(), _created_networks=[], tell_reaper=lambda line: None)
    backend.prepare(_spec(2))
    creates = {c[2]: c for c in calls if c[0] == "create"}
    assert sorted(creates) == ["p-kafka-1", "p-kafka-2", "p-kafka-3"]
    controller = creates["p-kafka-3"]
    assert [controller[i + 1] for i, a in enumerate(controller) if a == "--publish"] == [
        "127.0.0.1:3002:3002"]
    assert "DELIVERYLAB_BROKER_OPTS=-Xmx128m" in controller
    broker = creates["p-kafka-1"]
    assert "127.0.0.1:1000:1000" in broker and "127.0.0.1:1002:1002" in broker
    props = (tmp_path / "node-3" / "server.properties").read_text()
    assert "process.roles=controller\n" in props
    assert "listeners=CONTROLLER://0.0.0.0:3002\n" in props
    assert "controller.quorum.voters=1@kafka-1:1002,2@kafka-2:2002,3@kafka-3:3002\n" in props
