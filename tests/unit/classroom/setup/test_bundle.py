"""The offline bundle: it carries the pinned jars and installs them with their checksums.

A lock with two made-up jars stands in for the committed one (the real one is 76 MB).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from deliverylab.classroom.setup import bundle
from deliverylab.errors import JarsUnavailable
from deliverylab.runtime import jars

ROOT = Path(__file__).resolve().parents[4]
FILES = {"org/x/a/1/a-1.jar": b"A" * 5000, "org/x/b/2/b-2.jar": b"B" * 70}


@pytest.fixture
def fake_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Pins for component ``jdbc`` only; an empty cache; no network repository."""
    lock = {"components": {"jdbc": {"jars": [
        {"coord": f"org.x:{p.split('/')[2]}:1", "path": p, "size": len(b),
         "sha256": hashlib.sha256(b).hexdigest()} for p, b in FILES.items()]}}}
    (tmp_path / "lock.json").write_text(json.dumps(lock))
    monkeypatch.setattr(jars, "LOCK_FILE", tmp_path / "lock.json")
    cache = tmp_path / "cache"
    monkeypatch.setenv("DELIVERYLAB_CACHE", str(cache))
    monkeypatch.setenv("DELIVERYLAB_MAVEN_REPO", "http://127.0.0.1:9/none")  # unreachable
    return cache


def a_bundle(root: Path, files: dict[str, bytes] = FILES) -> Path:
    for path, body in files.items():
        (root / "maven2" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "maven2" / path).write_bytes(body)
    (root / "manifest.json").write_text(json.dumps({"kafka": jars.KAFKA_VERSION}))
    return root


def test_install_puts_every_pinned_jar_in_the_cache_once(fake_lock, tmp_path):
    src = a_bundle(tmp_path / "bundle")
    assert sorted(bundle.install(src)) == ["a-1.jar", "b-2.jar"]
    assert jars.problems("jdbc", deep=True) == []
    assert bundle.install(src) == []  # idempotent


def test_install_refuses_a_bundle_file_that_differs_from_the_pin(fake_lock, tmp_path):
    src = a_bundle(tmp_path / "bundle", {**FILES, "org/x/a/1/a-1.jar": b"Z" * 5000})
    with pytest.raises(JarsUnavailable, match="a-1.jar from file://.* does not match its pin"):
        bundle.install(src)
    assert not (fake_lock / "jdbc" / "a-1.jar").exists()


def test_install_names_a_jar_the_bundle_lacks(fake_lock, tmp_path):
    src = a_bundle(tmp_path / "bundle", {"org/x/a/1/a-1.jar": FILES["org/x/a/1/a-1.jar"]})
    with pytest.raises(JarsUnavailable, match="cannot download b-2.jar from file://"):
        bundle.install(src)


def test_install_refuses_a_folder_that_is_not_a_bundle(tmp_path):
    with pytest.raises(bundle.BundleError, match="make bundle"):
        bundle.install(tmp_path)


def test_install_refuses_a_bundle_of_the_old_layout(tmp_path):
    (tmp_path / "manifest.json").write_text("{}")
    (tmp_path / "cache").mkdir()
    with pytest.raises(bundle.BundleError, match="older version of the lab"):
        bundle.install(tmp_path)


def test_make_copies_the_pinned_jars_in_maven_layout(fake_lock, tmp_path):
    folder = jars.component_dir("jdbc")
    folder.mkdir(parents=True)
    for path, body in FILES.items():
        (folder / path.rsplit("/", 1)[-1]).write_bytes(body)
    assert sorted(bundle._copy_jars(tmp_path / "out")) == sorted(FILES)
    for path, body in FILES.items():
        assert (tmp_path / "out" / path).read_bytes() == body


def test_make_with_an_empty_cache_and_no_network_names_the_way_out(fake_lock, tmp_path):
    with pytest.raises(JarsUnavailable, match="still missing: a-1.jar, b-2.jar"):
        bundle._copy_jars(tmp_path / "out")


def test_requirements_come_from_pyproject():
    reqs = bundle.requirements()
    assert any(r.startswith("confluent-kafka") for r in reqs)
    assert any(r.startswith("pytest") for r in reqs)  # dev extras: `make setup` installs them
    # `dev` names `deliverylab[classroom]`: expanded, never asked of an index (pip cannot
    # download the project itself: the lab image's offline bundle failed on it)
    assert any(r.startswith("jupyterhub") for r in reqs)
    assert not any(r.startswith("deliverylab") for r in reqs)


def test_requirements_expand_own_extras_once_and_refuse_an_unknown_extra(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "deliverylab"\ndependencies = ["a"]\n'
                         '[project.optional-dependencies]\n'
                         'dev = ["b", "deliverylab[hub, dev]"]\nhub = ["c", "b"]\n')
    assert bundle.requirements(pyproject) == ["a", "b", "c"]
    with pytest.raises(bundle.BundleError, match="no extra 'gpu'"):
        bundle.requirements(pyproject, extras=("gpu",))


def test_makefile_installs_offline_from_a_bundle():
    out = subprocess.run(["make", "-n", "-B", "setup", "BUNDLE=/b"], cwd=ROOT,
                         capture_output=True, text=True).stdout
    assert "deliverylab.classroom.setup.bundle install /b" in out
    env = subprocess.run(["make", "-n", "-p", "setup", "BUNDLE=/b"], cwd=ROOT,
                         capture_output=True, text=True).stdout
    assert "PIP_NO_INDEX := 1" in env and "PIP_FIND_LINKS := /b/wheels" in env
