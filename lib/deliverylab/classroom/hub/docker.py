"""``make classroom SPAWNER=docker``: the engine's side of a class whose students each get
a container of the lab image (DockerSpawner, configured in :mod:`.spawner`).

Why containers: the student's server, kernels, brokers and Spark driver all live in one
container with its own PID, mount and network namespaces and a memory and CPU limit
the engine enforces (cgroup v1 or v2). A student sees no other student's processes,
files or ports, and stopping the container ends everything they started, however it
detached. No container gets the engine's socket: the chapters' ``backend="auto"`` finds
no engine inside and runs its brokers as local JVMs, in the student's container.

What this module does, with the ``docker`` command (no ``jupyterhub`` import here):

* the class's network, ``<prefix>classroom``: a bridge with inter-container traffic
  off (a student's container reaches the host's hub and nothing else of the class) and
  ``internal`` (no route out: the image carries everything a chapter needs). The hub
  listens on that bridge's gateway address, the only address besides ``127.0.0.1``;
  the proxy, on the host, reaches each container at its address on the bridge;
* each student's folder: ``<home>/labs`` on the host (the course, copied once) is the
  container's ``/home/lab/course/labs``: work and results outlive the container (which
  is removed when the server stops), and the instructor's view reads them as on the
  local path (the contract in :mod:`deliverylab.classroom.hub`). Owned by the image's
  user (uid 1000), mode 0700;
* the sweep after a hub: every container and the network labelled with the class.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING

from ...cluster import docker as dk
from ...errors import LabError
from ...waiting import wait_until

if TYPE_CHECKING:
    from .settings import HubSettings

#: On every container and network of a class, valued with the class's prefix.
LABEL = "deliverylab.classroom"
#: The lab image's user (docker/lab.Dockerfile: ``useradd --uid 1000 lab``).
LAB_UID = 1000
#: Where the course sits in the image (its WORKDIR is the folder above).
COURSE_IN_IMAGE = "/home/lab/course/labs"
#: In each student's folder made by this module: :func:`remove_homes` deletes only those.
MARK = ".deliverylab-classroom"


def _docker(*args: str, timeout: float = 60.0, check: bool = True) -> str:
    try:
        return dk._docker(*args, timeout=timeout, check=check).stdout.decode().strip()
    except dk.DockerUnavailable as exc:
        raise LabError(str(exc)) from exc


def prepare(settings: HubSettings) -> None:
    """Before the hub starts: the engine answers, the image is there with the hub's
    JupyterHub version, what a crashed run of this class left is gone, the class network
    exists; ``settings.hub_ip`` becomes its gateway (saved by the caller)."""
    if not dk.engine_answers():
        raise LabError("spawner 'docker': no Docker engine answers (docker/engine.sh starts "
                       "one), or use --spawner local")
    if not dk.image_present(settings.image):
        raise LabError(f"spawner 'docker': image {settings.image} is not on the engine: "
                       "build it with docker/lab-image.sh (`make classroom SPAWNER=docker` "
                       "does)")
    check_versions(settings.image)
    remove_class(settings)
    _docker("network", "create", "--driver", "bridge", "--internal",
            "--opt", "com.docker.network.bridge.enable_icc=false",
            "--label", f"{LABEL}={settings.prefix}", settings.network)
    settings.hub_ip = gateway(settings.network)
    try:  # the hub will listen there: the host must hold the address
        with socket.socket() as probe:
            probe.bind((settings.hub_ip, 0))
    except OSError as exc:
        raise LabError(f"the host has no address {settings.hub_ip} on the class network "
                       f"{settings.network} ({exc}): Docker 25.0.0-25.0.3 gave internal "
                       "networks none; upgrade the engine") from exc


def check_versions(image: str) -> None:
    """The image's jupyterhub (its ``jupyterhub-singleuser``) is the hub's major.minor:
    the hub and the single-user server speak one protocol version."""
    try:
        hub = version("jupyterhub")
    except PackageNotFoundError as exc:
        raise LabError("jupyterhub is not installed: pip install -e '.[classroom]'") from exc
    inside = _docker("run", "--rm", "--network", "none", "--entrypoint", "python", image,
                     "-c", "from importlib.metadata import version; print(version('jupyterhub'))",
                     check=False, timeout=120)
    if not inside or inside.split(".")[:2] != hub.split(".")[:2]:
        raise LabError(f"image {image} has jupyterhub {inside or '(none)'}, the hub "
                       f"{hub}: rebuild the image (docker/lab-image.sh) from this checkout")


def gateway(network: str) -> str:
    """The host's address on ``network`` (where containers reach the hub)."""
    got = _docker("network", "inspect", "-f", "{{range .IPAM.Config}}{{.Gateway}} {{end}}",
                  network).split()
    if not got:
        raise LabError(f"docker network {network} has no gateway address")
    return got[0]


def ensure_home(settings: HubSettings, student: str) -> Path:
    """The student's folder on the host with the course in ``labs/`` (copied once, so
    their work survives a restart of the server), owned by the image's user."""
    home = settings.home(student)
    if home.exists() and not (home / MARK).exists():
        raise LabError(f"{home} exists but was not made by the classroom (no {MARK} in "
                       f"it): choose another prefix than {settings.prefix!r} or homes")
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    (home / MARK).touch()
    labs = home / "labs"
    if not labs.exists():
        shutil.copytree(settings.labs, labs, ignore=shutil.ignore_patterns(
            "results", ".ipynb_checkpoints", "__pycache__"))
    for path in [home, *home.rglob("*")]:
        os.chown(path, LAB_UID, LAB_UID, follow_symlinks=False)
    home.chmod(0o700)
    return home


def remove_homes(settings: HubSettings) -> list[str]:
    """Delete the students' folders this module made; the paths removed."""
    gone = []
    for student in settings.students:
        home = settings.home(student)
        if (home / MARK).exists():
            shutil.rmtree(home)
            gone.append(str(home))
    return gone


def containers(settings: HubSettings) -> list[str]:
    """Names of the class's containers on the engine, running or not."""
    return _docker("ps", "-a", "--filter", f"label={LABEL}={settings.prefix}",
                   "--format", "{{.Names}}").split()


def networks(settings: HubSettings) -> list[str]:
    return _docker("network", "ls", "--filter", f"label={LABEL}={settings.prefix}",
                   "--format", "{{.Name}}").split()


def remove_class(settings: HubSettings) -> list[str]:
    """Remove every container and network of the class (what a hub's own shutdown did
    not); returns their names."""
    if not dk.engine_answers():
        return []
    left = containers(settings)
    if left:  # one the engine is removing already makes `rm` fail: it is waited for below
        _docker("rm", "-f", "-v", *left, timeout=120, check=False)
    wait_until("the class's containers to be gone after `docker rm -f`",
               lambda: not containers(settings), 60, interval=0.5,
               explain=lambda: f"; still there: {containers(settings)}")
    nets = networks(settings)
    for net in nets:
        _docker("network", "rm", net)
    return left + nets


def inspect(container: str) -> dict:
    """``docker inspect`` of one container."""
    return json.loads(_docker("inspect", container))[0]


def peak_memory(container_id: str) -> int | None:
    """The container's peak memory in bytes (page cache included), from its cgroup:
    ``memory.max_usage_in_bytes`` (v1, cgroupfs driver) or ``memory.peak`` (v2, kernel
    5.19+); None where neither is found."""
    root = Path("/sys/fs/cgroup")
    for path in (root / "memory" / "docker" / container_id / "memory.max_usage_in_bytes",
                 root / "system.slice" / f"docker-{container_id}.scope" / "memory.peak",
                 root / "docker" / container_id / "memory.peak"):
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            continue
    return None
