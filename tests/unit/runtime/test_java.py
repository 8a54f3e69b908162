"""java.record_archive: an archive is moved into place whole, or not at all."""

from __future__ import annotations

import sys
from pathlib import Path

from deliverylab.runtime.java import record_archive


def _writer(code: str):
    """A stand-in for a recording JVM: a Python process given the partial file's path."""
    return lambda partial: [sys.executable, "-c", code, str(partial)]


def test_a_written_archive_is_renamed_to_its_final_name(tmp_path: Path):
    final = tmp_path / "x.jsa"
    got = record_archive(final, _writer(
        "import sys; open(sys.argv[1], 'wb').write(b'archive')"), timeout=30)
    assert got == final and final.read_bytes() == b"archive"
    assert not (tmp_path / "x.partial.jsa").exists()


def test_a_failed_or_slow_recording_leaves_no_file(tmp_path: Path):
    final = tmp_path / "x.jsa"
    half = "import sys; open(sys.argv[1], 'wb').write(b'half'); "
    assert record_archive(final, _writer(half + "sys.exit(3)"), timeout=30) is None
    assert record_archive(final, _writer(half + "import time; time.sleep(30)"),
                          timeout=1) is None
    assert record_archive(final, _writer("pass"), timeout=30) is None  # wrote none
    assert list(tmp_path.iterdir()) == []


def test_temp_opts_keep_a_jvms_files_in_the_given_folder_or_tmpdir(tmp_path: Path,
                                                                   monkeypatch):
    from deliverylab.runtime import java

    folder = tmp_path / "cluster" / "tmp"
    assert java.temp_opts(folder) == ["-XX:-UsePerfData", f"-Djava.io.tmpdir={folder}",
                                      f"-Dorg.xerial.snappy.tempdir={folder}"]
    assert folder.is_dir()  # a JVM given a missing tmpdir would lose lz4's native code
    assert folder.stat().st_mode & 0o777 == 0o700
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(java.tempfile, "tempdir", None)
    assert f"-Djava.io.tmpdir={tmp_path}" in java.temp_opts()


def test_every_jvm_the_lab_builds_keeps_its_temporary_files_out_of_tmp(tmp_path: Path,
                                                                       monkeypatch):
    """Brokers, controllers and the storage tool in the cluster's workdir; Kafka's CLI
    tools in TMPDIR; the standalone Spark's daemons in its workdir."""
    from deliverylab.cluster import local, tools
    from deliverylab.runtime import java
    from deliverylab.spark import standalone

    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(local, "find_java", lambda: "java")
    monkeypatch.setattr(local.classpaths, "kafka_libs", lambda version: tmp_path / "libs")
    backend = local.LocalBackend(tmp_path / "cluster")
    for opts in (backend.broker_opts, backend.controller_opts, backend.tool_opts):
        assert "-XX:-UsePerfData" in opts
        assert f"-Djava.io.tmpdir={tmp_path / 'cluster' / 'tmp'}" in opts
    monkeypatch.setattr(tools, "find_java", lambda: "java")
    monkeypatch.setattr(tools.classpaths, "classpath", lambda c, fetch: [tmp_path / "a.jar"])
    monkeypatch.setattr(java.tempfile, "tempdir", None)  # re-read TMPDIR
    cmd = tools.java_command("kafka-topics", "--list")
    assert "-XX:-UsePerfData" in cmd and f"-Djava.io.tmpdir={tmp_path}" in cmd
    started: list[dict] = []
    cluster = standalone.SparkStandalone(workers=1)
    monkeypatch.setattr(cluster, "_spawn", lambda name, args, env: started.append(env))
    monkeypatch.setattr(cluster, "_wait", lambda timeout: None)
    monkeypatch.setattr(standalone, "java_home", lambda: "/jdk")
    cluster._start(1)
    try:
        env = started[0]
        assert env["SPARK_LAUNCHER_OPTS"] == "-XX:-UsePerfData"
        assert f"-Djava.io.tmpdir={cluster.workdir / 'tmp'}" in env["SPARK_DAEMON_JAVA_OPTS"]
        assert env["SPARK_LOCAL_DIRS"] == str(cluster.workdir / "tmp")
    finally:
        cluster.stop()
