"""A credential per student: the class list, generated passwords, the instructor's sheet
(0600), and a hub configured from them in which no student's password opens another's
account and no shared one exists unless asked for."""

from __future__ import annotations

import asyncio
import json
import re
import stat
from pathlib import Path

import pytest

from deliverylab.classroom.hub import passwords as credentials
from deliverylab.classroom.hub.settings import HubSettings
from deliverylab.errors import LabError


def test_a_generated_password_is_three_groups_without_look_alikes():
    seen = {credentials.generate() for _ in range(200)}
    assert len(seen) == 200
    for pw in seen:
        assert re.fullmatch(r"[a-z2-9]{4}-[a-z2-9]{4}-[a-z2-9]{4}", pw), pw
        assert not set(pw) & set("01oli")


def test_the_class_list_is_names_or_name_password_lines(tmp_path: Path):
    listed = tmp_path / "class.txt"
    listed.write_text("# workshop 3\nann\n  ben:ben-own-secret  \n\ncat:pw#with-hash\n")
    assert credentials.read_class_list(str(listed)) == [
        ("ann", ""), ("ben", "ben-own-secret"), ("cat", "pw#with-hash")]
    assert credentials.read_class_list("ann, ben") == [("ann", ""), ("ben", "")]
    with pytest.raises(LabError, match="class list.*'ann'.*each student once"):
        credentials.read_class_list("ann,ben,ann")
    with pytest.raises(LabError, match="class list line 1"):
        credentials.read_class_list(":orphan-password")


def test_every_student_gets_a_password_and_keeps_it_when_the_hub_starts_again(
        tmp_path: Path):
    state = tmp_path / "state"
    students, first, new = credentials.class_credentials("ann,ben:ben-own-secret,cat",
                                                           "", state)
    assert students == ["ann", "ben", "cat"] and new == ["ann", "cat"]
    assert first["ben"] == "ben-own-secret" and first["ann"] != first["cat"]
    settings = HubSettings(students=students, password="", passwords=first,
                               state=str(state))
    settings.save()  # as Hub.start does: the passwords live in settings.json (0600)
    _, again, new = credentials.class_credentials("ann,ben,cat,dan", "", state)
    assert new == ["dan"] and {n: again[n] for n in first} == first


def test_a_shared_password_is_only_an_explicit_option(tmp_path: Path):
    students, own, new = credentials.class_credentials("ann,ben:ben-own-secret",
                                                         "shared-workshop", tmp_path)
    assert own == {"ben": "ben-own-secret"} and new == []
    with pytest.raises(LabError, match="8 characters or more"):  # none at all: refused
        HubSettings(students=students, password="", passwords=own,
                        state=str(tmp_path))


def test_the_sheet_has_a_slip_per_student_and_only_its_owner_reads_it(tmp_path: Path):
    text = credentials.sheet_text("http://127.0.0.1:8000",
                                    {"ben": "bbbb-cccc-dddd", "ann": "aaaa-bbbb-cccc"},
                                    unix_prefix="dlab-")
    slips = [s for s in text.split("- - - cut") if "user name" in s]
    assert len(slips) == 2 and "user name: ann" in slips[0] and "aaaa-bbbb-cccc" in slips[0]
    assert "password:  bbbb-cccc-dddd" in slips[1] and "dlab-ben" in slips[1]
    sheet = tmp_path / "state" / "class-sheet.txt"
    sheet.parent.mkdir()
    sheet.write_text("old, world-readable")
    sheet.chmod(0o644)
    assert credentials.write_sheet(sheet, text) == sheet
    assert stat.S_IMODE(sheet.stat().st_mode) == 0o600 and sheet.read_text() == text


def test_the_hub_configured_with_generated_passwords_opens_each_account_to_its_own(
        tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner

    students, passwords, _ = credentials.class_credentials("ann,ben", "", tmp_path)
    s = HubSettings(students=students, password="", passwords=passwords,
                        state=str(tmp_path / "state"))
    c = Config()
    spawner.configure(c, str(s.save()))
    assert c.SharedPasswordAuthenticator.user_password is None
    assert json.loads((tmp_path / "state" / "settings.json").read_text())["password"] == ""
    auth = spawner.WorkshopAuthenticator(config=c)

    def login(name: str, password: str):
        return asyncio.run(auth.get_authenticated_user(
            None, {"username": name, "password": password}))

    assert login("ann", passwords["ann"])["name"] == "ann"
    assert login("ben", passwords["ann"]) is None
    assert login("ann", passwords["ben"]) is None
    assert login("ann", "") is None
