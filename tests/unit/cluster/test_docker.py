"""How ``backend="auto"`` decides, and the line it gives, without a Docker engine."""

from __future__ import annotations

import pytest

from deliverylab.cluster import Cluster
from deliverylab.cluster import docker as dk
from deliverylab.errors import BadValue


def test_an_explicit_backend_is_taken_as_asked():
    assert dk.choose("local")[0] == "local" and "asked for" in dk.choose("local")[1]
    assert dk.choose("docker")[0] == "docker"


def test_auto_without_a_docker_command_says_so(monkeypatch):
    monkeypatch.setattr(dk.shutil, "which", lambda name: None)
    name, why = dk.choose("auto")
    assert name == "local" and "no docker command" in why and "\n" not in why


def test_auto_with_a_silent_engine_says_so(monkeypatch):
    monkeypatch.setattr(dk.shutil, "which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr(dk, "engine_answers", lambda timeout=10.0: False)
    name, why = dk.choose("auto")
    assert name == "local" and "no Docker engine answers" in why


@pytest.mark.parametrize("present,expected", [(False, "local"), (True, "docker")])
def test_auto_with_an_engine_asks_for_the_image(monkeypatch, present, expected):
    monkeypatch.setattr(dk.shutil, "which", lambda name: "/usr/bin/docker")
    monkeypatch.setattr(dk, "engine_answers", lambda timeout=10.0: True)
    monkeypatch.setattr(dk, "resolve_image", lambda version=None: "apache/kafka:4.1.1")
    monkeypatch.setattr(dk, "image_present", lambda image: present)
    name, why = dk.choose("auto")
    assert name == expected and "apache/kafka:4.1.1" in why
    assert ("present → containers" in why) == present
    assert ("broker-image.sh" in why) == (not present)


def test_a_backend_that_does_not_exist_is_one_line():
    with pytest.raises(BadValue, match="'local' or 'docker' or 'auto'"):
        Cluster(brokers=1, backend="podman")


def _backend_seeing(*states: dict) -> dk.DockerBackend:
    """A backend whose ``docker inspect`` of node 1 answers ``states`` in turn."""
    backend = object.__new__(dk.DockerBackend)
    answers = iter(states)
    last: list[dict] = [{}]

    def inspect(max_age: float = 0.2) -> dict[int, dict]:
        last[0] = next(answers, last[0])
        return {1: last[0]}

    backend._inspect = inspect  # type: ignore[method-assign]
    backend.containers, backend.signal_stopped = {1: "kafka-1"}, set()
    return backend


def test_wait_stopped_answers_true_once_paused_and_false_for_a_dead_container_or_time():
    running, paused = {"Running": True, "Paused": False}, {"Running": True, "Paused": True}
    assert _backend_seeing(running, running, paused).wait_stopped(1, True, timeout=5)
    assert not _backend_seeing(running, {"Running": False}).wait_stopped(1, True, timeout=5)
    assert not _backend_seeing(running).wait_stopped(1, True, timeout=0.1)


def test_wait_exit_answers_whether_the_container_stopped_in_time():
    assert _backend_seeing({"Running": True}, {"Running": False}).wait_exit(1, timeout=5)
    assert not _backend_seeing({"Running": True}).wait_exit(1, timeout=0.2)
