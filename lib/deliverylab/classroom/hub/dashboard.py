"""The instructor's dashboard: a JupyterHub managed service at ``/services/instructor/``
that the hub starts with the class, showing the class live
(:mod:`deliverylab.classroom.instructor.live` renders it).

Least privilege, no root:

- It runs as ``nobody`` (the hub runs as root to make the students' users) and holds a
  token whose role has, for each listed student only, ``read:servers!user=<name>`` (is
  the server up, where is it) and ``access:servers!user=<name>`` (read the results
  files through the student's own server's contents API). Not admin, no user list, no
  right to start or stop a server. The students' homes are 0700, so reading the files
  through their servers is the one way in without root; a stopped server's last seen
  files stay on the page, marked stopped.
- It does not keep idle servers alive. Every request through the hub's proxy counts as
  the student's activity (configurable-http-proxy stamps the route; the hub reads the
  stamps), so a dashboard polling every few seconds kept every server from the idle
  culler (seen in the hub test). The service therefore reads a student's files again
  only when the hub's ``last_activity`` of their server is later than the end of its
  own last read (its own read is stamped before that end), and asks the server with
  ``no_track_activity`` (jupyter_server's flag) so the server's own report stays the
  student's. The page lags a student's run by up to the server's activity interval
  (``JUPYTERHUB_ACTIVITY_INTERVAL``, 60 s in a class).
- Only the instructor opens it: hub OAuth (:class:`jupyterhub.services.auth.HubOAuth`)
  lets in a user with ``access:services!service=instructor``, which the hub's admins
  have and the role :data:`VIEWER_ROLE` gives the ``instructors`` group (the class's
  ``instructors`` setting); a student gets 403.
- Memory against the cap: the local spawner's cgroup (:class:`.limits.Limits`'s
  ``usage_bytes``, files any user may read). The Docker spawner's container stats need
  the engine's socket, which this service is not given: "not measured" there.

``python -m deliverylab.classroom.hub.dashboard --students a,b ...`` is the command the
hub runs (:func:`service_config`); it reads JupyterHub's ``JUPYTERHUB_*`` environment.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from ..instructor.live import REFRESH_S, StudentState
from ..instructor.live import page as render
from ..instructor.view import RESULT_DIRS, Collected, ResultFile, add_student
from .settings import SERVICE_MARK, HubSettings

NAME = "instructor"
#: The group whose members may open the dashboard (besides the hub's admins).
GROUP = "instructors"
#: The Unix user the service runs as when the hub runs as root.
SERVICE_USER = "nobody"
SERVICE_ROLE = "instructor-dashboard"
VIEWER_ROLE = "instructor-viewer"
#: jupyter_server's flag: this request is not the student's activity.
QUIET = "no_track_activity=1"


def service_scopes(students: list[str]) -> list[str]:
    """The service's token: each student's server state and the server's API, nothing
    of any other user, no admin."""
    return [f"{scope}!user={name}" for name in students
            for scope in ("read:servers", "access:servers")]


def service_config(s: HubSettings, run_as_root: bool) -> tuple[dict, list[dict], dict]:
    """JupyterHub's ``services`` entry, ``load_roles`` entries and ``load_groups`` for the
    dashboard (``run_as_root``: the hub is root, so the service becomes :data:`SERVICE_USER`)."""
    python_bin = s.service_bin or s.venv_bin
    service: dict[str, Any] = {
        "name": NAME,
        "url": f"http://127.0.0.1:{s.dashboard_port}",
        "command": [os.path.join(python_bin, "python"), "-m",
                    "deliverylab.classroom.hub.dashboard",
                    "--students", ",".join(s.students), "--prefix", s.prefix,
                    "--public-url", s.url, "--spawner", s.spawner,
                    "--refresh", str(s.dashboard_refresh),
                    *(["--mem-limit-gb", str(s.mem_limit_gb)] if s.mem_limit_gb else [])],
        # a Python nobody can run (host.prepare_runtime's copy and its LD_LIBRARY_PATH
        # where the venv's own sits in a home nobody else can enter: the hub's start
        # sets service_bin on both spawners; JupyterHub exits at start if it cannot run)
        "environment": {**(s.service_env if s.service_bin else s.extra_env),
                        "PYTHONPATH": s.pythonpath, "PATH": f"{python_bin}:/usr/bin:/bin",
                        SERVICE_MARK: s.state},
        "cwd": "/",
        "oauth_no_confirm": True,  # the class's own service: no "authorize?" page
    }
    if run_as_root:
        service["user"] = SERVICE_USER
    roles = [{"name": SERVICE_ROLE, "scopes": service_scopes(s.students),
              "services": [NAME]},
             {"name": VIEWER_ROLE, "scopes": [f"access:services!service={NAME}"],
              "groups": [GROUP]}]
    return service, roles, {GROUP: {"users": list(s.instructors)}}


# --- the service ------------------------------------------------------------------------

class Class:
    """The class as the service sees it: each student's results files, read through
    their server and kept (by ``last_modified``) so a refresh fetches what changed."""

    def __init__(self, students: list[str], prefix: str, public_url: str, spawner: str,
                 mem_limit_gb: float | None, api_url: str, token: str) -> None:
        self.students, self.prefix, self.spawner = students, prefix, spawner
        self.public_url, self.api_url, self.token = public_url.rstrip("/"), api_url, token
        self.cap = int(mem_limit_gb * 2**30) if mem_limit_gb else None
        self.files: dict[str, dict[str, tuple[str, ResultFile]]] = {n: {} for n in students}
        #: When each student's last read ended (epoch s): read again after activity only.
        self.read_at: dict[str, float] = {}

    def _get(self, url: str) -> Any:
        req = urllib.request.Request(url, headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as rsp:
            return json.loads(rsp.read())

    def server(self, name: str) -> tuple[str, str | None, float]:
        """("running" | "starting" | "stopped" | why unknown, the server's URL path, its
        last activity as the hub knows it (epoch s, 0 if none))."""
        try:
            user = self._get(f"{self.api_url}/users/{urllib.parse.quote(name)}")
        except urllib.error.HTTPError as exc:
            return f"unknown (hub answered {exc.code})", None, 0.0
        except OSError as exc:
            return f"unknown ({exc})", None, 0.0
        server = (user.get("servers") or {}).get("")
        if not server:
            return "stopped", None, 0.0
        active = max(_stamp(server.get("last_activity") or "", 0.0),
                     _stamp(server.get("started") or "", 0.0))
        return ("running" if server.get("ready") else "starting"), server.get("url"), active

    def due(self, name: str, active: float) -> bool:
        """Read again: never read, or the student did something after the last read."""
        return name not in self.read_at or active > self.read_at[name]

    def _listing(self, base: str, path: str) -> list[dict]:
        try:
            got = self._get(f"{base}api/contents/{urllib.parse.quote(path)}?content=1"
                            f"&{QUIET}")
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise
        return got.get("content") or [] if got.get("type") == "directory" else []

    def refresh_files(self, name: str, base: str) -> str | None:
        """Re-read a running student's results folders; None, or why not."""
        seen: dict[str, tuple[str, ResultFile]] = {}
        known = self.files[name]
        try:
            todo = list(RESULT_DIRS)
            while todo:
                for entry in self._listing(base, todo.pop()):
                    if entry["type"] == "directory":
                        todo.append(entry["path"])
                    elif entry["name"].endswith(".json"):
                        stamp = entry.get("last_modified", "")
                        if entry["path"] in known and known[entry["path"]][0] == stamp:
                            seen[entry["path"]] = known[entry["path"]]
                            continue
                        got = self._get(f"{base}api/contents/"
                                        f"{urllib.parse.quote(entry['path'])}"
                                        f"?content=1&type=file&format=text&{QUIET}")
                        mtime = _stamp(stamp)
                        seen[entry["path"]] = (stamp, ResultFile(
                            f"{name}:{entry['path']}", got.get("content") or "", mtime))
        except (OSError, ValueError) as exc:
            return f"results not read ({str(exc)[:80]})"
        self.files[name] = seen
        self.read_at[name] = time.time()  # after the last answer: our own stamps precede it
        return None

    def memory(self, name: str) -> tuple[int | None, str]:
        if self.spawner == "docker":
            return None, ("not measured: the container's stats need the Docker engine's "
                          "socket, which the dashboard is not given")
        from .limits import Limits, hierarchy

        layout = hierarchy()
        if layout is None:
            return None, "not measured: no cgroup memory controller on this host"
        used = Limits(self.prefix + name, None, None, layout=layout).usage_bytes()
        return used, "" if used is not None else "not measured: no cgroup (server stopped)"

    def collect(self) -> tuple[Collected, list[StudentState]]:
        out, states = Collected(), []
        for name in self.students:
            server, path, active = self.server(name)
            if path is not None and server == "running" and self.due(name, active):
                why = self.refresh_files(name, f"{self.public_url}{path}")
                if why:
                    server = f"{server}; {why}"
            elif self.files[name]:
                server = f"{server} (its last seen results)"
            add_student(out, name, [f for _, f in self.files[name].values()])
            used, note = self.memory(name)
            states.append(StudentState(name, server, used, self.cap, note))
        return out, states


def _stamp(text: str, default: float | None = None) -> float:
    """The hub's and jupyter_server's ISO times (``...Z``) as epoch seconds."""
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return time.time() if default is None else default


def make_app(klass: Class, refresh_s: int) -> Any:
    """The tornado application: the page (instructor only) and hub OAuth's callback."""
    from jupyterhub.services.auth import HubOAuthCallbackHandler, HubOAuthenticated
    from jupyterhub.utils import url_path_join
    from tornado import web

    class Page(HubOAuthenticated, web.RequestHandler):
        @web.authenticated
        async def get(self) -> None:
            import asyncio

            collected, states = await asyncio.to_thread(klass.collect)
            self.set_header("Cache-Control", "no-store")
            self.write(render(collected, states, refresh_s))

    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{NAME}/")
    return web.Application([
        (prefix, Page),
        (url_path_join(prefix, "oauth_callback"), HubOAuthCallbackHandler),
    ], cookie_secret=os.urandom(32))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m deliverylab.classroom.hub.dashboard",
                                description="The instructor's live dashboard (a "
                                "JupyterHub service; the hub starts it).")
    p.add_argument("--students", required=True, help="name,name,...")
    p.add_argument("--prefix", default="dlab-", help="the students' Unix names' prefix")
    p.add_argument("--public-url", required=True, help="the hub's proxy, e.g. "
                   "http://127.0.0.1:8000 (the students' servers are behind it)")
    p.add_argument("--spawner", choices=("local", "docker"), default="local")
    p.add_argument("--mem-limit-gb", type=float, default=None)
    p.add_argument("--refresh", type=int, default=REFRESH_S, help="seconds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import asyncio

    args = parse_args(argv)
    token, api = os.environ.get("JUPYTERHUB_API_TOKEN"), os.environ.get("JUPYTERHUB_API_URL")
    service_url = os.environ.get("JUPYTERHUB_SERVICE_URL")
    if not (token and api and service_url):
        print("the dashboard runs as a JupyterHub service: JUPYTERHUB_API_TOKEN, "
              "JUPYTERHUB_API_URL and JUPYTERHUB_SERVICE_URL must be set", file=sys.stderr)
        return 2
    klass = Class(args.students.split(","), args.prefix, args.public_url, args.spawner,
                  args.mem_limit_gb, api.rstrip("/"), token)
    url = urllib.parse.urlparse(service_url)

    async def serve() -> None:
        make_app(klass, args.refresh).listen(url.port, url.hostname)
        await asyncio.Event().wait()

    asyncio.run(serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
