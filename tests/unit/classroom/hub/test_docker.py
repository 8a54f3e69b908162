"""The engine's side of a Docker class without an engine: each student's folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliverylab.errors import LabError

from .class_settings import settings


def test_a_docker_student_s_folder_is_the_image_user_s_and_removed_only_if_ours(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from deliverylab.classroom.hub import docker

    owners = []
    monkeypatch.setattr(docker.os, "chown", lambda p, u, g, **kw: owners.append((u, g)))
    labs = tmp_path / "labs"
    (labs / "results").mkdir(parents=True)
    (labs / "00_tour.ipynb").write_text("{}")
    s = settings(tmp_path, spawner="docker", homes=str(tmp_path / "homes"), labs=str(labs))
    home = docker.ensure_home(s, "ann")
    assert home == tmp_path / "homes" / "dlab-ann"
    assert (home / "labs" / "00_tour.ipynb").exists() and not (home / "labs" / "results").exists()
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert set(owners) == {(docker.LAB_UID, docker.LAB_UID)}
    (home / "labs" / "mine.txt").write_text("work")
    docker.ensure_home(s, "ann")  # a second spawn keeps the student's work
    assert (home / "labs" / "mine.txt").read_text() == "work"
    foreign = s.home("ben")
    foreign.mkdir()
    with pytest.raises(LabError, match="not made by the classroom"):
        docker.ensure_home(s, "ben")
    assert docker.remove_homes(s) == [str(home)]
    assert not home.exists() and foreign.exists()
