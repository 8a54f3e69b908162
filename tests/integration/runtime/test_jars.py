"""The pins against real JVMs: set-up with no Maven, then a broker, a transaction, Spark.

The first test is the student's laptop: ``mvn`` hidden from PATH, an empty cache, the
pinned files downloaded from the repository (Central, or the mirror Maven's settings
name), and then everything the chapters rest on must work from them alone: a broker
formats its storage and starts (every class it loads is in the pins), a transaction
commits, and Spark reads the topic through its connector.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from deliverylab.runtime import classpaths, jars

LIB = str(Path(__file__).resolve().parents[3] / "lib")

SCENARIO = """
import json
from confluent_kafka import Producer
from deliverylab.clients import config
from deliverylab.cluster import Cluster
from deliverylab.spark.inspector import Inspector
from deliverylab.values import encode

with Cluster.start(brokers=1) as cluster:
    topic = cluster.create_topic("pinned", partitions=1)
    producer = Producer(config(cluster.bootstrap_servers, **{"transactional.id": "t1"}))
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(topic, value=encode("p", i))
    producer.commit_transaction(60)
    inspector = Inspector(cluster)
    rows = inspector.topic(topic).collect()
    print(json.dumps({"values": sorted(r["value"] for r in rows)}))
    inspector.stop()
"""


def path_without_mvn(tmp_path: Path) -> str:
    """A PATH whose folders hold every command of this machine but ``mvn``."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for entry in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(entry):
            continue
        for cmd in os.listdir(entry):
            target = folder / cmd
            if cmd != "mvn" and not target.exists():
                target.symlink_to(os.path.join(entry, cmd))
    return str(folder)


@pytest.mark.cluster
@pytest.mark.spark
def test_setup_without_maven_then_broker_transaction_and_spark(tmp_path):
    path = path_without_mvn(tmp_path)
    assert shutil.which("mvn", path=path) is None and shutil.which("java", path=path)
    env = {**os.environ, "PATH": path, "DELIVERYLAB_CACHE": str(tmp_path / "cache"),
           "PYTHONPATH": LIB}
    env.pop("KAFKA_HOME", None)
    setup = subprocess.run([sys.executable, "-m", "deliverylab.classroom.setup.install",
                            "--components", "kafka", "spark-kafka", "--no-archive"],
                           env=env, capture_output=True, text=True, timeout=900)
    assert setup.returncode == 0, setup.stderr[-2000:]
    assert "all checksums match the pins" in setup.stdout
    assert "[50/50]" in setup.stdout  # 46 broker + 4 connector jars, with progress (on stdout:
    # progress is news, not an error; a notebook shows stderr as a red box)
    run = subprocess.run([sys.executable, "-c", SCENARIO], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["values"] == [f"p:{i}" for i in range(5)]


def test_cluster_start_names_a_missing_pinned_jar_and_the_fix(tmp_path):
    """A cache that once completed but lost a file: one line, not NoClassDefFoundError."""
    source = classpaths.require("kafka")
    libs = tmp_path / "cache" / f"kafka-{jars.KAFKA_VERSION}" / "libs"
    libs.mkdir(parents=True)
    for jar in jars.pinned("kafka"):  # hard links: the source cache is never touched
        os.link(source / jar.name, libs / jar.name)
    (libs / ".complete").write_text("the old marker says done\n")
    (libs / f"kafka-raft-{jars.KAFKA_VERSION}.jar").unlink()
    env = {**os.environ, "DELIVERYLAB_CACHE": str(tmp_path / "cache"), "PYTHONPATH": LIB,
           "DELIVERYLAB_MAVEN_REPO": "http://127.0.0.1:9/maven2"}  # no network
    env.pop("KAFKA_HOME", None)
    proc = subprocess.run([sys.executable, "-c", "from deliverylab.cluster import Cluster; "
                           "Cluster.start(brokers=1)"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("deliverylab.errors.JarsUnavailable: cannot download "
                           f"kafka-raft-{jars.KAFKA_VERSION}.jar from http://127.0.0.1:9")
    assert "`make setup` once with the network" in last and "BUNDLE=<folder>" in last
    assert "NoClassDefFoundError" not in proc.stderr
