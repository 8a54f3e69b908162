"""The hub's side of ``make classroom``: its configuration, the workshop authenticator and
the spawners: each student's server as that student's Unix user (``local``), or in a
container of the lab image (``docker``; the engine's side is :mod:`.docker`).

Loaded by JupyterHub itself (``jupyterhub -f <state>/jupyterhub_config.py``, written by
:class:`.settings.HubSettings`), so this module is the only one that imports ``jupyterhub``
(the ``classroom`` extra: a student's laptop install does not need it).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import sys
from pathlib import Path
from secrets import compare_digest
from typing import Any

from dockerspawner import DockerSpawner
from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Dict, HasTraits, Unicode, default

from ...errors import LabError
from . import dashboard
from . import docker as class_docker
from . import network as netns
from .limits import Limits, why_not
from .settings import SERVICE_MARK, HubSettings
from .users import ensure_student, sweep

#: What the idle culler may do (its README's list): see users' activity, stop servers.
CULLER_SCOPES = ["list:users", "read:users:activity", "read:servers", "delete:servers"]


class WorkshopAuthenticator(SharedPasswordAuthenticator):
    """The shared workshop password for anyone on the class list (``allowed_users``),
    or, for a student given their own password, that password only."""

    student_passwords = Dict(Unicode(), config=True,
                             help="name -> password; those students need their own")

    async def authenticate(self, handler: Any, data: dict[str, str]) -> str | None:
        name = self.normalize_username(data.get("username", ""))
        own = self.student_passwords.get(name)
        if own is not None:
            given = data.get("password", "")
            ok = compare_digest(own.encode(), given.encode())
            return name if ok and self.check_allowed(name, None) else None
        return await super().authenticate(handler, data)


class ClassroomSettings(HasTraits):
    """What both spawners read: the classroom's settings, from the file the hub's
    configuration names (``c.<Spawner>.settings_path``), loaded once per spawner."""

    settings_path = Unicode(config=True, help="the classroom's settings.json")

    @property
    def classroom(self) -> HubSettings:
        if not hasattr(self, "_classroom"):
            self._classroom = HubSettings.load(self.settings_path)
        return self._classroom


class StudentSpawner(ClassroomSettings, LocalProcessSpawner):
    """LocalProcessSpawner with one Unix user per student (``<prefix><name>``).

    :meth:`start` creates the user and their private home with the course on first use;
    the server runs with the student's uid, the class cache, the venv and a private
    ``TMPDIR``. :meth:`stop` -- called for a stop, a cull, a server that died, and the
    hub's own shutdown -- stops the server as JupyterHub does, then SIGKILLs every
    process left with the student's uid (:func:`.users.sweep`): kernels and their reapers
    run in sessions of their own, so the server's process group is not enough.
    """

    def unix_user(self) -> pwd.struct_passwd:
        return pwd.getpwnam(self.classroom.unix_name(self.user.name))

    def limits(self) -> Limits | None:
        s = self.classroom
        if s.mem_limit_gb is None and s.cpu_limit is None:
            return None
        why = why_not()
        if why is not None:  # the hub checked at its start; the host may have changed
            if not s.allow_uncapped:
                raise LabError(f"{self.user.name}'s server is not started without its "
                               f"caps: {why}")
            self.log.warning("%s runs without its memory and CPU caps: %s",
                             self.user.name, why)
            return None
        mem = None if s.mem_limit_gb is None else int(s.mem_limit_gb * 2**30)
        return Limits(s.unix_name(self.user.name), mem, s.cpu_limit)

    def network(self) -> netns.StudentNetwork | None:
        """The student's own network namespace (``network = isolated``), else None."""
        s = self.classroom
        if s.student_network != "isolated":
            return None
        return netns.ClassNetwork(s.prefix, s.students).student(self.user.name)

    def make_preexec_fn(self, name: str) -> Any:
        become = set_user_setuid(self.classroom.unix_name(name))
        steps = []
        if (net := self.network()) is not None:
            steps.append(net.join_fn())  # first: setns needs root's capabilities
        if (limits := self.limits()) is not None:
            limits.create()
            steps.append(limits.join_fn())
        if not steps:
            return become

        def preexec() -> None:  # as root: into the namespace and cgroups, then the uid
            for step in steps:
                step()
            become()
        return preexec

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        s, user = self.classroom, self.unix_user()
        env.update({
            "USER": user.pw_name, "LOGNAME": user.pw_name, "HOME": user.pw_dir,
            "SHELL": user.pw_shell, "TMPDIR": str(Path(user.pw_dir) / ".tmp"),
            "DELIVERYLAB_CACHE": s.cache, "PYTHONPATH": s.pythonpath,
            "DELIVERYLAB_PROFILE": s.profile,
            "PATH": f"{s.venv_bin}:/usr/local/bin:/usr/bin:/bin",
            "JUPYTERHUB_ACTIVITY_INTERVAL": str(s.activity_interval),
            **s.extra_env,
        })
        return env

    async def start(self) -> Any:
        s = self.classroom
        if self.user.name not in s.students:  # an instructor: the dashboard, no server
            raise LabError(f"{self.user.name} is not a student of this class: no server "
                           f"(the dashboard is at /services/{dashboard.NAME}/)")
        await asyncio.to_thread(ensure_student, s, self.user.name)
        self.cmd = [str(Path(s.venv_bin) / "python"), "-m", "jupyterhub.singleuser"]
        if (net := self.network()) is not None:
            await asyncio.to_thread(netns.create, net, s.hub_ip)
            self.ip = net.address  # the server listens there, for the hub's proxy
        return await super().start()

    async def stop(self, now: bool = False) -> None:
        await super().stop(now=now)
        uid = self.unix_user().pw_uid
        await asyncio.to_thread(sweep, uid, 30.0, f"{self.user.name}'s processes")
        try:
            limits = self.limits()
        except LabError:  # none was made: nothing to remove
            limits = None
        if limits is not None:
            peak = limits.peak_bytes()
            await asyncio.to_thread(limits.remove)
            self.log.info("%s's peak memory in its cgroup: %s MiB", self.user.name,
                          None if peak is None else peak // 2**20)
        if (net := self.network()) is not None:
            await asyncio.to_thread(netns.remove, net)
        self.log.info("Swept every process of %s (uid %d)", self.user.name, uid)


class ClassDockerSpawner(ClassroomSettings, DockerSpawner):
    """DockerSpawner for the class: the container is named ``<prefix><name>`` and
    labelled with the class (:func:`.docker.remove_class` finds it), mounts the
    student's ``<home>/labs`` and nothing else (no engine socket), and is removed when
    the server stops (``remove``), which ends every process the student started."""

    @default("object_name")
    def _object_name_default(self) -> str:
        return self.classroom.unix_name(self.user.name)  # validated: a valid docker name

    async def start(self) -> Any:
        s = self.classroom
        home = await asyncio.to_thread(class_docker.ensure_home, s, self.user.name)
        self.volumes = {str(home / "labs"): {"bind": class_docker.COURSE_IN_IMAGE,
                                              "mode": "rw"}}
        return await super().start()

    async def stop(self, now: bool = False) -> None:
        if self.object_id:
            peak = class_docker.peak_memory(self.object_id)
            self.log.info("%s's peak memory in its container: %s MiB", self.user.name,
                          None if peak is None else peak // 2**20)
        await super().stop(now=now)


def configure_docker(c: Any, s: HubSettings, settings_path: str) -> None:
    """A container per student on the class network; see :mod:`.docker`."""
    c.JupyterHub.hub_connect_ip = s.hub_ip  # the network's gateway (the hub listens there)
    c.JupyterHub.spawner_class = ClassDockerSpawner
    c.ClassDockerSpawner.settings_path = str(settings_path)
    c.DockerSpawner.image = s.image
    c.DockerSpawner.pull_policy = "never"  # built here (docker/lab-image.sh), never pulled
    c.DockerSpawner.cmd = ["jupyterhub-singleuser"]  # through the image's lab-entry.sh
    c.DockerSpawner.network_name = s.network
    c.DockerSpawner.use_internal_ip = True  # the proxy reaches <container ip>:8888
    c.DockerSpawner.remove = True
    # Removed by the spawner's stop, not by the engine once the container exits (what
    # `remove` asks by default): when stop returns, the container is gone.
    host_config: dict[str, Any] = {"auto_remove": False}
    c.DockerSpawner.extra_create_kwargs = {"labels": {class_docker.LABEL: s.prefix}}
    if s.mem_limit_gb is not None:
        mem = int(s.mem_limit_gb * 2**30)
        c.DockerSpawner.mem_limit = mem
        host_config["memswap_limit"] = mem  # no swap beyond it
    if s.cpu_limit is not None:
        c.DockerSpawner.cpu_limit = s.cpu_limit
    c.DockerSpawner.extra_host_config = host_config
    c.DockerSpawner.environment = {
        "DELIVERYLAB_PROFILE": s.profile,
        "JUPYTERHUB_ACTIVITY_INTERVAL": str(s.activity_interval),
        **s.extra_env,
    }


def configure(c: Any, settings_path: str) -> None:
    """Fill JupyterHub's config ``c`` from the classroom's settings."""
    s = HubSettings.load(settings_path)
    state = Path(s.state)
    c.JupyterHub.ip = "127.0.0.1"
    c.JupyterHub.port = s.port
    c.JupyterHub.hub_ip = s.hub_ip  # docker: the class network's gateway, not 127.0.0.1
    c.JupyterHub.hub_port = s.hub_port
    c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
    c.JupyterHub.concurrent_spawn_limit = s.concurrent_spawn_limit
    c.JupyterHub.cleanup_servers = True  # the hub's shutdown stops (and sweeps) servers
    c.ConfigurableHTTPProxy.command = [s.chp]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{s.proxy_api_port}"
    c.ConfigurableHTTPProxy.pid_file = str(state / "jupyterhub-proxy.pid")

    c.JupyterHub.authenticator_class = WorkshopAuthenticator
    c.SharedPasswordAuthenticator.user_password = s.password if len(s.password) >= 8 else None
    c.WorkshopAuthenticator.student_passwords = dict(s.passwords)
    c.Authenticator.allowed_users = set(s.students) | set(s.instructors)

    if s.spawner == "docker":
        configure_docker(c, s, settings_path)
    else:
        c.JupyterHub.spawner_class = StudentSpawner
        c.StudentSpawner.settings_path = str(settings_path)
    c.Spawner.default_url = "/lab/tree/labs"
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 120

    board, board_roles, groups = dashboard.service_config(s, os.geteuid() == 0)
    c.JupyterHub.services = [{
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                    f"--timeout={s.cull_timeout}", f"--cull-every={s.cull_every}"],
        "environment": {SERVICE_MARK: s.state},  # the hub's owner stops it (hub.py)
    }, board]
    c.JupyterHub.load_roles = [{"name": "idle-culler", "scopes": CULLER_SCOPES,
                                "services": ["idle-culler"]}, *board_roles]
    c.JupyterHub.load_groups = groups
