"""Nothing of a lab run left in the shared ``/tmp`` (issue 40): a child Python -- a
kernel's stand-in, with ``TMPDIR`` a fresh folder of its own -- starts a one-broker
cluster, writes lz4-compressed records (the broker's lz4-java loads its native
library), lists the topics with Kafka's CLI tool and reads the topic with Spark (the
driver's lz4, its ``spark-*`` and ``blockmgr-*`` folders). While its JVMs run, none of
them may have perf data in ``/tmp/hsperfdata_*``; after the child ends -- stopped, or
SIGKILLed as a kernel restart does -- the real ``/tmp`` must hold no entry the run made
with a JVM's names, and a stopped run leaves its TMPDIR empty too.

``/tmp`` is shared with the rest of the machine, so the comparison is by JVM names and
by the run's own pids, not by the folder's whole listing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

import psutil
import pytest
from tests import lanes

from deliverylab.process.children import child_env
from deliverylab.waiting import wait_until

# Solo: the comparison of /tmp is only a fact when nothing else on the machine writes
# JVM-named entries there meanwhile -- beside it, another worker's cluster
# (deliverylab-cluster-*) or Spark driver (deliverylab-spark-*) would count as this run's.
# In the solo part it shares the HOST lane with the three-student hub, whose students run
# clusters and Spark on the host; beside it runs only the Docker lane, whose JVMs are in
# containers, each with a /tmp of its own (tests/lanes.py).
pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.solo,
              lanes.HOST]

SHARED = Path("/tmp")
#: What JVMs, lz4-java, snappy-java, zstd-jni and Spark name what they leave in /tmp.
JVM_NAMES = ("hsperfdata_*", "liblz4-java*", "snappy-*", "libsnappyjava*", "libzstd-jni*",
             "spark-*", "blockmgr-*", "deliverylab-spark-*", "deliverylab-cluster-*")

CHILD = r"""
import json, os, sys
from confluent_kafka import Producer
from deliverylab import clients
from deliverylab.cluster import Cluster, tools
from deliverylab.spark import session

cluster = Cluster.start(brokers=1)
bootstrap = cluster.bootstrap_servers
cluster.create_topic("leftovers", partitions=1)
producer = Producer({**clients.config(bootstrap), "compression.type": "lz4"})
for i in range(500):
    producer.produce("leftovers", f"value-{i}".encode())
assert producer.flush(30) == 0
listed = tools.run("kafka-topics", "--list", bootstrap=bootstrap)
spark = session.session()
count = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", "leftovers").load().groupBy("partition").count().collect())
print("RESULT", json.dumps({"count": sum(r["count"] for r in count),
                            "listed": listed.split()}), flush=True)
sys.stdin.read()  # until the test closes it
session.stop()
cluster.stop()
"""


def jvm_entries() -> set[str]:
    """``/tmp``'s entries with a JVM's names, and each ``hsperfdata_*`` folder's files."""
    out = set()
    for entry in SHARED.iterdir():
        if any(fnmatch(entry.name, pattern) for pattern in JVM_NAMES):
            out.add(entry.name)
            if entry.name.startswith("hsperfdata_") and entry.is_dir():
                try:
                    out |= {f"{entry.name}/{f.name}" for f in entry.iterdir()
                        if f.name.isdigit()}
                except OSError:
                    continue
    return out


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def java_pids(root: int) -> list[int]:
    try:
        kids = psutil.Process(root).children(recursive=True)
    except psutil.Error:
        return []
    pids = []
    for proc in kids:
        try:
            if proc.name() == "java":
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


@pytest.mark.parametrize("ending", ["stopped", "killed"])
def test_a_run_leaves_nothing_in_the_shared_tmp(tmp_path: Path, ending: str):
    own = tmp_path / "tmpdir"
    own.mkdir()
    before = jvm_entries()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True,
                             env={**child_env(), "TMPDIR": str(own)},
                             start_new_session=True)
    everything: set[int] = set()
    try:
        line = ""
        while not line.startswith("RESULT "):  # the lab's own messages come first
            line = child.stdout.readline()
            assert line, f"the child ended before reading the topic (exit {child.wait(60)})"
        got = json.loads(line.removeprefix("RESULT "))
        assert got["count"] == 500 and "leftovers" in got["listed"], got
        jvms = java_pids(child.pid)
        assert len(jvms) >= 2, f"expected the broker's and Spark's JVMs, found {jvms}"
        everything = {child.pid, *(p.pid for p in psutil.Process(child.pid).children(
            recursive=True))}
        perf = [p for p in SHARED.glob("hsperfdata_*/*") if p.name.isdigit()
                and int(p.name) in jvms]
        assert perf == [], f"JVMs of the run wrote perf data to /tmp: {perf}"
        if ending == "stopped":
            child.stdin.close()
            assert child.wait(120) == 0
        else:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(30)
        wait_until("the run's processes to end with it",
                   lambda: not [p for p in everything if running(p)], 60, interval=0.5,
                   explain=lambda: f"; still running: {[p for p in everything if running(p)]}")
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait(30)
    # perf data files are the run's if their pid was (other JVMs on the machine, e.g.
    # another user's, may come and go meanwhile); any other JVM-named entry is new
    made = sorted(e for e in jvm_entries() - before if "/" not in e
                  or int(e.rsplit("/", 1)[1]) in everything)
    assert made == [], f"the run left these in {SHARED}: {made}"
    if ending == "stopped":
        assert sorted(p.name for p in own.iterdir()) == [], "the stopped run left files " \
            "in its own TMPDIR"
