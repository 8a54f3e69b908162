"""The local backend's storage cache, without a JVM: Kafka's storage tool is replaced by
a stand-in that writes what the tool writes (``meta.properties``, ``bootstrap.checkpoint``)
and counts its runs. The real tool runs in tests/integration/test_cluster.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deliverylab.cluster import local
from deliverylab.cluster import quorum as kraft
from deliverylab.cluster.properties import ClusterSpec, NodePorts


def _spec(size: int, cluster_id: str, overrides: dict[str, str] | None = None) -> ClusterSpec:
    p = kraft.plan(size)
    return ClusterSpec(tuple(NodePorts(n, 1000 * n, 1000 * n + 1, 1000 * n + 2, 1000 * n)
                             for n in p.brokers), cluster_id, overrides or {},
                       tuple(NodePorts(n, 0, 0, 1000 * n + 2, 0) for n in p.controller_only),
                       p.voters)


def _props(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines()
                if "=" in line and not line.startswith("#"))


@pytest.fixture
def backend(tmp_path, monkeypatch):
    """A LocalBackend whose storage tool is a stand-in that records each run."""
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path / "cache"))
    b = object.__new__(local.LocalBackend)
    b.__dict__.update(workdir=tmp_path / "cluster", libs=tmp_path / "libs", procs={})
    b.formatted = []

    def fake_format(spec, properties, log):
        props = _props(properties)
        data = Path(props["log.dirs"])
        data.mkdir(parents=True)
        (data / "meta.properties").write_text(
            f"#\n#written by the stand-in\nnode.id={props['node.id']}\n"
            f"directory.id=dir{len(b.formatted)}\nversion=1\ncluster.id={spec.cluster_id}\n")
        (data / "bootstrap.checkpoint").write_bytes(b"\x00features\xff")
        b.formatted.append(props["node.id"])
        out = open(log, "w")  # noqa: SIM115 - prepare closes it
        return out, subprocess.Popen(["true"])

    b._format = fake_format
    return b


def test_each_node_shape_is_formatted_once_then_copied(backend, tmp_path):
    backend.prepare(_spec(3, "first-cluster"))
    assert sorted(backend.formatted) == ["1", "2", "3"]
    backend.workdir = tmp_path / "second"
    backend.prepare(_spec(3, "second-cluster"))
    assert sorted(backend.formatted) == ["1", "2", "3"], "the second start runs no tool"
    ids = set()
    for node in (1, 2, 3):
        data = backend.node_dir(node) / "data"
        meta = _props(data / "meta.properties")
        assert meta["cluster.id"] == "second-cluster"
        assert meta["node.id"] == str(node) and meta["version"] == "1"
        ids.add(meta["directory.id"])
        assert (data / "bootstrap.checkpoint").read_bytes() == b"\x00features\xff"
    assert len(ids) == 3 and not ids & {"dir0", "dir1", "dir2"}, "fresh directory ids"
    assert not any(p.name.startswith(".") for p in local.storage_cache().iterdir()), \
        "no half-made template left in the cache"


def test_a_new_shape_or_override_is_formatted_anew(backend, tmp_path):
    backend.prepare(_spec(1, "a"))
    backend.workdir = tmp_path / "b"
    backend.prepare(_spec(3, "b"))  # node 1 has the same shape (a static voter list is
    backend.workdir = tmp_path / "c"  # not in storage): only nodes 2 and 3 are new
    backend.prepare(_spec(3, "c", {"min.insync.replicas": "2"}))  # an override: all new
    assert sorted(backend.formatted) == ["1", "1", "2", "2", "3", "3"]


def test_overrides_moving_the_log_dirs_format_in_place(backend, tmp_path):
    spec = _spec(1, "x", {"log.dirs": str(tmp_path / "elsewhere")})
    assert backend._template(spec, spec.nodes[0]) is None
    backend.prepare(spec)
    assert backend.formatted == ["1"]
    cache = local.storage_cache()
    assert not cache.exists() or not any(cache.iterdir()), "nothing cached"


def test_kept_storage_is_not_formatted_again(backend):
    spec = _spec(1, "kept")
    backend.prepare(spec)
    backend.prepare(spec)  # same data_dir: as --ignore-formatted
    assert backend.formatted == ["1"]


def test_another_kafka_build_is_formatted_anew(backend, tmp_path):
    import os

    backend.libs.mkdir()
    jar = backend.libs / "kafka-server-4.1.1.jar"
    jar.write_bytes(b"build 1")
    backend.prepare(_spec(1, "a"))
    os.utime(jar, ns=(0, 10**18))  # unpacked again: same name, another time
    backend.workdir = tmp_path / "b"
    backend.prepare(_spec(1, "b"))
    assert backend.formatted == ["1", "1"]
