"""The hub's settings without a hub: names and passwords refused in one line, the homes
where the instructor's view looks, the saved settings and the config that loads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.errors import LabError

from .class_settings import settings


def test_bad_names_and_passwords_are_refused_in_one_line(tmp_path: Path):
    for bad in ("Ann", "1ann", "a b", "ann;rm", ""):
        with pytest.raises(LabError, match="student name"):
            settings(tmp_path, students=[bad])
    with pytest.raises(LabError, match="8 characters"):
        settings(tmp_path, password="short")
    with pytest.raises(LabError, match="no students"):
        settings(tmp_path, students=[])
    with pytest.raises(LabError, match="class-list password of carl"):
        settings(tmp_path, passwords={"carl": "long-enough"})
    # every student with their own password: no shared one needed
    assert settings(tmp_path, password="", passwords={"ann": "ann-secret",
                                                      "ben": "ben-secret"}).passwords


def test_the_homes_are_where_the_instructor_view_looks(tmp_path: Path):
    s = settings(tmp_path, homes="/home", prefix="dlab-")
    assert s.home("ann") == Path("/home/dlab-ann")
    assert s.homes_glob() == "/home/dlab-*"
    saved = json.loads(s.save().read_text())
    assert saved["student_homes"] == ["/home/dlab-ann", "/home/dlab-ben"]
    assert HubSettings.load(tmp_path / "state" / "settings.json") == s
    assert oct((tmp_path / "state").stat().st_mode & 0o777) == "0o700"
    config = (tmp_path / "state" / "jupyterhub_config.py").read_text()
    assert "configure(c, " in config and str(tmp_path / "state" / "settings.json") in config


def test_a_bad_spawner_is_refused_in_one_line(tmp_path: Path):
    with pytest.raises(LabError, match="spawner.*'kubernetes'.*local, docker"):
        settings(tmp_path, spawner="kubernetes")
    assert settings(tmp_path).spawner == "local"  # never switched by an engine answering
    assert settings(tmp_path, prefix="dlt1-").network == "dlt1-classroom"
