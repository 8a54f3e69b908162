"""The dashboard service's place in the hub's config: its token's role gives it each
listed student's server state and server API and nothing else, it runs as ``nobody``
under a root hub, it is proxied at ``/services/instructor/``, and only the instructors'
group (and the hub's admins) may open it. And the service's reading of a student's
results through their server's contents API, against a hand-made stand-in for it."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlparse

import pytest

from deliverylab.classroom.hub import dashboard
from deliverylab.errors import LabError

from .class_settings import settings


def test_the_service_token_reads_and_reaches_the_listed_students_only(tmp_path: Path):
    s = settings(tmp_path, instructors=["ida"], dashboard_port=18125)
    service, roles, groups = dashboard.service_config(s, run_as_root=True)
    [mine] = [r for r in roles if r.get("services") == ["instructor"]]
    assert sorted(mine["scopes"]) == sorted([
        "read:servers!user=ann", "access:servers!user=ann",
        "read:servers!user=ben", "access:servers!user=ben"])
    assert not any(k in service for k in ("admin", "api_token"))
    assert not any(sc.startswith(("admin", "list:", "delete:", "servers", "users"))
                   or "!" not in sc for sc in mine["scopes"])
    assert service["user"] == "nobody"  # never root
    assert service["url"] == "http://127.0.0.1:18125"  # proxied at /services/instructor/
    assert service["name"] == "instructor"
    assert service["command"][1:3] == ["-m", "deliverylab.classroom.hub.dashboard"]
    [viewer] = [r for r in roles if r.get("groups")]
    assert viewer == {"name": "instructor-viewer", "groups": ["instructors"],
                      "scopes": ["access:services!service=instructor"]}
    assert groups == {"instructors": {"users": ["ida"]}}
    assert "user" not in dashboard.service_config(s, run_as_root=False)[0]


def test_the_service_runs_the_python_the_hub_made_for_it_marked_with_the_class(
        tmp_path: Path):
    from deliverylab.classroom.hub.settings import SERVICE_MARK

    s = settings(tmp_path, venv_bin="/root/venv/bin", extra_env={"FOR_STUDENTS": "1"},
                 service_bin="/opt/class/venv/bin",
                 service_env={"LD_LIBRARY_PATH": "/opt/class/python/lib"})
    service = dashboard.service_config(s, run_as_root=True)[0]
    assert service["command"][0] == "/opt/class/venv/bin/python"
    env = service["environment"]
    assert env["LD_LIBRARY_PATH"] == "/opt/class/python/lib" and "FOR_STUDENTS" not in env
    assert env["PATH"].startswith("/opt/class/venv/bin:")
    assert env[SERVICE_MARK] == s.state  # how the hub's owner finds it (hub.stop_services)
    s.service_bin = ""  # settings saved before the field: the students' Python, as then
    service = dashboard.service_config(s, run_as_root=True)[0]
    assert service["command"][0] == "/root/venv/bin/python"
    assert service["environment"]["FOR_STUDENTS"] == "1"


def test_the_hub_config_loads_the_service_its_roles_and_the_instructors(tmp_path: Path):
    from traitlets.config import Config

    from deliverylab.classroom.hub import spawner
    from deliverylab.classroom.hub.settings import SERVICE_MARK

    s = settings(tmp_path, instructors=["ida"])
    c = Config()
    spawner.configure(c, str(s.save()))
    assert [x["name"] for x in c.JupyterHub.services] == ["idle-culler", "instructor"]
    assert all(x["environment"][SERVICE_MARK] == s.state for x in c.JupyterHub.services)
    assert {r["name"] for r in c.JupyterHub.load_roles} == {
        "idle-culler", "instructor-dashboard", "instructor-viewer"}
    assert c.JupyterHub.load_groups == {"instructors": {"users": ["ida"]}}
    assert c.Authenticator.allowed_users == {"ann", "ben", "ida"}
    assert not c.Authenticator.admin_users.get_value(set())  # the instructor is no admin


def test_an_instructor_named_like_a_student_is_refused(tmp_path: Path):
    with pytest.raises(LabError, match="instructor name.*'ann'"):
        settings(tmp_path, instructors=["ann"])


class _FakeServer(BaseHTTPRequestHandler):
    """A student's server's contents API, with the one token it accepts."""

    files: dict[str, str] = {}
    seen: list[str] = []
    last_activity = "2026-11-28T06:00:00.000000Z"

    def do_GET(self) -> None:  # noqa: N802 -- http.server's name
        self.seen.append(self.path)
        if self.headers.get("Authorization") != "token svc-token":
            self.send_response(403)
            self.end_headers()
            return
        path = urlparse(self.path).path
        if path == "/hub/api/users/ann":
            body = {"name": "ann", "servers": {"": {
                "ready": True, "url": "/user/ann/", "last_activity": self.last_activity}}}
        elif path == "/hub/api/users/ben":
            body = {"name": "ben", "servers": {}}
        elif path.startswith("/user/ann/api/contents/"):
            rel = path.removeprefix("/user/ann/api/contents/")
            inside = [p for p in self.files if p.startswith(rel + "/")]
            if rel in self.files:
                body = {"type": "file", "content": self.files[rel]}
            elif inside:
                body = {"type": "directory", "content": [
                    {"type": "file", "name": p.rsplit("/", 1)[1], "path": p,
                     "last_modified": "2026-11-28T06:00:00Z"} for p in inside]}
            else:
                self.send_response(404)
                self.end_headers()
                return
        else:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_the_service_reads_a_running_students_results_through_their_server():
    _FakeServer.files = {"labs/results/00_tour.json": json.dumps(
        {"chapter": "00_tour", "checks": [{"what": "nothing lost", "pass": True}],
         "pass": True})}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _FakeServer)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        klass = dashboard.Class(["ann", "ben"], "dlt-", url, "docker", 3.0,
                                f"{url}/hub/api", "svc-token")
        collected, states = klass.collect()
        assert [(r["student"], r["chapter"], r["held"]) for r in collected.chapters] == [
            ("ann", "00_tour", True)]
        assert [s.server for s in states] == ["running", "stopped"]
        assert states[0].memory_bytes is None and "not measured" in states[0].memory_note
        reads = [p for p in _FakeServer.seen if "/api/contents/" in p]
        assert reads and all(p.endswith("no_track_activity=1") for p in reads), reads
        _FakeServer.seen.clear()
        klass.collect()  # no activity since the last read: the server is not asked
        assert not any("/api/contents/" in p for p in _FakeServer.seen), _FakeServer.seen
        assert [r["chapter"] for r in klass.collect()[0].chapters] == ["00_tour"]  # kept
        _FakeServer.last_activity = "2999-01-01T00:00:00Z"  # the student did something
        klass.collect()  # listed again; the unchanged file is not fetched again
        assert any("/api/contents/labs/results?" in p for p in _FakeServer.seen)
        assert not any("00_tour.json?" in p for p in _FakeServer.seen)
        klass.token = "wrong"
        _, states = klass.collect()
        assert states[0].server.startswith("unknown (hub answered 403)")
    finally:
        httpd.shutdown()
        httpd.server_close()
