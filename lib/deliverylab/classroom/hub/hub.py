"""A running JupyterHub for ``make classroom``: started under a reaper, awaited on its
API, stopped with everything it must not leave behind (its services, the proxy, every
student's processes, cgroups and network namespaces; docker: the class's containers and
network), also when it fails to start.

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
from .settings import SERVICE_MARK, HubSettings
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
        #: How JupyterHub is run (a unit test runs a stand-in); ``-f <config>`` follows.
        self.command = [sys.executable, "-m", "jupyterhub"]
        self.children = None
        #: What :func:`stop_everything` still found after the hub's own shutdown.
        self.swept: list[str] = []

    def start(self, timeout: float = 60.0) -> Hub:
        """Prepare the host, start JupyterHub and wait until it answers. If anything
        fails on the way (JupyterHub exits 1 when a managed service cannot start),
        everything started so far is stopped (:meth:`stop`) before the error is raised."""
        try:
            return self._start(timeout)
        except BaseException as exc:
            try:
                self.stop(remove_users=self.ephemeral)
            except Exception as also:  # the start's error stays the one raised
                exc.add_note(f"and stopping what the hub had started failed: {also}")
            raise

    def _start(self, timeout: float) -> Hub:
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
            if os.geteuid() == 0:  # the dashboard runs as nobody, on the host
                s.service_bin, s.service_env = _prepare_runtime(s.venv_bin)
        else:
            check_caps(s)
            if s.student_network == "isolated":
                net = ClassNetwork(s.prefix, s.students)
                net.open()
                s.hub_ip = net.hub_address
            s.venv_bin, env = _prepare_runtime(s.venv_bin)
            s.extra_env = {**s.extra_env, **env}
            s.service_bin, s.service_env = s.venv_bin, env
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
        env.pop(SERVICE_MARK, None)  # the hub is no service of its class
        self.log = state / "jupyterhub.log"
        self.proc = self.children.start(
            "jupyterhub", [*self.command, "-f", str(state / "jupyterhub_config.py")],
            self.log, env=env, cwd=state)

        def answers() -> bool:  # refused, or an error status (HTTPError): not yet
            with urllib.request.urlopen(f"{s.url}/hub/api/", timeout=2) as rsp:
                return rsp.status == 200

        wait_until(f"JupyterHub to answer on {s.url}/hub/api/", answers, timeout,
                   check=lambda: self.children.check(self.proc), interval=0.3,
                   retry=(OSError,), explain=lambda: f"; its log: {self.log} (settings {path})")
        return self

    def stop(self, remove_users: bool = False) -> None:
        """Stop the hub's services (:func:`stop_services`: the idle culler would hold
        JupyterHub's shutdown ~29 s), the hub (it stops every student's server, each
        swept), then what it leaves (:func:`stop_everything`: the proxy, every student's
        process, a service it did not stop); with ``remove_users`` delete the class's
        Unix users and homes. Safe to call again, and after a start that failed."""
        stop_services(self.settings.state)
        if self.proc is not None and self.children is not None:
            self.children.stop(self.proc, timeout=60, sig=signal.SIGTERM)
        self.swept = stop_everything(self.settings, remove_users=remove_users)
        if self.children is not None:
            self.children.close()
            self.children = None

    def __enter__(self) -> Hub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def services_of(state: str) -> list[int]:
    """Pids of the live (not zombie) processes of a hub's services: those whose
    environment has :data:`.settings.SERVICE_MARK` set to the class's ``state`` folder."""
    import psutil

    pids = []
    for proc in psutil.process_iter(["status"]):
        try:
            if (proc.info["status"] != psutil.STATUS_ZOMBIE
                    and proc.environ().get(SERVICE_MARK) == state):
                pids.append(proc.pid)
        except psutil.Error:  # gone, or not ours to read
            continue
    return pids


def stop_services(state: str, timeout: float = 10.0) -> list[int]:
    """SIGKILL every process of the hub's services (:func:`services_of`: the idle
    culler, the dashboard) until none is left; returns their pids. JupyterHub starts
    each in a session of its own and does not stop them when it exits at start (seen:
    the culler outlived a hub that exited 1); neither holds state a SIGTERM would save,
    and the culler outlasts SIGTERM (the hub's shutdown waited ~29 s on it)."""
    killed: set[int] = set()

    def none_left() -> bool:  # SIGKILL whatever is still there; done when nothing is
        pids = services_of(state)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        killed.update(pids)
        return not pids

    wait_until(f"the services of the hub at {state} to end after SIGKILL", none_left,
               timeout, interval=0.1, explain=lambda: f"; still running: {services_of(state)}")
    return sorted(killed)


def stop_everything(settings: HubSettings, remove_users: bool = False) -> list[str]:
    """What must not outlive a hub: its services (:func:`stop_services`), the proxy
    (JupyterHub starts it in its own session) and every student's processes (docker:
    the class's containers and network); with ``remove_users`` the users themselves
    (docker: the students' folders). Returns the containers and networks it had to
    remove (docker), for the caller to report."""
    stop_services(settings.state)
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
