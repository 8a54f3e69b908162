"""The local backend's storage cache, without a JVM: Kafka's storage tool is replaced by
a stand-in that writes what the tool writes (``meta.properties``, ``bootstrap.checkpoint``)
and counts its runs. The real tool runs in tests/integration/cluster/test_cluster.py."""

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


def _entry(root: Path, name: str, age_days: float, now: float) -> Path:
    import os

    entry = root / name
    entry.mkdir(parents=True)
    (entry / "meta.properties").write_text("node.id=1\ncluster.id=x\ndirectory.id=d\n")
    os.utime(entry, (now - age_days * 86400, now - age_days * 86400))
    return entry


def test_the_storage_cache_keeps_what_was_used_this_week_and_prunes_the_rest(tmp_path):
    import time

    root, now = tmp_path / "storage", time.time()
    old = _entry(root, "node-1-aaaa", 8, now)  # a shape nobody started for 8 days
    recent = _entry(root, "node-1-bbbb", 6, now)
    used = _entry(root, "node-2-cccc", 30, now)
    local.copy_storage(used, tmp_path / "cluster" / "data", "c1")  # used now: touched
    dead_format = _entry(root, ".node-3-dddd-1234abcd", 8, now)  # a formatter that died
    live_format = _entry(root, ".node-3-eeee-5678abcd", 0, now)  # one formatting now
    half_pruned = _entry(root, ".prune-node-1-ffff-0000abcd", 0, now)  # a prune that died
    gone = local.prune_storage(root, now=time.time())
    assert sorted(gone) == sorted([old, dead_format, half_pruned])
    assert sorted(root.iterdir()) == sorted([recent, used, live_format])
    assert local.prune_storage(root / "missing") == []


def test_the_storage_cache_is_pruned_by_the_first_look_of_a_process(tmp_path, monkeypatch):
    import time

    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path / "cache"))
    stale = _entry(tmp_path / "cache" / "storage", "node-1-aaaa", 8, time.time())
    assert local.storage_cache() == stale.parent and not stale.exists()
    again = _entry(stale.parent, "node-1-bbbb", 8, time.time())
    local.storage_cache()
    assert again.exists(), "pruned once per process, not at every cluster start"


def test_a_template_pruned_under_a_copy_is_one_clear_error(tmp_path):
    from deliverylab.errors import LabError

    with pytest.raises(LabError, match="removed while this cluster was copying it"):
        local.copy_storage(tmp_path / "gone", tmp_path / "data", "c1")
    assert not (tmp_path / "data").exists()
