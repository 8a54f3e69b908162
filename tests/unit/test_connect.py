"""Connect's pure parts, without a worker: configurations, answers read, bad values."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.connect import (
    FILE_SOURCE,
    Worker,
    committed_position,
    file_source,
    task_worker,
    worker_properties,
)
from deliverylab.errors import BadValue


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
