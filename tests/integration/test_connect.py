"""Kafka Connect on real brokers: workers start, answer, and die with their owner;
chapter 07's claims, each asserted on every run.

Every test here starts real Connect worker JVMs from the pinned jars.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import psutil
import pytest

from deliverylab.cluster import Cluster
from deliverylab.connect import ConnectError

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def kafka() -> Iterator[Cluster]:
    with Cluster.start(brokers=3) as cluster:
        yield cluster


def test_two_workers_start_answer_and_stop_with_the_cluster():
    with Cluster.start(brokers=1) as cluster:
        connect = cluster.connect(workers=2)
        assert [connect.status_of(w.index) for w in connect.workers] == ["up", "up"]
        root = connect.rest("GET", "/")
        assert root["version"] == "4.1.1"
        plugins = {p["class"] for p in connect.rest("GET", "/connector-plugins")}
        assert "org.apache.kafka.connect.file.FileStreamSourceConnector" in plugins
        pids = [w.pid for w in connect.workers]
        assert all(psutil.pid_exists(p) for p in pids)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                   for p in pids)


def test_a_worker_that_never_gets_ready_says_so_with_its_log():
    with Cluster.start(brokers=1) as cluster:
        with pytest.raises(ConnectError, match=r"worker 1 exited with code .*worker\.log"):
            cluster.connect(workers=1, jvm_opts=["-Xmx1k"])


OWNER = textwrap.dedent("""
    import json, sys, time
    from deliverylab.cluster import Cluster
    cluster = Cluster.start(brokers=1)
    connect = cluster.connect(workers=2)
    print(json.dumps([w.pid for w in connect.workers]), flush=True)
    time.sleep(600)
""")


def test_no_worker_outlives_a_killed_kernel():
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE,
                             text=True, env=os.environ.copy())
    try:
        pids = json.loads(owner.stdout.readline())
        assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
    finally:
        owner.send_signal(signal.SIGKILL)  # what a kernel restart does
        owner.wait(10)
    end = time.monotonic() + 20
    alive = pids
    while alive and time.monotonic() < end:
        alive = [p for p in pids if psutil.pid_exists(p)
                 and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.2)
    assert alive == [], f"workers {alive} outlived their owner"
