"""Student profiles: the setting a hub sets, read by the brokers' backend and the Spark
session (no JVM started: the options they would launch with are checked)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.cluster import local
from deliverylab.errors import BadValue
from deliverylab.runtime import profile
from deliverylab.spark import session


def test_unset_or_default_is_the_labs_own_sizes(monkeypatch):
    monkeypatch.delenv(profile.PROFILE_ENV, raising=False)
    assert profile.current().name == "default"
    monkeypatch.setenv(profile.PROFILE_ENV, " default ")
    assert profile.current() == profile.PROFILES["default"]
    assert profile.current().broker_opts == [] and profile.current().spark_conf == {}


def test_a_profile_the_lab_does_not_know_is_one_clear_line(monkeypatch):
    monkeypatch.setenv(profile.PROFILE_ENV, "tiny")
    with pytest.raises(BadValue, match="DELIVERYLAB_PROFILE='tiny' is not accepted; "
                                       "expected one of default, light"):
        profile.current()


def _backend(tmp_path: Path, monkeypatch, extra: list[str] | None = None):
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path))
    monkeypatch.setattr(local, "find_java", lambda: "java")
    monkeypatch.setattr(local.classpaths, "kafka_libs", lambda version: tmp_path / "libs")
    return local.LocalBackend(tmp_path / "cluster", jvm_opts=extra)


def test_light_caps_the_broker_and_controller_heaps_the_caller_still_wins(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv(profile.PROFILE_ENV, "light")
    b = _backend(tmp_path, monkeypatch, extra=["-Xmx512m"])
    # The JVM takes the last of a repeated flag: profile after the lab's, caller last.
    heaps = [o for o in b.broker_opts if o.startswith("-Xmx")]
    assert heaps == ["-Xmx384m", "-Xmx256m", "-Xmx512m"]
    assert [o for o in b.controller_opts if o.startswith("-Xmx")][-2] == "-Xmx96m"
    monkeypatch.setenv(profile.PROFILE_ENV, "default")
    b = _backend(tmp_path, monkeypatch)
    assert [o for o in b.broker_opts if o.startswith("-Xmx")] == ["-Xmx384m"]


def test_light_puts_the_spark_driver_on_the_serial_collector(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(tmp_path))
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the driver's folder: not in /tmp
    monkeypatch.setattr(session.tempfile, "tempdir", None)
    monkeypatch.setenv(profile.PROFILE_ENV, "light")
    opts = session._driver_java_options().split()
    assert "-XX:+UseSerialGC" in opts and "-XX:TieredStopAtLevel=1" in opts
    assert "-Xms64m" in opts  # Spark refuses -Xmx here (spark.driver.memory), not -Xms
    assert profile.current().spark_conf == {"spark.driver.memory": "512m"}
    # Recording the class archive stays the lab's own JVM, whatever the profile.
    recording = session._driver_java_options(record=tmp_path / "x.jsa").split()
    assert "-XX:+UseSerialGC" not in recording
