"""Kafka Connect on real brokers: workers start, answer, and die with their owner;
chapter 07's central claim, repeated.

Every test here starts real Connect worker JVMs from the pinned jars.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import psutil
import pytest

from deliverylab.cluster import Cluster
from deliverylab.connect.connect import Connect, ConnectError
from deliverylab.waiting import wait_until

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def kafka() -> Iterator[Cluster]:
    with Cluster.start(brokers=3) as cluster:
        yield cluster


def test_two_workers_start_answer_and_stop_with_the_cluster():
    with Cluster.start(brokers=1) as cluster:
        connect = Connect(cluster, workers=2).start()
        assert [connect.status_of(w.index) for w in connect.workers] == ["up", "up"]
        root = connect.rest("GET", "/")
        assert root["version"] == "4.1.1"
        plugins = {p["class"] for p in connect.rest("GET", "/connector-plugins")}
        assert "org.apache.kafka.connect.file.FileStreamSourceConnector" in plugins
        pids = [w.pid for w in connect.workers]
        assert all(psutil.pid_exists(p) for p in pids)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                   for p in pids)


def test_a_worker_that_never_gets_ready_says_so_with_its_log(kafka: Cluster):
    # The module's cluster: the worker dies before it touches the brokers.
    with pytest.raises(ConnectError, match=r"worker 1 exited with code .*worker\.log"):
        Connect(kafka, workers=1, jvm_opts=["-Xmx1k"]).start()


OWNER = textwrap.dedent("""
    import json, sys, time
    from deliverylab.cluster import Cluster
    from deliverylab.connect import Connect
    cluster = Cluster.start(brokers=1)
    connect = Connect(cluster, workers=2).start()
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

    def alive() -> list[int]:
        return [p for p in pids if psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]

    wait_until(f"workers {pids} to end with their owner", lambda: not alive(), 20,
               interval=0.2, explain=lambda: f"; still alive: {alive()}")


# --- chapter 07's central claim, k runs of each side -------------------------------------
# The chapter, run headless by tests/labs/test_chapters.py, asserts the rest of its claims
# (SIGTERM, the open transaction and its ABORT marker, both zombies, the Python fence)
# once per run; here the kill with and without exactly-once is repeated RUNS times.

LINES = 100
RUNS = 2  # k runs of each claim; every one must show it


@pytest.fixture(scope="module")
def runs(kafka: Cluster):
    from deliverylab.chapters.exactly_once_sources.sources import Runs
    from deliverylab.nemesis import Nemesis

    return Runs(kafka, Nemesis(kafka), lines=LINES)


@pytest.fixture(scope="module")
def plain(kafka: Cluster):
    connect = Connect(kafka, workers=2, exactly_once=False).start()
    yield connect
    connect.stop()


@pytest.fixture(scope="module")
def eos(kafka: Cluster):
    connect = Connect(kafka, workers=2, exactly_once=True).start()
    yield connect
    connect.stop()


def test_sigkill_without_exactly_once_duplicates_exactly_the_predicted_lines(runs, plain):
    for _ in range(RUNS):
        r = runs.crash(plain, "kill")
        o = r.observed
        assert o["position_before"] is None and o["predicted"] == LINES, o
        assert o["uncommitted_duplicates"] == o["predicted"] == LINES, o
        assert o["committed_duplicates"] == LINES and o["committed_missing"] == 0, o
        assert o["taken_over_by"] != o["owner"], o
    kills = [op for op in runs.nemesis.history.faults() if op.fault == "kill_worker"]
    assert len(kills) >= RUNS


def test_sigkill_with_exactly_once_each_line_once_under_read_committed(runs, eos):
    for _ in range(RUNS):
        o = runs.crash(eos, "kill").observed
        assert o["committed_duplicates"] == 0 and o["committed_missing"] == 0, o
        assert o["committed_records"] == LINES, o
