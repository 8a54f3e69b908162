"""The Docker backend on a real engine: serving, kill/pause/partition, the lost ack,
clean-up on stop and on kernel death (the compose path: test_docker_lab.py).

The session fixture makes the engine and the broker image exist: ``docker/engine.sh``
installs and starts ``dockerd`` when nothing answers (CI runs as root on a machine where
nothing runs at start), ``docker/broker-image.sh`` builds a broker image from a Debian
root filesystem and the lab's own Kafka jars when no registry is reachable (the slow
part is cached under ``~/.cache/deliverylab/docker``). Only if the engine cannot start
are these tests skipped, with the one-line reason the script gave.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from deliverylab.clients import config
from deliverylab.cluster import Cluster
from deliverylab.cluster import docker as dk
from deliverylab.cluster.properties import server_properties
from deliverylab.readers import read_records
from deliverylab.runtime import classpaths
from deliverylab.waiting import wait_until

# A fresh machine installs the engine and debootstraps the image inside the first test's
# set-up (minutes, once); the suite's 600 s per test is too short for that.
pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.timeout(1800)]
ROOT = Path(__file__).resolve().parents[3]
READY = 240.0  # generous: CI shares two cores with whatever else runs
DOCKER_DIR = ROOT / "docker"


@pytest.fixture(scope="class")
def dcluster(broker_image: str) -> Iterator[Cluster]:
    """One 3-node docker cluster with fault proxies, shared by :class:`TestCluster` and
    stopped (checked gone) before the tests that start clusters of their own."""
    with Cluster(brokers=3, backend="docker", proxy=True, ready_timeout=READY) as cluster:
        project = cluster.backend.project
        yield cluster
    assert dk.leftovers(project) == [], "the cluster left containers or networks behind"


@pytest.fixture
def cluster(dcluster: Cluster) -> Iterator[Cluster]:
    """The shared cluster, healed after each test whatever the test broke."""
    yield dcluster
    for node in list(dcluster.partitioned):
        dcluster.heal_partition(node)
    for node, state in dcluster.status().items():
        if state == "paused":
            dcluster.resume(node)
        elif state == "dead":
            dcluster.restart(node)
    for proxy in dcluster.proxies.values():
        proxy.heal()


@pytest.fixture
def topic() -> str:
    return f"d-{uuid.uuid4().hex[:8]}"


# --------------------------------------------------------------------- helpers
def produce(bootstrap: str, topic: str, values: list[bytes], **settings) -> int:
    acked: list[bool] = []
    producer = Producer(config(bootstrap, acks="all", **settings))
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, msg: acked.append(err is None))
        producer.poll(0)
    assert producer.flush(60) == 0
    return sum(acked)


def view_from(cluster: Cluster, node: int, topic: str) -> tuple[int, list[int]]:
    """(leader, ISR) of partition 0 as ``node`` itself answers.

    A fresh client bootstrapped to that one node sends its first metadata request
    there, so the answer is that node's view, not a random broker's: on the far side
    of a partition the views differ, which is the point of a partition.
    """
    spec = {n.node_id: n for n in cluster.spec.nodes}[node]
    admin = AdminClient(config(f"127.0.0.1:{spec.client}"))
    meta = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return meta.leader, list(meta.isrs)


def wait_for(what: str, probe: Callable[[], Any], timeout: float) -> Any:
    """``waiting.wait_until`` every 0.5 s, any error meaning "not yet": a broker in flux
    answers with errors."""
    return wait_until(what, probe, timeout, interval=0.5, retry=(Exception,))


def inspect(name: str) -> dict:
    out = subprocess.run(["docker", "inspect", name], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[0]


def inspect_network(name: str) -> dict:
    out = subprocess.run(["docker", "network", "inspect", name], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)[0]


# ----------------------------------------------------------------------- tests
class TestCluster:
    """Faults on one shared 3-node docker cluster (with fault proxies)."""

    def test_start_serves_through_proxies_and_published_ports(self, cluster, topic):
        assert cluster.backend_name == "docker"
        assert set(cluster.status().values()) == {"up"}
        cluster.create_topic(topic, partitions=3)
        values = [f"v{i}".encode() for i in range(500)]
        assert produce(cluster.bootstrap_servers, topic, values) == 500
        got = read_records(cluster.bootstrap_servers, [topic], expect=500)
        assert sorted(r.value for r in got) == sorted(values)
        # The proxies really carried it, and the brokers' own ports work too.
        assert sum(p.requests("Produce") for p in cluster.proxies.values()) > 0
        assert len(read_records(cluster.direct_bootstrap_servers, [topic], expect=500)) == 500

    def test_lost_ack_recipe_makes_a_duplicate_and_idempotence_prevents_it(self, cluster,
                                                                           topic):
        # Early in the class: before kills and partitions move leaders around.
        from deliverylab.chapters.at_least_once.lost_ack import lost_ack_duplicate

        result = lost_ack_duplicate(cluster, topic)
        assert result.copies == 2, str(result)
        safe = lost_ack_duplicate(cluster, topic + "-idem", idempotent=True)
        assert safe.copies == 1, str(safe)

    def test_ports_published_on_loopback_only_and_names_are_private(self, cluster):
        project = cluster.backend.project
        assert project.startswith(f"deliverylab-{os.getpid()}-")
        for node in cluster.spec.nodes:
            info = inspect(cluster.backend.container(node.node_id))
            assert info["Config"]["Labels"][dk.LABEL] == project
            bindings = info["HostConfig"]["PortBindings"]
            # Client ports, and the CONTROLLER port of voters (Cluster.quorum() asks it).
            voter = "controller" in cluster.spec.roles(node.node_id)
            published = [p for p in (node.client, getattr(node, "direct", None),
                                     node.controller if voter else None) if p]
            assert bindings == {f"{p}/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(p)}]
                                for p in published}
            assert set(info["NetworkSettings"]["Networks"]) == {cluster.backend.peers,
                                                                cluster.backend.clients}
        assert inspect_network(cluster.backend.peers)["Internal"] is True

    def test_brokers_run_the_generated_configuration(self, cluster):
        """The container's server.properties is the local generator's, bar the hosts."""
        node = cluster.spec.nodes[0]
        name = cluster.backend.container(node.node_id)
        text = subprocess.run(["docker", "exec", name, "cat", f"{dk.CONF_DIR}/server.properties"],
                              capture_output=True, text=True, check=True).stdout
        got = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
        local = server_properties(cluster.spec, node, dk.DATA_DIR)
        differ = {k for k in local if local[k] != got.get(k)}
        assert differ == {"listeners", "advertised.listeners", "controller.quorum.voters"}
        assert got["listeners"].startswith(f"CLIENT://0.0.0.0:{node.client},")
        assert got["advertised.listeners"].startswith(f"CLIENT://127.0.0.1:{node.advertised},")
        assert "INTERNAL://kafka-1:" in got["advertised.listeners"]

    def test_kill_is_docker_kill_and_restart_rejoins(self, cluster, topic):
        cluster.create_topic(topic, partitions=1, config={"min.insync.replicas": 2})
        old = cluster.leader(topic, 0)
        cluster.kill(old)
        state = inspect(cluster.backend.container(old))["State"]
        assert state["Running"] is False and state["ExitCode"] == 137
        assert cluster.status()[old] == "dead"
        assert cluster.wait_leader(topic, 0, exclude=(old,)) != old
        assert produce(cluster.bootstrap_servers, topic, [b"after-kill"] * 10) == 10
        cluster.restart(old)
        assert cluster.status()[old] == "up"
        assert old in cluster.wait_isr(topic, 0, 3)

    def test_pause_freezes_the_container_and_resume_thaws_it(self, cluster, topic):
        cluster.create_topic(topic, partitions=1)
        leader = cluster.leader(topic, 0)
        node = next(n for n in cluster.nodes if n != leader)
        cluster.pause(node)
        assert inspect(cluster.backend.container(node))["State"]["Paused"] is True
        assert cluster.status()[node] == "paused"
        # The controller fences a silent broker after broker.session.timeout.ms (3 s) and
        # takes it out of the ISR, so the leader keeps taking acks=all writes.
        wait_for("the paused follower out of the ISR",
                 lambda: node not in view_from(cluster, leader, topic)[1], 30)
        assert produce(cluster.bootstrap_servers, topic, [b"while-paused"] * 5) == 5
        cluster.resume(node)
        assert inspect(cluster.backend.container(node))["State"]["Paused"] is False
        assert cluster.status()[node] == "up"
        wait_for("the resumed follower back in the ISR",
                 lambda: node in view_from(cluster, leader, topic)[1], 60)

    def test_a_pause_the_freezer_refuses_is_a_sigstop_and_resume_continues_it(
            self, cluster, topic, monkeypatch):
        """runc's cgroup-v1 freezer can give up on a loaded host ("unable to freeze"):
        the broker is then stopped by SIGSTOP (here with no freezer try at all), its
        processes show stopped, and resume continues them."""
        monkeypatch.setattr(dk, "PAUSE_TRIES", 0)
        cluster.create_topic(topic, partitions=1)
        node = next(n for n in cluster.nodes if n != cluster.leader(topic, 0))
        name = cluster.backend.container(node)
        cluster.pause(node)
        assert inspect(name)["State"]["Paused"] is False  # not frozen: stopped
        assert cluster.backend._stopped_by_signal(name)
        assert cluster.status()[node] == "paused"
        cluster.resume(node)
        assert not cluster.backend._stopped_by_signal(name)
        assert cluster.status()[node] == "up" and not cluster.backend.signal_stopped
        assert node in cluster.wait_isr(topic, 0, 3)

    def test_partition_isolates_a_node_from_its_peers_not_from_clients(self, cluster, topic):
        cluster.create_topic(topic, partitions=1, config={"min.insync.replicas": 2})
        leader = cluster.leader(topic, 0)
        others = [n for n in cluster.nodes if n != leader]
        cluster.partition(leader)
        assert cluster.partitioned == {leader}
        assert set(inspect(cluster.backend.container(leader))["NetworkSettings"]["Networks"]) \
            == {cluster.backend.clients}
        # The majority side elects a new leader and drops the lost node from the ISR...
        new = wait_for("a new leader on the majority side",
                       lambda: (lambda v: v[0] in others and leader not in v[1] and v)(
                           view_from(cluster, others[0], topic)), 90)
        assert new[0] != leader
        # ...while clients still reach the lost node: a client that knows only its
        # address gets an answer to a metadata request (list_topics raises if none comes).
        # What it says may be stale or empty (cut off from the controllers, its view of
        # the topic can lack the partition), so only that it answered is checked.
        spec = {n.node_id: n for n in cluster.spec.nodes}[leader]
        answer = AdminClient(config(f"127.0.0.1:{spec.client}")).list_topics(topic,
                                                                             timeout=10)
        print("the partitioned node answered:", answer.orig_broker_name, answer.brokers)
        assert answer.brokers, (answer.orig_broker_name, answer.topics)
        cluster.heal_partition(leader)
        assert cluster.partitioned == set()
        wait_for("the healed node back in the ISR",
                 lambda: leader in view_from(cluster, others[0], topic)[1], 60)
        # Writes go to the new leader; everyone agrees again.
        assert produce(cluster.bootstrap_servers, topic, [b"after-heal"] * 5) == 5

    @pytest.mark.parametrize("acks,lost", [(1, 4), ("all", 0)])
    def test_a_partitioned_leader_loses_what_it_acked_alone_only_with_acks_1(
            self, cluster, topic, acks, lost):
        from deliverylab.chapters.at_most_once import recipes

        result = recipes.partitioned_leader(cluster, topic, acks=acks, count=4)
        assert len(result.acked) == 4, str(result)  # acks=all: by the new leader
        if acks == 1:
            assert result.acked_while_cut == 4, str(result)  # the cut-off leader, alone
        assert len(result.lost) == lost, str(result)
        assert result.new_leader != result.old_leader and cluster.partitioned == set()
        assert [op.fault for op in result.history.faults()] == ["partition_leader", "heal"]

    def test_the_partition_fault_is_a_history_op_and_heal_rejoins(self, cluster, topic):
        from deliverylab.history import History
        from deliverylab.nemesis import Nemesis

        cluster.create_topic(topic, partitions=1, config={"min.insync.replicas": 2})
        history = History()
        nemesis = Nemesis(cluster, history=history)
        assert nemesis.unavailable("partition_leader") is None
        record = nemesis.partition_leader(topic)
        assert cluster.partitioned == {record.node}
        healed = nemesis.heal()
        assert f"reconnected [{record.node}]" in healed.did and cluster.partitioned == set()
        assert [op.fault for op in history.faults()] == ["partition_leader", "heal"]
        assert record.node in cluster.isr(topic, 0)

    def test_logs_come_from_the_container(self, cluster):
        assert "Kafka Server started" in cluster.log_path(1).read_text()
        assert cluster.logs(1, lines=3).count("\n") == 2


def unreadable(image: str, user: str = "1000") -> list[str]:
    """The files under /opt/kafka that ``user`` (the broker's, in every image we run)
    cannot read inside ``image``."""
    out = subprocess.run(["docker", "run", "--rm", "--user", user, "--entrypoint", "find",
                          image, "/opt/kafka", "!", "-readable"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"find in {image} failed: {out.stderr.strip()}"
    return out.stdout.split()


def test_the_broker_s_user_can_read_every_file_of_the_image(broker_image):
    assert unreadable(broker_image) == []


def test_jars_of_other_modes_rebuild_the_image_and_the_broker_s_user_reads_them(
        broker_image, docker_script, tmp_path):
    """The cold-machine bug: set-up once wrote every jar 0600, the image copied them as
    root's, each container broker died unable to load its main class, and a machine
    that had built the image before kept it (its label hashed the jars' names only).
    Now the label hashes contents and modes, and the image's files are readable
    whatever modes the host's jars have."""
    libs = tmp_path / "kafka" / "libs"
    shutil.copytree(classpaths.kafka_libs(), libs)
    image = f"deliverylab/kafka-modes-test:{uuid.uuid4().hex[:8]}"
    labels = []
    try:
        for mode in (0o644, 0o600):
            for jar in libs.glob("*.jar"):
                jar.chmod(mode)
            proc = docker_script("broker-image.sh", 1800, KAFKA_HOME=str(tmp_path / "kafka"),
                                 DELIVERYLAB_BUILD_IMAGE=image)
            assert proc.returncode == 0, f"building {image} failed: {proc.stderr[-2000:]}"
            assert "is up to date" not in proc.stderr, f"jars {mode:o}: the image was reused"
            labels.append(subprocess.run(
                ["docker", "image", "inspect", "-f",
                 '{{index .Config.Labels "deliverylab.inputs"}}', image],
                capture_output=True, text=True, check=True).stdout.strip())
            assert unreadable(image) == [], f"built from {mode:o} jars"
        assert labels[0] != labels[1]
    finally:
        subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)
    # An identical build under another tag shares the session image's id: replacing it
    # must not remove the image the session's tag still names (it did, in a cold CI run).
    assert dk.image_present(broker_image), f"building {image} removed {broker_image}"


def test_auto_picks_docker_when_engine_and_image_are_there(broker_image):
    assert dk.usable()
    cluster = Cluster(brokers=1, backend="auto")
    assert cluster.backend_name == "auto"
    # resolving the backend is all we check here; starting is covered above
    backend = cluster._make_backend()
    try:
        assert cluster.backend_name == "docker" and backend.name == "docker"
    finally:
        backend.close()
        shutil.rmtree(cluster.workdir, ignore_errors=True)


def test_kernel_death_removes_containers_and_networks(broker_image, tmp_path):
    """A SIGKILLed owner (a kernel restart) leaves nothing behind: the reaper's
    ``exec docker rm -f`` and ``docker network rm`` run when its pipe closes."""
    marker = tmp_path / "project"
    code = textwrap.dedent(f"""
        import time
        from deliverylab.cluster import Cluster
        c = Cluster(brokers=1, backend="docker", ready_timeout={READY}).start()
        open({str(marker)!r}, "w").write(c.backend.project)
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", code], env=os.environ.copy())
    try:
        wait_for("the owner's cluster up", lambda: marker.exists() and marker.read_text(), 180)
        project = marker.read_text()
        assert len(dk.leftovers(project)) == 3  # one container, two networks
    finally:
        owner.kill()
        owner.wait()
    wait_for("containers and networks removed", lambda: dk.leftovers(project) == [], 60)


def test_a_missing_image_is_one_line_that_says_what_to_do(broker_image, monkeypatch):
    monkeypatch.setenv(dk.IMAGE_ENV, "deliverylab/no-such-image:0")
    cluster = Cluster(brokers=1, backend="docker")
    with pytest.raises(dk.DockerUnavailable) as err:
        cluster.start()
    message = str(err.value)
    assert "\n" not in message and "docker pull" in message and "broker-image.sh" in message
    assert not cluster.workdir.exists()
