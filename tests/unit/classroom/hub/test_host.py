"""What a host prepares for a class, without preparing it: whether every student can
reach a path; the Spark class archive the class cache shares with the lab's own."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from deliverylab.classroom.hub import host
from deliverylab.spark import session as spark_session


def test_reachable_follows_every_folder_above(tmp_path: Path):
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "f").write_text("x")
    (inner / "f").chmod(0o644)
    for p in (tmp_path / "a", inner):
        p.chmod(0o755)
    blocked = all(os.stat(p).st_mode & 0o001 for p in tmp_path.parents) is False
    assert host.reachable(inner / "f") is (not blocked)
    (tmp_path / "a").chmod(0o700)
    assert host.reachable(inner / "f") is False


@pytest.fixture
def caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The lab's own cache and a class cache; the archive's name fixed, as the venv's
    key would make it."""
    own, cache = tmp_path / "own", tmp_path / "class"
    own.mkdir()
    cache.mkdir()
    monkeypatch.setattr(spark_session, "class_archive",
                        lambda: own / "spark-4.0.0-abc-driver.jsa")
    return own, cache


def test_the_class_cache_gets_the_labs_spark_archive_as_a_link(caches):
    own, cache = caches
    (own / "spark-4.0.0-abc-driver.jsa").write_bytes(b"archive")
    (own / "spark-4.0.0-old-driver.jsa").write_bytes(b"another venv's")
    got = host.share_spark_archive(own, cache)
    assert got == cache / "spark-4.0.0-abc-driver.jsa"
    assert got.read_bytes() == b"archive"
    assert os.path.samefile(got, own / "spark-4.0.0-abc-driver.jsa")
    assert sorted(p.name for p in cache.iterdir()) == ["spark-4.0.0-abc-driver.jsa"]


def test_sharing_prunes_the_class_caches_archives_of_other_venvs(caches):
    own, cache = caches
    (own / "spark-4.0.0-abc-driver.jsa").write_bytes(b"archive")
    stale, recent = cache / "spark-4.0.0-old-driver.jsa", cache / "spark-4.0.0-new-driver.jsa"
    for old in (stale, recent):
        old.write_bytes(b"another venv's")
    week = spark_session.ARCHIVE_MAX_AGE_S
    os.utime(stale, (time.time() - week - 60,) * 2)
    host.share_spark_archive(own, cache)
    assert sorted(p.name for p in cache.iterdir()) == [
        "spark-4.0.0-abc-driver.jsa", "spark-4.0.0-new-driver.jsa"]


def test_nothing_is_shared_without_an_archive_or_over_one(caches):
    own, cache = caches
    assert host.share_spark_archive(own, cache) is None  # the installer records one
    assert list(cache.iterdir()) == []
    (own / "spark-4.0.0-abc-driver.jsa").write_bytes(b"new")
    (cache / "spark-4.0.0-abc-driver.jsa").write_bytes(b"the class's own")
    assert host.share_spark_archive(own, cache) is None
    assert (cache / "spark-4.0.0-abc-driver.jsa").read_bytes() == b"the class's own"
    assert host.share_spark_archive(own, own) is None
