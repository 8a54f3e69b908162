"""A running JupyterHub for ``make classroom``: started under a reaper, awaited on its
API, stopped with everything it must not leave behind (the proxy, every student's
processes, cgroups and network namespaces; docker: the class's containers and network).

The settings it runs with are :mod:`.settings`'s; the students' Unix users
:mod:`.users`'; the command line (``python -m deliverylab.classroom.hub``) is
:mod:`.__main__`.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

from ...errors import LabError
from ...waiting import wait_until
from .host import prepare_runtime as _prepare_runtime
from .network import ClassNetwork
from .settings import HubSettings
from .users import ensure_student, remove_students, sweep

# --- the caps --------------------------------------------------------------------------

def check_caps(settings: HubSettings) -> str | None:
    """Can this host cap each student (local spawner)? Raises one line if not and the
    class did not allow it (``allow_uncapped``); returns why not if it did, else None."""
    from .limits import why_not

    if settings.mem_limit_gb is None and settings.cpu_limit is None:
        return "no caps asked for"  # only with allow_uncapped (HubSettings checks)
    why = why_not()
    if why is not None and not settings.allow_uncapped:
        raise LabError(f"this host cannot cap each student's memory: {why}; refusing to "
                       "start the class (--allow-uncapped, make classroom "
                       "ALLOW_UNCAPPED=1: run it without caps)")
    return why


# --- the hub -------------------------------------------------------------------------

class Hub:
    """A running JupyterHub: started in its own process group under a reaper that, if
    this Python process dies, kills the hub and runs the command line's ``sweep``."""

    def __init__(self, settings: HubSettings, ephemeral: bool = False) -> None:
        self.settings = settings
        self.ephemeral = ephemeral  # a test's or bench's class: users removed even then
        self.proc: subprocess.Popen | None = None
        self.children = None
        #: What :func:`stop_everything` still found after the hub's own shutdown.
        self.swept: list[str] = []

    def start(self, timeout: float = 60.0) -> Hub:
        from ...process.children import Children

        s = self.settings
        if not Path(s.chp).exists():
            raise LabError(f"configurable-http-proxy not found at {s.chp}: run `make "
                           "classroom` (it installs it with npm into build/chp)")
        if s.spawner == "docker":
            from . import docker

            docker.prepare(s)  # the class network first: its gateway is the hub's ip
            for student in s.students:
                docker.ensure_home(s, student)
        else:
            check_caps(s)
            if s.student_network == "isolated":
                net = ClassNetwork(s.prefix, s.students)
                net.open()
                s.hub_ip = net.hub_address
            s.venv_bin, env = _prepare_runtime(s.venv_bin)
            s.extra_env = {**s.extra_env, **env}
            for student in s.students:
                ensure_student(s, student)
        path = s.save()
        state = Path(s.state)
        self.children = Children()
        self.children.run_at_death([sys.executable, "-m", "deliverylab.classroom.hub",
                                    "sweep", "--state", str(state),
                                    *(["--remove-users"] if self.ephemeral else [])])
        env = {**os.environ, "PYTHONPATH": s.pythonpath + os.pathsep
               + os.environ.get("PYTHONPATH", ""),
               "PATH": str(Path(sys.executable).parent) + os.pathsep
               + os.environ.get("PATH", "")}
        self.proc = self.children.start(
            "jupyterhub", [sys.executable, "-m", "jupyterhub", "-f",
                           str(state / "jupyterhub_config.py")],
            state / "jupyterhub.log", env=env, cwd=state)
        self.log = state / "jupyterhub.log"

        def answers() -> bool:  # refused, or an error status (HTTPError): not yet
            with urllib.request.urlopen(f"{s.url}/hub/api/", timeout=2) as rsp:
                return rsp.status == 200

        wait_until(f"JupyterHub to answer on {s.url}/hub/api/", answers, timeout,
                   check=lambda: self.children.check(self.proc), interval=0.3,
                   retry=(OSError,), explain=lambda: f"; its log: {self.log} (settings {path})")
        return self

    def stop(self, remove_users: bool = False) -> None:
        """Stop the hub (it stops every student's server, each swept), then the proxy;
        with ``remove_users`` delete the class's Unix users and homes."""
        if self.proc is not None and self.children is not None:
            self._stop_culler()
            self.children.stop(self.proc, timeout=60, sig=signal.SIGTERM)
        self.swept = stop_everything(self.settings, remove_users=remove_users)
        if self.children is not None:
            self.children.close()
            self.children = None

    def _stop_culler(self) -> None:
        """SIGKILL the idle culler first: it outlasts JupyterHub's SIGINT and SIGTERM
        (measured: the hub's shutdown waited ~29 s on it), and it holds no state."""
        import psutil

        try:
            children = psutil.Process(self.proc.pid).children()
        except psutil.Error:
            return
        for child in children:
            try:
                if "jupyterhub_idle_culler" in child.cmdline():
                    child.kill()
            except psutil.Error:
                continue

    def __enter__(self) -> Hub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_everything(settings: HubSettings, remove_users: bool = False) -> list[str]:
    """What must not outlive a hub: the proxy (JupyterHub starts it in its own session)
    and every student's processes (docker: the class's containers and network); with
    ``remove_users`` the users themselves (docker: the students' folders). Returns the
    containers and networks it had to remove (docker), for the caller to report."""
    pid_file = Path(settings.state) / "jupyterhub-proxy.pid"
    try:
        os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
    except (OSError, ValueError):
        pass
    pid_file.unlink(missing_ok=True)
    if settings.spawner == "docker":
        from . import docker

        removed = docker.remove_class(settings)
        if remove_users:
            docker.remove_homes(settings)
        return removed
    from .limits import remove_all

    if remove_users:
        remove_students(settings)
    for student in settings.students:
        try:
            sweep(pwd.getpwnam(settings.unix_name(student)).pw_uid,
                  what=f"{student}'s processes")
        except KeyError:
            pass
        remove_all(settings.unix_name(student))
    if settings.student_network == "isolated":
        ClassNetwork(settings.prefix, settings.students).close()
    return []
