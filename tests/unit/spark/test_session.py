"""The Spark session's pieces that need no Spark running: the driver's JVM options and
its class archive."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pyspark import __version__ as spark_version

from deliverylab.spark import session


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path))
    # the driver's options make its temporary folder: in this test's, not the shared /tmp
    # (where the solo part's /tmp comparison would count it, tests/lanes.py)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(session.tempfile, "tempdir", None)
    return tmp_path


def test_the_class_archive_is_named_after_sparks_version_in_the_cache(cache):
    archive = session.class_archive()
    assert archive.parent == cache
    assert archive.name.startswith(f"spark-{spark_version}-")
    assert archive.name.endswith("-driver.jsa")
    assert session.class_archive() == archive  # the same venv, the same archive


def test_the_archive_s_key_changes_with_the_driver_classpath(cache, tmp_path, monkeypatch):
    """A JVM maps an archive only for the classpath it was recorded with: another venv
    (or a reinstall: new modification times) must get a name of its own."""
    import pyspark

    before = session.class_archive()
    fake = tmp_path / "pyspark"
    (fake / "jars").mkdir(parents=True)
    (fake / "jars" / "a.jar").write_bytes(b"jar")
    monkeypatch.setattr(pyspark, "__file__", str(fake / "__init__.py"))
    other = session.class_archive()
    assert other != before
    os.utime(fake / "jars" / "a.jar", ns=(1, 1))
    assert session.class_archive() not in (other, before)


def test_recording_prunes_only_old_archives_of_other_keys(cache):
    keep = cache / "spark-4.0.0-aaaa-driver.jsa"
    old = cache / "spark-4.0.0-bbbb-driver.jsa"
    recent = cache / "spark-4.0.0-cccc-driver.jsa"
    for f in (keep, old, recent):
        f.write_bytes(b"x")
    os.utime(old, (1, 1))
    os.utime(keep, (1, 1))
    session._prune_archives(keep)
    assert keep.exists() and recent.exists() and not old.exists()


def test_without_an_archive_the_driver_gets_the_log_config_its_tmpdir_and_the_jit(
        cache, tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "own"))
    monkeypatch.setattr(session.tempfile, "tempdir", None)  # re-read TMPDIR
    (tmp_path / "own").mkdir()
    folder = tmp_path / "own" / f"deliverylab-spark-{os.getpid()}"
    opts = session._driver_java_options().split()
    assert opts == [f"-Dlog4j.configurationFile={cache / 'inspector-log4j2.properties'}",
                    "-XX:-UsePerfData", f"-Djava.io.tmpdir={folder}",
                    f"-Dorg.xerial.snappy.tempdir={folder}", *session.DRIVER_JVM_OPTS]
    assert session.temp_dir() == folder and folder.is_dir()


def test_a_dead_processs_spark_folder_and_log_are_pruned_a_live_ones_kept(
        tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(session.tempfile, "tempdir", None)
    dead = 2**22 + 7  # above pid_max's default: no such process
    (tmp_path / f"deliverylab-spark-{dead}").mkdir()
    (tmp_path / f"deliverylab-spark-{dead}" / "blockmgr-x").mkdir()
    (tmp_path / f"deliverylab-spark-{dead}.log").write_text("x")
    (tmp_path / f"deliverylab-spark-{os.getpid()}").mkdir()
    (tmp_path / "deliverylab-spark-standalone-abc").mkdir()
    session._prune_stale()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"deliverylab-spark-{os.getpid()}", "deliverylab-spark-standalone-abc"]


def test_an_existing_archive_is_mapped_and_may_be_ignored_when_stale(cache):
    session.class_archive().write_bytes(b"recorded")
    opts = session._driver_java_options().split()
    assert f"-XX:SharedArchiveFile={session.class_archive()}" in opts
    # A stale archive (other jars, other Java) must fall back silently, never fail.
    assert "-Xshare:auto" in opts


def test_every_driver_compiles_with_c1_and_collects_serially_in_every_profile(
        cache, monkeypatch):
    opts = session._driver_java_options().split()
    assert opts[-len(session.DRIVER_JVM_OPTS):] == session.DRIVER_JVM_OPTS
    monkeypatch.setenv("DELIVERYLAB_PROFILE", "light")  # its cap is spark_conf's memory
    assert session._driver_java_options().split() == opts


def test_recording_writes_to_the_given_file_and_maps_none(cache):
    session.class_archive().write_bytes(b"old")
    opts = session._driver_java_options(record=cache / "new.partial.jsa").split()
    assert f"-XX:ArchiveClassesAtExit={cache / 'new.partial.jsa'}" in opts
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in opts)


def test_a_child_driver_keeps_its_temporary_files_in_its_owner_s_folder(tmp_path):
    """A SIGKILLed driver runs no exit hook: its Spark folder must be inside a folder its
    owner removes, not loose in the shared temporary directory."""
    from deliverylab.spark.session import driver_env

    home = tmp_path / "work" / "tmp"
    env = driver_env(home)
    assert env["TMPDIR"] == str(home) and home.is_dir()
    assert env["PYTHONPATH"]  # still the lab's child environment
