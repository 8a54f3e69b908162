"""The hub's owner stops every process the hub started, its services included, when
the hub stops and when it fails to start. JupyterHub itself is played by a stand-in
that does what it does with a managed service: starts it in a session of its own with
the service's environment (the idle culler, the dashboard), then either exits 1 (a
service that cannot start) or answers ``/hub/api/`` until it is stopped."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from deliverylab.classroom.hub import hub as hub_module
from deliverylab.classroom.hub.settings import SERVICE_MARK
from deliverylab.errors import LabError
from deliverylab.process.ports import free_ports
from deliverylab.waiting import wait_until

from .class_settings import settings

#: JupyterHub's stand-in: ``<this> serve|exit -f <state>/jupyterhub_config.py``.
FAKE_HUB = f"""
import http.server, json, os, subprocess, sys
from pathlib import Path
how, config = sys.argv[1], Path(sys.argv[3])
s = json.loads((config.parent / "settings.json").read_text())
service = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                           start_new_session=True,
                           env={{**os.environ, {SERVICE_MARK!r}: s["state"]}})
(config.parent / "service.pid").write_text(str(service.pid))
if how == "exit":
    sys.exit(1)  # as JupyterHub does when a managed service cannot start

class Api(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/hub/api/" else 404)
        self.end_headers()
        self.wfile.write(b"{{}}")

http.server.HTTPServer(("127.0.0.1", s["port"]), Api).serve_forever()
"""


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def sleeper(**env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                            start_new_session=True, env={**os.environ, **env})


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A Hub on the local path whose host steps (caps, runtime, users) do nothing and
    whose JupyterHub is :data:`FAKE_HUB`."""
    monkeypatch.setattr(hub_module, "check_caps", lambda s: None)
    monkeypatch.setattr(hub_module, "_prepare_runtime", lambda venv_bin: (venv_bin, {}))
    monkeypatch.setattr(hub_module, "ensure_student", lambda s, name: None)
    script = tmp_path / "fake_jupyterhub.py"
    script.write_text(FAKE_HUB)
    made: list[hub_module.Hub] = []

    def make(how: str, **kw) -> hub_module.Hub:
        s = settings(tmp_path, prefix=f"dlu{secrets.token_hex(2)}-", chp=sys.executable,
                     student_network="shared", port=free_ports(1)[0], **kw)
        hub = hub_module.Hub(s)
        hub.command = [sys.executable, str(script), how]
        made.append(hub)
        return hub

    yield make
    for hub in made:  # whatever the test left: never a sleeping stand-in
        for pid in hub_module.services_of(hub.settings.state):
            os.kill(pid, 9)


def test_stop_services_kills_this_class_s_services_and_nothing_else(tmp_path: Path):
    ours, theirs = (sleeper(**{SERVICE_MARK: str(tmp_path / name)}) for name in ("a", "b"))
    try:
        assert hub_module.services_of(str(tmp_path / "a")) == [ours.pid]
        assert hub_module.stop_services(str(tmp_path / "a")) == [ours.pid]
        assert ours.wait(10) == -9
        assert theirs.poll() is None, "another class's service was killed"
        assert hub_module.stop_services(str(tmp_path / "a")) == []  # again: nothing to do
    finally:
        theirs.kill()
        theirs.wait(10)
        ours.kill()


def test_a_hub_that_exits_at_start_leaves_no_service_running(fake_hub):
    hub = fake_hub("exit")
    with pytest.raises(LabError, match="exited with code 1"):
        hub.start(timeout=30)
    pid = int((Path(hub.settings.state) / "service.pid").read_text())
    # SIGKILLed by start; its reaper is init's
    wait_until("the service of a hub that failed to start to end", lambda: not running(pid),
               10, interval=0.1)
    assert hub.children is None  # the reaper was released: nothing left for it


def test_stopping_the_hub_stops_its_services_and_the_hub(fake_hub):
    hub = fake_hub("serve").start(timeout=30)
    state = Path(hub.settings.state)
    pid = int((state / "service.pid").read_text())
    assert running(pid) and hub.proc.poll() is None
    assert json.loads((state / "settings.json").read_text())["service_bin"] == \
        hub.settings.venv_bin  # the local path: the services run the students' Python
    hub.stop()
    assert hub.proc.poll() is not None
    wait_until("the hub's service to end with its stop", lambda: not running(pid), 10,
               interval=0.1)


def test_on_the_docker_path_the_dashboard_gets_a_python_nobody_can_run(
        fake_hub, monkeypatch: pytest.MonkeyPatch):
    """The regression behind the revert: on the Docker path nothing made the venv's
    Python runnable by ``nobody``, so the dashboard could not start and JupyterHub
    exited 1. The service's Python is now made on either path; the containers'
    environment (``extra_env``) does not get the host's paths."""
    from deliverylab.classroom.hub import docker as class_docker

    for name in ("prepare", "ensure_home"):
        monkeypatch.setattr(class_docker, name, lambda *a: None)
    monkeypatch.setattr(class_docker, "remove_class", lambda s: [])
    monkeypatch.setattr(hub_module.os, "geteuid", lambda: 0)  # the hub runs as root
    made = ("/opt/class/venv/bin", {"LD_LIBRARY_PATH": "/opt/class/python/lib"})
    monkeypatch.setattr(hub_module, "_prepare_runtime", lambda venv_bin: made)
    hub = fake_hub("serve", spawner="docker").start(timeout=30)
    try:
        saved = json.loads((Path(hub.settings.state) / "settings.json").read_text())
        assert (saved["service_bin"], saved["service_env"]) == made
        assert saved["extra_env"] == {} and saved["venv_bin"] != made[0]
    finally:
        hub.stop()
