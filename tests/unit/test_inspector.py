"""The Inspector's pieces that need no Spark session: the driver's JVM options."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark import __version__ as spark_version

from deliverylab import inspector


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path))
    return tmp_path


def test_the_class_archive_is_named_after_sparks_version_in_the_cache(cache):
    archive = inspector.class_archive()
    assert archive.parent == cache
    assert archive.name == f"spark-{spark_version}-driver.jsa"


def test_without_an_archive_the_driver_gets_only_the_log_config(cache):
    opts = inspector._driver_java_options().split()
    assert opts == [f"-Dlog4j.configurationFile={cache / 'inspector-log4j2.properties'}"]


def test_an_existing_archive_is_mapped_and_may_be_ignored_when_stale(cache):
    inspector.class_archive().write_bytes(b"recorded")
    opts = inspector._driver_java_options().split()
    assert f"-XX:SharedArchiveFile={inspector.class_archive()}" in opts
    # A stale archive (other jars, other Java) must fall back silently, never fail.
    assert "-Xshare:auto" in opts


def test_recording_writes_to_the_given_file_and_maps_none(cache):
    inspector.class_archive().write_bytes(b"old")
    opts = inspector._driver_java_options(record=cache / "new.partial.jsa").split()
    assert f"-XX:ArchiveClassesAtExit={cache / 'new.partial.jsa'}" in opts
    assert not any(o.startswith("-XX:SharedArchiveFile") for o in opts)
