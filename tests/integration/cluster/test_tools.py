"""Kafka's own command-line tools against a real lab cluster, from the pinned jars.

Each tool answers a real question (which topics, where a group stands, which
transaction is open, what a segment holds), not just ``--version``.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from deliverylab.clients import config
from deliverylab.cluster import Cluster, tools
from deliverylab.errors import LabError
from deliverylab.runtime import classpaths, jars

pytestmark = [pytest.mark.cluster]
LIB = str(Path(__file__).resolve().parents[3] / "lib")


@pytest.fixture(scope="module")
def cluster1() -> Iterator[Cluster]:
    classpaths.require("tools")  # downloads the tools set if this cache predates it
    with Cluster.start(brokers=1, proxy=True) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def topic(cluster1: Cluster) -> str:
    return cluster1.create_topic(f"tools-{uuid.uuid4().hex[:6]}", partitions=1)


def test_every_main_class_is_in_its_pinned_jars():
    for name, (component, main, _) in tools.TOOLS.items():
        entry = main.replace(".", "/") + ".class"
        found = [p for p in classpaths.classpath(component)
                 if entry in zipfile.ZipFile(p).namelist()]
        assert found, f"{name}: {main} is in no jar of {component}"


def test_topics_list_and_the_printed_command_line(cluster1, topic):
    assert topic in cluster1.tool("kafka-topics", "--list").split()
    line = cluster1.tool_command("kafka-topics", "--list")
    assert f"--bootstrap-server {cluster1.direct_bootstrap_servers} --list" in line
    assert cluster1.direct_bootstrap_servers != cluster1.bootstrap_servers  # not the proxy
    # The printed line really works in a shell (python -m or the console script).
    out = subprocess.run(line, shell=True, capture_output=True, text=True, timeout=120,
                         env={**__import__("os").environ, "PYTHONPATH": LIB})
    assert out.returncode == 0, out.stderr
    assert topic in out.stdout.split()


def test_console_consumer_and_consumer_groups_describe(cluster1, topic):
    producer = Producer(config(cluster1.direct_bootstrap_servers))
    for i in range(3):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0
    out = cluster1.tool("kafka-console-consumer", "--topic", topic, "--from-beginning",
                        "--max-messages", "3", "--timeout-ms", "30000")
    assert out.split() == ["v0", "v1", "v2"]
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(config(cluster1.direct_bootstrap_servers, **{
        "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}))
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 30
    while got < 2 and time.monotonic() < deadline:
        msg = consumer.poll(1)
        if msg is not None and msg.error() is None:
            got += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    described = cluster1.tool("kafka-consumer-groups", "--describe", "--group", group)
    row = next(ln.split() for ln in described.splitlines() if topic in ln)
    # GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    assert row[:6] == [group, topic, "0", "2", "3", "1"]


def test_transactions_list_shows_an_open_transaction_and_dump_log_its_marker(cluster1,
                                                                            topic):
    txn_id = f"txn-{uuid.uuid4().hex[:6]}"
    producer = Producer(config(cluster1.direct_bootstrap_servers,
                               **{"transactional.id": txn_id}))
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"in-txn")
    assert producer.flush(30) == 0
    listed = cluster1.tool("kafka-transactions", "list")
    assert txn_id in listed
    described = cluster1.tool("kafka-transactions", "describe", "--transactional-id", txn_id)
    assert "Ongoing" in described
    producer.commit_transaction(30)
    segment = next((cluster1.backend.node_dir(1) / "data" / f"{topic}-0").glob("*.log"))
    dumped = cluster1.tool("kafka-dump-log", "--files", str(segment), "--print-data-log")
    assert "isTransactional: true" in dumped and "endTxnMarker: COMMIT" in dumped


def test_a_failing_tool_says_why_in_one_line(cluster1):
    with pytest.raises(LabError, match="kafka-topics exited 1: .*(not exist|Unknown topic)"):
        cluster1.tool("kafka-topics", "--describe", "--topic", "no-such-topic")


def test_python_m_launcher_passes_the_exit_code_through(cluster1):
    proc = subprocess.run([sys.executable, "-m", "deliverylab.cluster.tools", "kafka-topics",
                           "--bootstrap-server", cluster1.direct_bootstrap_servers,
                           "--no-such-option"], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": LIB})
    assert proc.returncode != 0 and "no-such-option" in proc.stderr


def test_a_tool_maps_the_class_archive_recorded_against_a_broker(cluster1, tmp_path):
    """``-Xshare:on`` makes a JVM that cannot map its archive exit non-zero, so a tool
    answering here really loaded its classes from the recorded archive."""
    archive = tools.record_class_archive(cluster1.bootstrap_servers, tmp_path / "t.jsa")
    assert archive is not None and archive.stat().st_size > 1_000_000
    cmd = tools.java_command("kafka-transactions", "--bootstrap-server",
                             cluster1.bootstrap_servers, "list",
                             jvm_opts=("-Xshare:on", f"-XX:SharedArchiveFile={archive}"))
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "TransactionalId" in done.stdout
    # The JVM takes the last of a repeated flag: jvm_opts come after setup's archive.
    missing = tools.java_command("kafka-topics", "--version", jvm_opts=(
        "-Xshare:on", f"-XX:SharedArchiveFile={tmp_path / 'none.jsa'}"))
    assert subprocess.run(missing, capture_output=True, timeout=120).returncode != 0


def test_setup_recorded_the_archive_every_tool_run_uses():
    """``make setup`` (which ``make test`` runs first) records it into the cache."""
    assert tools.class_archive().exists(), "make setup records it: run `make setup`"
    cmd = tools.java_command("kafka-topics", "--version", jvm_opts=("-Xshare:on",))
    assert f"-XX:SharedArchiveFile={tools.class_archive()}" in cmd
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == jars.KAFKA_VERSION, done.stderr

