"""Connect's pure parts, without a worker: configurations, answers read, bad values."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from deliverylab.connect.connect import (
    FILE_SOURCE,
    Connect,
    ConnectError,
    Worker,
    _wait_process_state,
    committed_position,
    file_source,
    task_worker,
    worker_properties,
)
from deliverylab.errors import BadValue, ClusterNotReady
from deliverylab.runtime import classpaths


def test_worker_properties_hand_a_dead_workers_task_over_at_once_and_flush_late():
    props = worker_properties("127.0.0.1:9092", "g1", 8083, False, 600_000, 3)
    assert props["group.id"] == "g1"
    assert {props[k] for k in ("config.storage.topic", "offset.storage.topic",
                               "status.storage.topic")} == {"g1-configs", "g1-offsets",
                                                           "g1-status"}
    assert props["scheduled.rebalance.max.delay.ms"] == "0"
    assert props["offset.flush.interval.ms"] == "600000"
    assert props["exactly.once.source.support"] == "disabled"
    assert props["listeners"] == "http://127.0.0.1:8083"
    assert props["rest.advertised.port"] == "8083"
    assert props["plugin.discovery"] == "service_load"
    assert all(isinstance(v, str) for v in props.values())
    eos = worker_properties("b:1", "g2", 1, True, 1000, 1)
    assert eos["exactly.once.source.support"] == "enabled"
    assert eos["offset.storage.replication.factor"] == "1"


def test_file_source_config_poll_and_interval(tmp_path: Path):
    conf = file_source(tmp_path / "x.txt", "lines")
    assert conf["connector.class"] == FILE_SOURCE and conf["tasks.max"] == "1"
    assert conf["file"] == str((tmp_path / "x.txt").resolve())
    assert "exactly.once.support" not in conf and "transaction.boundary" not in conf
    conf = file_source(tmp_path / "x.txt", "lines", exactly_once="required",
                       boundary="interval", interval_ms=15_000)
    assert conf["exactly.once.support"] == "required"
    assert conf["transaction.boundary"] == "interval"
    assert conf["transaction.boundary.interval.ms"] == "15000"
    # the broker must not abort the open transaction before the interval ends
    assert int(conf["producer.override.transaction.timeout.ms"]) > 15_000


@pytest.mark.parametrize("kwargs, name", [
    ({"exactly_once": "yes"}, "exactly_once"),
    ({"boundary": "connector"}, "boundary"),
    ({"boundary": "interval"}, "interval_ms"),
    ({"boundary": "interval", "interval_ms": 10}, "interval_ms"),
])
def test_file_source_refuses_bad_values_in_one_line(tmp_path: Path, kwargs, name):
    with pytest.raises(BadValue, match=f"^{name}="):
        file_source(tmp_path / "x", "t", **kwargs)


def test_committed_position_reads_the_offsets_answer():
    assert committed_position([]) is None
    answer = [{"partition": {"filename": "/x"}, "offset": {"position": 410}}]
    assert committed_position(answer) == 410


def test_task_worker_maps_a_worker_id_to_its_number(tmp_path: Path):
    workers = [Worker(1, 8083, tmp_path), Worker(2, 8084, tmp_path)]
    status = {"tasks": [{"id": 0, "state": "RUNNING", "worker_id": "127.0.0.1:8084"}]}
    assert task_worker(status, workers) == 2
    assert task_worker(status, workers, task=1) is None
    assert task_worker({"tasks": []}, workers) is None


class _FakeConnect:
    """Just the verbs the Nemesis uses, recording what it was asked."""

    def __init__(self, connectors: list[str], owner: int) -> None:
        self.connectors = connectors
        self.owner = owner
        self.done: list[str] = []
        self.workers = [Worker(1, 1, Path(".")), Worker(2, 2, Path("."))]
        self.workers[0].state = "paused"

    def last_connector(self) -> str:
        return self.connectors[-1]

    def task_worker(self, name: str) -> int:
        return self.owner

    def worker(self, index: int) -> Worker:
        return self.workers[index - 1]

    def status_of(self, index: int) -> str:
        return self.workers[index - 1].state

    def kill(self, index: int) -> str:
        self.done.append(f"kill {index}")
        return f"killed worker {index}"

    def resume(self, index: int) -> str:
        self.done.append(f"resume {index}")
        return f"resumed worker {index}"


class _FakeCluster:
    def __init__(self, *connects: _FakeConnect) -> None:
        self.connects = list(connects)


def test_worker_faults_aim_at_the_connect_cluster_holding_the_connector():
    from deliverylab.nemesis import Nemesis

    plain, eos = _FakeConnect(["plain-1"], owner=2), _FakeConnect(["eos-1"], owner=1)
    nemesis = Nemesis(_FakeCluster(plain, eos))
    record = nemesis.apply("kill_worker", connector="plain-1")
    assert plain.done == ["kill 2"] and eos.done == [] and record.node == 2
    nemesis.kill_worker()  # no connector: the Connect cluster started last, its task
    assert eos.done == ["kill 1"]
    nemesis.resume_worker(connector="plain-1")  # every paused worker of that cluster
    assert plain.done == ["kill 2", "resume 1"]
    faults = [op.fault for op in nemesis.history.faults()]
    assert faults == ["kill_worker", "kill_worker", "resume_worker"]


def test_a_worker_fault_without_a_running_connect_cluster_says_how_to_start_one():
    from deliverylab.nemesis import Nemesis

    stopped = _FakeConnect(["plain-1"], owner=1)
    for w in stopped.workers:
        w.state = "stopped"
    for cluster in (_FakeCluster(), _FakeCluster(stopped)):
        with pytest.raises(ClusterNotReady, match=r"dl\.Connect\(cluster, workers=2\)"):
            Nemesis(cluster).kill_worker()


class _Brokers:
    """What Connect reads of its Kafka cluster (connect.Cluster), running or not."""

    def __init__(self, tmp_path: Path, running: bool = True) -> None:
        self.workdir, self.running = tmp_path, running
        self.spec = SimpleNamespace(replication=1)
        self.connects: list = []

    @property
    def direct_bootstrap_servers(self) -> str:
        if not self.running:
            raise ClusterNotReady("the cluster is not running: call start() first")
        return "127.0.0.1:1"


def test_a_started_connect_cluster_is_handed_to_its_cluster_once(tmp_path: Path,
                                                                  monkeypatch):
    # The cluster stops what is in its `connects`; it never imports Connect, so Connect
    # adds itself. The workers' JVMs are left out: what is checked is the hand-over.
    monkeypatch.setattr(classpaths, "classpath", lambda name: [])
    monkeypatch.setattr(Connect, "_launch", lambda self, w: None)
    monkeypatch.setattr(Connect, "_wait_healthy", lambda self, w, deadline, t0: None)
    brokers = _Brokers(tmp_path)
    connect = Connect(brokers, workers=1)
    assert connect.start() is connect and brokers.connects == [connect]
    connect.start()
    assert brokers.connects == [connect]
    connect.stop()


def test_connect_on_a_stopped_cluster_raises_before_anything_starts(tmp_path: Path):
    brokers = _Brokers(tmp_path, running=False)
    with pytest.raises(ClusterNotReady, match="call start"):
        Connect(brokers, workers=1).start()
    assert brokers.connects == [] and not any(tmp_path.iterdir())


def test_pause_waits_for_the_stop_and_a_dead_worker_is_never_called_paused(tmp_path: Path):
    """SIGSTOP is asynchronous; a worker that died must raise, not be marked paused."""
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    w = Worker(index=1, port=1, dir=tmp_path, proc=proc)
    try:
        os.killpg(proc.pid, signal.SIGSTOP)
        _wait_process_state(w, stopped=True)
        os.killpg(proc.pid, signal.SIGCONT)
        _wait_process_state(w, stopped=False)
        proc.kill()
        proc.wait()
        with pytest.raises(ConnectError, match="worker 1 exited before it was stopped"):
            _wait_process_state(w, stopped=True, timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
