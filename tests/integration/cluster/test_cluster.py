"""The Cluster on real brokers: serving, faults, transactions, clean-up, errors. Failover
and the controller quorum at every size: test_sizes.py (one cluster per size)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest
from confluent_kafka import Producer

from deliverylab.clients import config
from deliverylab.cluster import Cluster
from deliverylab.errors import BrokerExited, ClusterNotReady, PortTaken
from deliverylab.readers import read_records
from deliverylab.waiting import verdict_within, wait_until

pytestmark = pytest.mark.cluster
LIB = str(Path(__file__).resolve().parents[3] / "lib")


def produce(bootstrap: str, topic: str, values: list[bytes], **settings) -> int:
    """Produce with acks=all and return how many were acknowledged."""
    acked = []
    producer = Producer(config(bootstrap, acks="all", **settings))
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, msg: acked.append(err is None))
        producer.poll(0)
    assert producer.flush(60) == 0
    return sum(acked)


def test_produce_and_consume_everything(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=3)
    values = [f"v{i}".encode() for i in range(1000)]
    assert produce(cluster.bootstrap_servers, topic_name, values) == 1000
    got = [r.value for r in read_records(cluster.bootstrap_servers, [topic_name],
                                         expect=1000)]
    assert sorted(got) == sorted(values)
    assert set(cluster.status().values()) == {"up"}


def test_kill_leader_elects_new_one_and_old_rejoins_isr(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=1, config={"min.insync.replicas": 2})
    old = cluster.leader(topic_name, 0)
    cluster.kill(old)
    assert cluster.status()[old] == "dead"
    new = cluster.wait_leader(topic_name, 0, exclude=(old,))
    assert new != old
    assert produce(cluster.bootstrap_servers, topic_name, [b"after-kill"] * 10) == 10
    cluster.restart(old)
    assert cluster.status()[old] == "up"
    isr = cluster.wait_isr(topic_name, 0, 3)
    assert old in isr


def test_pause_and_resume(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=1)
    node = [n for n in cluster.nodes if n != cluster.leader(topic_name, 0)][0]
    pid = cluster.backend.pid(node)
    cluster.pause(node)
    assert cluster.status()[node] == "paused"
    assert psutil.Process(pid).status() == psutil.STATUS_STOPPED
    # The leader still takes acks=all writes: the paused follower drops out of the ISR.
    assert produce(cluster.bootstrap_servers, topic_name, [b"while-paused"] * 5) == 5
    cluster.resume(node)
    assert cluster.status()[node] == "up"
    assert psutil.Process(pid).status() != psutil.STATUS_STOPPED
    assert node in cluster.wait_isr(topic_name, 0, 3)


def transactions(bootstrap: str, topic: str) -> None:
    producer = Producer(config(bootstrap, **{"transactional.id": f"tx-{topic}"}))
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"aborted-{i}".encode(), partition=i % 2)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, f"committed-{i}".encode(), partition=i % 2)
    producer.commit_transaction(30)


def check_isolation(bootstrap: str, topic: str) -> None:
    committed = [r.value for r in read_records(bootstrap, [topic], expect=5)]
    uncommitted = [r.value for r in read_records(bootstrap, [topic], "read_uncommitted",
                                                 expect=10)]
    assert sorted(committed) == sorted(f"committed-{i}".encode() for i in range(5))
    assert sorted(uncommitted) == sorted(
        [f"committed-{i}".encode() for i in range(5)]
        + [f"aborted-{i}".encode() for i in range(5)])


def test_transactions_committed_visible_aborted_hidden(cluster, topic_name):
    cluster.create_topic(topic_name, partitions=2)
    transactions(cluster.bootstrap_servers, topic_name)
    check_isolation(cluster.bootstrap_servers, topic_name)


def test_single_broker_runs_transactions(topic_name):
    with Cluster.start(brokers=1) as single:
        assert single.status() == {1: "up"}
        single.create_topic(topic_name, partitions=2)
        transactions(single.bootstrap_servers, topic_name)
        check_isolation(single.bootstrap_servers, topic_name)
        workdir = single.workdir
        pid = single.backend.pid(1)
    assert not workdir.exists(), "data directory removed on stop"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_owner_killed_with_sigkill_leaves_no_broker(tmp_path):
    """A kernel restart is a SIGKILL of the owner: the reaper must take the brokers down."""
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from deliverylab.cluster import Cluster
        c = Cluster.start(brokers=1)
        print(c.backend.pid(1), c.workdir, flush=True)
        time.sleep(600)
    """))
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": LIB})
    line = owner.stdout.readline().split()
    assert line, "the owner did not start its cluster"
    broker_pid, workdir = int(line[0]), Path(line[1])
    assert psutil.pid_exists(broker_pid)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    # A zombie counts as gone too: running out of time is not the failure, the assert is.
    verdict_within(f"broker {broker_pid} to exit", lambda: not psutil.pid_exists(broker_pid),
                   10, interval=0.2)
    gone = not psutil.pid_exists(broker_pid) or \
        psutil.Process(broker_pid).status() == psutil.STATUS_ZOMBIE
    assert gone, f"broker {broker_pid} outlived its owner"
    wait_until(f"{workdir} to be removed", lambda: not workdir.exists(), 5,
               interval=0.2)


def run_python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**env, "PYTHONPATH": LIB}, timeout=120)


def test_missing_java_says_so(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # no java here
    proc = run_python("from deliverylab.cluster import Cluster; Cluster.start(brokers=1)", env)
    assert proc.returncode != 0
    assert "JavaNotFound: Java not found" in proc.stderr
    assert "Java 17 or newer" in proc.stderr


def test_old_java_says_so(tmp_path):
    fake = tmp_path / "java"
    fake.write_text('#!/bin/sh\necho \'java version "1.8.0_392"\' >&2\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = f"{tmp_path}:/usr/bin:/bin"
    proc = run_python("from deliverylab.cluster import Cluster; Cluster.start(brokers=1)", env)
    assert proc.returncode != 0
    assert f"{fake} (version 8)" in proc.stderr


def test_port_taken_is_named():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(PortTaken, match=f"port {port} on 127.0.0.1 is taken"):
            Cluster.start(brokers=1, base_port=port)


def test_broker_exiting_during_start_shows_its_log():
    with pytest.raises(BrokerExited) as err:
        Cluster.start(brokers=1, overrides={"authorizer.class.name": "no.such.Authorizer"})
    assert "node 1 exited" in str(err.value)
    assert "no.such.Authorizer" in err.value.log_tail


def test_readiness_timeout_names_the_condition():
    with pytest.raises(ClusterNotReady, match=r"waiting for the cluster to be ready \(all 3 "
                       "brokers registered in the metadata"):
        Cluster.start(brokers=3, ready_timeout=1)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="brokers=0 is not accepted"):
        Cluster(brokers=0)
    with pytest.raises(ValueError, match="backend='kubernetes' is not accepted"):
        Cluster(backend="kubernetes")


def test_a_stalled_restart_is_dumped_killed_and_started_again(cluster, topic_name):
    """A restart whose start-up stalls (here: its controllers are paused, so it cannot
    register) leaves the JVM's telling threads in a warning and starts the node once
    more; the second start finds the controllers back and succeeds."""
    from deliverylab.cluster.restart import RestartRetried

    cluster.create_topic(topic_name, partitions=1)
    node = cluster.nodes[0]
    others = [n for n in cluster.nodes if n != node]
    cluster.kill(node)
    for n in others:
        cluster.pause(n, allow_quorum_loss=True)
    signal_node = cluster.backend.signal
    dumped = []

    def signal_and_heal(n: int, action: str) -> None:
        signal_node(n, action)
        if action == "dump":  # the first start was dumped: the second one may succeed
            dumped.append(n)
            for other in others:
                cluster.resume(other)

    cluster.backend.signal = signal_and_heal
    try:
        with pytest.warns(RestartRetried) as caught:
            cluster.restart(node, timeout=20)
    finally:
        del cluster.backend.signal
        for n in others:
            cluster.resume(n)
    assert dumped == [node]
    said = str(caught[0].message)
    assert f"node {node}'s start-up stalled" in said and '"main"' in said, said
    assert node in cluster.live_brokers() and cluster.status()[node] == "up"
