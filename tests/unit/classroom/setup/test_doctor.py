"""Classroom readiness without brokers: the doctor's verdicts, the offline bundle's
install side, the compose configuration, and the reaper's clean-up commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from deliverylab.classroom.setup import doctor
from deliverylab.cluster import docker as dk
from deliverylab.cluster.properties import ClusterSpec, NodePorts, server_properties
from deliverylab.errors import JavaNotFound
from deliverylab.runtime import jars

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(cache))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    return cache


# ----------------------------------------------------------------------- doctor
def test_every_check_says_pass_warn_or_fail_with_a_fix():
    results = doctor.run()
    names = {r.name for r in results}
    assert {"python", "java", "memory", "ports", "kafka jars", "spark-kafka jars"} <= names
    for r in results:
        assert r.status in ("PASS", "WARN", "FAIL")
        assert r.status == "PASS" or r.fix, f"{r.name} fails without saying how to fix it"
        assert "\n" not in r.detail


def test_too_little_memory_fails_and_says_what_to_do(monkeypatch):
    import psutil

    monkeypatch.setattr(psutil, "virtual_memory",
                        lambda: SimpleNamespace(available=1 * doctor.GIB, total=4 * doctor.GIB))
    check = doctor.check_memory()
    assert check.status == "FAIL" and "1.0 GB available" in check.detail
    assert "brokers=1" in check.fix
    assert doctor.check_memory(students=10).detail.endswith("for 10 students")
    assert "make classroom-plan" in doctor.check_memory(students=10).fix


def test_the_memory_asked_is_the_plans_recorded_sizing():
    """One figure everywhere (issue 40): a laptop needs chapter 07's peak (2.3 GB) up
    to 0.5 GB; a class host the reserve plus the plan's memory per seat, and every
    student at the plan's cap is comfortable -- the README's and the guide's figures."""
    from deliverylab.classroom.sizing import plan

    assert [round(x / doctor.GIB, 2) for x in doctor.memory_needed(1)] == [2.5, 3.0]
    need, want = doctor.memory_needed(30)
    seat = plan.recorded("light")
    assert need == pytest.approx((2.0 + 30 * seat.marginal_pss / doctor.GIB) * doctor.GIB)
    assert (round(need / doctor.GIB), want / doctor.GIB) == (54, 92.0)  # 1.74 a seat, 3G


def test_missing_java_fails_with_the_install_line(monkeypatch):
    from deliverylab.runtime import java

    def no_java() -> str:
        raise JavaNotFound("Java not found: Kafka brokers and Spark need Java 17 or newer.")

    monkeypatch.setattr(java, "find_java", no_java)
    check = doctor.check_java()
    assert check.status == "FAIL" and "JAVA_HOME" in check.fix


def test_empty_cache_fails_and_names_make_setup(empty_cache):
    checks = {c.name: c for c in doctor.check_caches()}
    assert checks["kafka jars"].status == "FAIL"
    assert checks["spark-kafka jars"].status == "FAIL"
    assert "make setup" in checks["kafka jars"].fix and "BUNDLE=" in checks["kafka jars"].fix
    assert f"{jars.pinned('kafka')[0].name} (missing)" in checks["kafka jars"].detail
    assert checks["class archive"].status == "WARN"
    assert checks["tools class archive"].status == "WARN"
    assert checks["spark class archive"].status == "WARN"
    assert "make setup" in checks["spark class archive"].fix


def test_corrupt_and_missing_jars_are_named(empty_cache):
    """A jar of the right size but other bytes (a disk error, a bad copy) is caught."""
    folder = jars.component_dir("jdbc")
    folder.mkdir(parents=True)
    first, *rest = jars.pinned("jdbc")
    (folder / first.name).write_bytes(b"\0" * first.size)
    check = {c.name: c for c in doctor.check_caches()}["jdbc jars"]
    assert check.status == "WARN"  # chapters without a database still run
    assert f"{first.name} (corrupt: checksum differs from the pin)" in check.detail
    assert f"{rest[0].name} (missing)" in check.detail


def test_main_prints_one_line_per_check_and_a_verdict(capsys, monkeypatch):
    monkeypatch.setattr(doctor, "run", lambda docker, students: [
        doctor.Check("a", "PASS", "fine"), doctor.Check("b", "FAIL", "broken", "mend it")])
    assert doctor.main([]) == 1
    out = capsys.readouterr().out
    assert "[PASS] a" in out and "[FAIL] b" in out and "fix: mend it" in out
    assert "1 to fix" in out


def test_docker_check_without_a_docker_command(monkeypatch):
    monkeypatch.setattr(doctor.shutil, "which", lambda name: None)
    (check,) = doctor.check_docker()
    assert check.status == "FAIL" and "local backend" in check.fix


# ---------------------------------------------------------------------- compose
def test_local_configuration_is_unchanged_by_container_fields():
    node = NodePorts(1, 9001, 9002, 9003, 9004)
    props = server_properties(ClusterSpec((node,), "x"), node, "/d")
    assert props["listeners"] == ("CLIENT://127.0.0.1:9001,INTERNAL://127.0.0.1:9002,"
                                  "CONTROLLER://127.0.0.1:9003")
    assert props["advertised.listeners"] == ("CLIENT://127.0.0.1:9004,"
                                             "INTERNAL://127.0.0.1:9002")
    assert props["controller.quorum.voters"] == "1@127.0.0.1:9003"


def test_compose_pins_the_local_backends_kafka_version():
    text = (ROOT / "docker" / "compose.yml").read_text()
    assert f"${{{dk.IMAGE_ENV}:-apache/kafka:{jars.KAFKA_VERSION}}}" in text
    # The lab shares the host's network (its brokers publish on the host's loopback),
    # so JupyterLab itself must listen on loopback only.
    assert '"--ip=127.0.0.1"' in text and "0.0.0.0" not in text


# ----------------------------------------------------------------------- reaper
def _reaper(lines: list[str]) -> None:
    reaper = ROOT / "lib" / "deliverylab" / "process" / "reaper.py"
    proc = subprocess.run([sys.executable, str(reaper)], input="".join(lines), text=True,
                          timeout=30)
    assert proc.returncode == 0


def test_reaper_runs_clean_up_commands_when_its_owner_dies(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    _reaper([f"exec {json.dumps(['touch', str(first)])}\n",
             f"exec {json.dumps([sys.executable, '-c', 'raise SystemExit(3)'])}\n",
             f"exec {json.dumps(['touch', str(second)])}\n"])
    assert first.exists() and second.exists()  # a failing command does not stop the rest


def test_reaper_forgets_commands_on_release(tmp_path):
    target = tmp_path / "never"
    _reaper([f"exec {json.dumps(['touch', str(target)])}\n", "release\n"])
    assert not target.exists()
