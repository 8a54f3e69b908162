"""The classroom hub's pieces without a hub: settings, the config JupyterHub loads, the
workshop authenticator, and the sweep that kills every process of a uid."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from deliverylab.classroom.hub import hub
from deliverylab.errors import LabError


def settings(tmp_path: Path, **kw) -> hub.HubSettings:
    return hub.HubSettings(**{"students": ["ann", "ben"], "password": "workshop-pw",
                              "state": str(tmp_path / "state"), **kw})


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
    assert hub.HubSettings.load(tmp_path / "state" / "settings.json") == s
    assert oct((tmp_path / "state").stat().st_mode & 0o777) == "0o700"
    config = (tmp_path / "state" / "jupyterhub_config.py").read_text()
    assert "configure(c, " in config and str(tmp_path / "state" / "settings.json") in config


def test_the_config_binds_localhost_with_the_culler_and_the_class_list(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner

    s = settings(tmp_path, cull_timeout=600, cull_every=60, port=18123, proxy_api_port=18124)
    c = Config()
    spawner.configure(c, str(s.save()))
    assert c.JupyterHub.ip == "127.0.0.1" and c.JupyterHub.hub_ip == "127.0.0.1"
    assert c.JupyterHub.port == 18123
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:18124"  # not every hub's 8001
    assert c.Authenticator.allowed_users == {"ann", "ben"}
    assert c.JupyterHub.spawner_class is spawner.StudentSpawner
    [culler] = c.JupyterHub.services
    assert "--timeout=600" in culler["command"] and "--cull-every=60" in culler["command"]
    [role] = c.JupyterHub.load_roles
    assert role["services"] == ["idle-culler"] and "delete:servers" in role["scopes"]


def test_a_bad_spawner_is_refused_in_one_line(tmp_path: Path):
    with pytest.raises(LabError, match="spawner.*'kubernetes'.*local, docker"):
        settings(tmp_path, spawner="kubernetes")
    assert settings(tmp_path).spawner == "local"  # never switched by an engine answering
    assert settings(tmp_path, prefix="dlt1-").network == "dlt1-classroom"


def test_the_docker_config_limits_each_container_and_mounts_no_engine_socket(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import docker, spawner

    s = settings(tmp_path, spawner="docker", image="lab:test", hub_ip="172.30.0.1",
                 mem_limit_gb=3.0, cpu_limit=1.5, prefix="dlt1-")
    c = Config()
    spawner.configure(c, str(s.save()))
    assert c.JupyterHub.spawner_class is spawner.ClassDockerSpawner
    assert c.JupyterHub.ip == "127.0.0.1"  # the public port; the hub on the bridge only
    assert c.JupyterHub.hub_ip == c.JupyterHub.hub_connect_ip == "172.30.0.1"
    d = c.DockerSpawner
    assert d.image == "lab:test" and d.pull_policy == "never"
    assert d.network_name == "dlt1-classroom" and d.use_internal_ip and d.remove
    assert d.mem_limit == 3 * 2**30 and d.extra_host_config == {"memswap_limit": 3 * 2**30,
                                                            "auto_remove": False}
    assert d.cpu_limit == 1.5
    assert d.cmd == ["jupyterhub-singleuser"]
    assert d.extra_create_kwargs == {"labels": {docker.LABEL: "dlt1-"}}
    assert "volumes" not in d  # each spawner mounts its student's labs/ only
    assert d.environment["DELIVERYLAB_PROFILE"] == "light"
    assert not any("docker.sock" in repr(v) for v in d.values())


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


def test_a_student_with_their_own_password_needs_it(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner

    c = Config()
    c.SharedPasswordAuthenticator.user_password = "workshop-pw"
    c.WorkshopAuthenticator.student_passwords = {"ann": "ann-secret"}
    c.Authenticator.allowed_users = {"ann", "ben"}
    auth = spawner.WorkshopAuthenticator(config=c)

    def login(name: str, password: str):
        return asyncio.run(auth.get_authenticated_user(
            None, {"username": name, "password": password}))

    assert login("ann", "ann-secret")["name"] == "ann"
    assert login("ann", "workshop-pw") is None  # not the shared one
    assert login("ben", "workshop-pw")["name"] == "ben"
    assert login("ben", "ann-secret") is None
    assert login("mallory", "workshop-pw") is None  # not on the class list


@pytest.mark.skipif(os.geteuid() != 0, reason="setuid to another uid needs root")
def test_sweep_kills_every_process_of_the_uid_however_detached():
    uid = 64000 + os.getpid() % 1000  # no such user: a uid nobody else runs as
    proc = subprocess.Popen(["/bin/sh", "-c", "setsid sleep 300 & exec sleep 300"],
                            start_new_session=True, user=uid, group=uid, cwd="/")
    try:
        deadline = time.monotonic() + 10
        while len(hub.processes_of(uid)) < 2:  # the child and its detached grandchild
            assert time.monotonic() < deadline, "the test's processes did not start"
            time.sleep(0.05)
        hub.sweep(uid, timeout=10)
        assert hub.processes_of(uid) == []
        assert proc.wait(5) == -9
    finally:
        proc.kill()


def test_sweep_refuses_root():
    with pytest.raises(LabError, match="uid 0"):
        hub.sweep(0)


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another uid need root (chown)")
def test_removing_a_student_removes_every_file_of_their_uid_in_the_shared_folders(
        tmp_path: Path):
    """As a class leaves them in /tmp: the JVMs' perf data folder, a native library
    copy in a folder of someone else's, a Spark folder; a link of theirs to a file of
    another's is removed, never followed."""
    uid, other = 64000 + os.getpid() % 1000, 65000 + os.getpid() % 500
    tmp, var = tmp_path / "tmp", tmp_path / "var-tmp"
    (tmp / "hsperfdata_dlab-ann").mkdir(parents=True)
    (tmp / "hsperfdata_dlab-ann" / "4242").write_bytes(b"perf")
    (tmp / "shared").mkdir()
    (tmp / "shared" / "liblz4-java-1.so").write_bytes(b"so")
    (tmp / "shared" / "keep.txt").write_text("another's")
    (var / "spark-1" / "blockmgr-2").mkdir(parents=True)
    (tmp / "link").symlink_to(tmp / "shared" / "keep.txt")
    for path in [tmp / "hsperfdata_dlab-ann", tmp / "hsperfdata_dlab-ann" / "4242",
                 tmp / "shared" / "liblz4-java-1.so", var / "spark-1",
                 var / "spark-1" / "blockmgr-2"]:
        os.chown(path, uid, uid)
    os.chown(tmp / "link", uid, uid, follow_symlinks=False)
    os.chown(tmp / "shared" / "keep.txt", other, other)
    removed = hub.remove_files_of(uid, roots=(tmp, var, tmp_path / "absent"))
    assert sorted(removed) == sorted([tmp / "hsperfdata_dlab-ann", tmp / "link",
                                      tmp / "shared" / "liblz4-java-1.so", var / "spark-1"])
    assert sorted(p.name for p in tmp.rglob("*")) == ["keep.txt", "shared"]
    assert list(var.iterdir()) == []
    with pytest.raises(LabError, match="uid 0"):
        hub.remove_files_of(0, roots=(tmp,))


def test_reachable_follows_every_folder_above(tmp_path: Path):
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (inner / "f").write_text("x")
    (inner / "f").chmod(0o644)
    for p in (tmp_path / "a", inner):
        p.chmod(0o755)
    blocked = all(os.stat(p).st_mode & 0o001 for p in tmp_path.parents) is False
    assert hub.reachable(inner / "f") is (not blocked)
    (tmp_path / "a").chmod(0o700)
    assert hub.reachable(inner / "f") is False


@pytest.mark.skipif(os.geteuid() != 0 or not __import__(
    "deliverylab.classroom.hub.limits", fromlist=["Limits"]).Limits.available(),
    reason="needs root and a writable cgroup v1 memory/cpu hierarchy")
def test_a_students_cgroup_caps_memory_and_cpu_and_holds_its_children():
    from deliverylab.classroom.hub.limits import GROUP, Limits

    limits = Limits(f"dlunit-{os.getpid()}", 256 * 2**20, 0.5)
    limits.create()
    proc = subprocess.Popen(["/bin/sh", "-c", "sleep 300 & exec sleep 300"],
                            preexec_fn=limits.join_fn(), start_new_session=True)
    try:
        mem = limits.root / "memory" / GROUP / limits.name
        assert int((mem / "memory.limit_in_bytes").read_text()) == 256 * 2**20
        cpu = limits.root / "cpu" / GROUP / limits.name
        assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50_000
        deadline = time.monotonic() + 10
        while len(limits.pids()) < 2:  # the shell's background child is inside too
            assert time.monotonic() < deadline, f"pids in the cgroup: {limits.pids()}"
            time.sleep(0.05)
        assert proc.pid in limits.pids() and limits.peak_bytes() > 0
    finally:
        for pid in limits.pids():
            os.kill(pid, 9)
        proc.wait(5)
        limits.remove()
    assert not any(d.exists() for d in limits.dirs)


def test_limits_refuse_nonsense():
    from deliverylab.classroom.hub.limits import Limits

    with pytest.raises(LabError, match="below 64 MiB"):
        Limits("x", 1000, None)
    with pytest.raises(LabError, match="cpu_limit=0"):
        Limits("x", None, 0)
