"""Docker backend: each KRaft node is a container, driven through the ``docker`` CLI.

Why containers at all, when the local backend needs only a JDK: a container can be cut
off the network for real (``docker network disconnect``), which no signal to a local
process can do, and classrooms that already run Docker get brokers that cannot collide
with anything on the laptop. Why the CLI rather than the engine's HTTP API: the CLI
honours whatever the student's machine uses (Docker Desktop contexts, colima,
``DOCKER_HOST``) and needs no extra Python package.

Like :class:`~deliverylab.cluster.local.LocalBackend` this only runs things (create,
start, signal, inspect, logs); the cluster's meaning stays in ``Cluster``. The brokers
run the configuration :mod:`.properties` generates for the local backend, with three
differences that only a container needs: listeners bind ``0.0.0.0``, the INTERNAL and
CONTROLLER listeners are reached by the container's alias ``kafka-N``, and the CLIENT
port is published on the host's ``127.0.0.1`` only under the same number, so the
advertised ``127.0.0.1:<port>`` (or a fault proxy's port) works from the host as it
does with local brokers.

Two networks per cluster, so a partition cuts what it should:

* ``<project>-peers`` (internal, no way out): replication and the KRaft quorum;
* ``<project>-clients``: only carries the published client ports.

:meth:`DockerBackend.partition` disconnects a node from *peers*: it loses its followers
and the quorum while clients can still reach it — the classic isolated leader.

Every object is named ``<project>-…`` where the project is ``deliverylab-<pid>-<random>``
and labelled ``deliverylab.project``, so two notebooks, or two students on one engine,
never collide; :func:`leftovers` finds them by label.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
import time
import uuid
from dataclasses import replace
from pathlib import Path

from ..errors import BrokerExited, LabError, PortTaken
from ..process import lablog
from ..runtime import jars
from ..waiting import verdict_within
from .local import BROKER_JVM_OPTS, C1_ONLY, CONTROLLER_JVM_OPTS, TOOL_JVM_OPTS
from .properties import ClusterSpec, NodePorts, render, server_properties

IMAGE_ENV = "DELIVERYLAB_KAFKA_IMAGE"
SUFFIX_ENV = "DELIVERYLAB_IMAGE_SUFFIX"
LABEL = "deliverylab.project"
CONF_DIR = "/etc/deliverylab"
DATA_DIR = "/tmp/kafka-data"  # writable for the image's user in every image we run
# What every broker container runs, the lab's image and apache/kafka alike. Kept here
# (not in the image) so the brokers run the configuration the lab generates, not one an
# image assembles from environment variables. Storage is formatted on first start only,
# so `docker start` after a kill is a restart with the node's data intact, as with the
# local backend.
# (CONF below is CONF_DIR: DockerBackend copies the files there before the start.)
ENTRY_SCRIPT = """#!/bin/sh
# Written by deliverylab.cluster.docker: format the storage once, then run the broker.
set -eu
CONF=/etc/deliverylab
PROPS="$CONF/server.properties"
DATA="$(sed -n 's/^log\\.dirs=//p' "$PROPS")"
CP="/opt/kafka/libs/*"
LOG4J="-Dlog4j2.configurationFile=$CONF/log4j2.properties"
CDS=""  # the lab's image records a class archive at build time; apache/kafka has none
[ -f /opt/kafka/broker.jsa ] && CDS="-XX:SharedArchiveFile=/opt/kafka/broker.jsa"
if [ ! -f "$DATA/meta.properties" ]; then
    java ${DELIVERYLAB_TOOL_OPTS:-} $CDS "$LOG4J" -cp "$CP" kafka.tools.StorageTool format \\
        -t "$(cat "$CONF/cluster.id")" -c "$PROPS" --ignore-formatted
fi
exec java ${DELIVERYLAB_BROKER_OPTS:-} $CDS "$LOG4J" -cp "$CP" kafka.Kafka "$PROPS"
"""
# Brokers re-resolve peers quickly, so a healed partition (new IP) is seen at once.
#: ``docker pause`` failures ("unable to freeze") before a broker is stopped by SIGSTOP.
PAUSE_TRIES = 3
_log = lablog.logger(__name__)

CONTAINER_JVM_OPTS = ["-Dsun.net.inetaddr.ttl=1", "-Dsun.net.inetaddr.negative.ttl=0"]


class DockerUnavailable(LabError):
    """No Docker engine answers, or the broker image is not there."""


def default_image(kafka_version: str = jars.KAFKA_VERSION) -> str:
    """``$DELIVERYLAB_KAFKA_IMAGE``, else the official image of the local backend's Kafka."""
    return os.environ.get(IMAGE_ENV) or f"apache/kafka:{kafka_version}"


def built_image(kafka_version: str = jars.KAFKA_VERSION) -> str:
    """The image ``docker/broker-image.sh`` builds when no registry is reachable (its tag
    ends in ``$DELIVERYLAB_IMAGE_SUFFIX``: a CI run builds and removes its own)."""
    return f"deliverylab/kafka:{kafka_version}{os.environ.get(SUFFIX_ENV, '')}"


def resolve_image(kafka_version: str = jars.KAFKA_VERSION) -> str:
    """The image to run: the variable if set, else apache/kafka if pulled, else the lab's
    own build if there is one (so an offline classroom needs no variable), else
    apache/kafka (whose absence the error then names)."""
    if os.environ.get(IMAGE_ENV):
        return os.environ[IMAGE_ENV]
    official = default_image(kafka_version)
    if not image_present(official) and image_present(built_image(kafka_version)):
        return built_image(kafka_version)
    return official


def docker_cli() -> str:
    path = shutil.which("docker")
    if path is None:
        raise DockerUnavailable(
            "the docker command is not installed: install Docker (Docker Desktop, colima, "
            "or `apt-get install docker.io`), or use backend='local'")
    return path


def _docker(*args: str, timeout: float = 60.0, check: bool = True,
            stdin: bytes | None = None) -> subprocess.CompletedProcess:
    try:
        # Never the notebook's stdin: an empty input when there is nothing to send.
        proc = subprocess.run([docker_cli(), *args], capture_output=True, timeout=timeout,
                              input=stdin if stdin is not None else b"")
    except subprocess.TimeoutExpired as exc:
        raise DockerUnavailable(f"`docker {' '.join(args[:2])}` did not answer within "
                                f"{timeout:.0f}s: is the engine overloaded or stuck?") from exc
    if check and proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise DockerUnavailable(f"`docker {' '.join(args[:2])}` failed: "
                                f"{err[-1] if err else 'exit ' + str(proc.returncode)}")
    return proc


def engine_answers(timeout: float = 10.0) -> bool:
    """True when a Docker engine answers (what ``backend="auto"`` asks first)."""
    if shutil.which("docker") is None:
        return False
    try:
        return _docker("version", "-f", "{{.Server.Version}}", timeout=timeout,
                       check=False).returncode == 0
    except DockerUnavailable:
        return False


def image_present(image: str) -> bool:
    return _docker("image", "inspect", image, check=False).returncode == 0


def usable(kafka_version: str = jars.KAFKA_VERSION) -> bool:
    """Engine answers *and* the broker image is there: ``auto`` never pulls in class."""
    return choose("auto", kafka_version)[0] == "docker"


def choose(backend: str, kafka_version: str = jars.KAFKA_VERSION) -> tuple[str, str]:
    """The backend ``backend`` resolves to, and the one line that says why.

    ``"auto"`` takes containers when an engine answers and the broker image is already
    there (it never pulls: a class of thirty must not download at once), else local JVM
    processes. The reason is what a chapter prints, so a student who expected
    containers learns what was missing.
    """
    if backend == "local":
        return "local", "backend='local' asked for → local JVM processes"
    if backend == "docker":
        return "docker", "backend='docker' asked for → containers"
    if shutil.which("docker") is None:
        return "local", "no docker command on this machine → local JVM processes"
    if not engine_answers():
        return "local", ("the docker command is here but no Docker engine answers "
                         "→ local JVM processes")
    image = resolve_image(kafka_version)
    if not image_present(image):
        return "local", (f"Docker engine found, image {image} absent (docker/broker-image.sh "
                         "builds one) → local JVM processes")
    return "docker", f"Docker engine found, image {image} present → containers"


def leftovers(project: str | None = None) -> list[str]:
    """Names of lab containers and networks still on the engine (one project, or any)."""
    flt = f"label={LABEL}" + (f"={project}" if project else "")
    names = _docker("ps", "-a", "--filter", flt, "--format", "{{.Names}}").stdout.split()
    names += _docker("network", "ls", "--filter", flt, "--format", "{{.Name}}").stdout.split()
    return [n.decode() for n in names]


class DockerBackend:
    """Creates, starts, signals and watches broker containers; one per cluster."""

    name = "docker"

    def __init__(self, workdir: Path, kafka_version: str = jars.KAFKA_VERSION,
                 jvm_opts: list[str] | None = None, image: str | None = None) -> None:
        self.workdir = workdir
        self.docker = docker_cli()
        if not engine_answers():
            raise DockerUnavailable(
                "no Docker engine answers: start Docker Desktop or colima (Linux: "
                "`docker/engine.sh`), or use backend='local'")
        self.image = image or resolve_image(kafka_version)
        if not image_present(self.image):
            raise DockerUnavailable(
                f"the broker image {self.image} is not on this engine: `docker pull "
                f"{self.image}`, or with no registry build one with `docker/broker-image.sh` "
                f"and set {IMAGE_ENV} to the name it prints")
        self.project = f"deliverylab-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.peers = f"{self.project}-peers"
        self.clients = f"{self.project}-clients"
        self.broker_opts = " ".join([*BROKER_JVM_OPTS, *C1_ONLY, *CONTAINER_JVM_OPTS,
                                     *(jvm_opts or [])])
        self.controller_opts = " ".join([*CONTROLLER_JVM_OPTS, *C1_ONLY, *CONTAINER_JVM_OPTS,
                                         *(jvm_opts or [])])
        self.tool_opts = " ".join(TOOL_JVM_OPTS)
        self.containers: dict[int, str] = {}
        self.partitioned: set[int] = set()
        #: Nodes paused by SIGSTOP, not the freezer (see :meth:`_pause`).
        self.signal_stopped: set[int] = set()
        self._created_networks: list[str] = []
        self._states: dict[int, dict] = {}
        self._states_at = 0.0
        self.on_launch = lambda pid: None  # the local backend's hook; containers need none
        self.tell_reaper = lambda line: None  # set by the Cluster

    # ---------------------------------------------------------------- naming
    def container(self, node_id: int) -> str:
        return f"{self.project}-kafka-{node_id}"

    @staticmethod
    def alias(node_id: int) -> str:
        return f"kafka-{node_id}"

    def node_dir(self, node_id: int) -> Path:
        return self.workdir / f"node-{node_id}"

    def container_node(self, node: NodePorts) -> NodePorts:
        """The node as its container sees itself: bind everything, peers by alias."""
        return replace(node, bind_host="0.0.0.0", internal_host=self.alias(node.node_id))

    # ----------------------------------------------------------------- set-up
    def prepare(self, spec: ClusterSpec) -> None:
        """Create the networks and one container per node (not started yet).

        The reaper learns the clean-up commands *before* anything exists, so a kernel
        killed half-way through still leaves nothing behind.
        """
        names = [self.container(n.node_id) for n in spec.all_nodes]
        self.tell_reaper("exec " + json.dumps([self.docker, "rm", "-f", "-v", *names]))
        self.tell_reaper("exec " + json.dumps(
            [self.docker, "network", "rm", self.peers, self.clients]))
        labels = ["--label", f"{LABEL}={self.project}"]
        for net, internal in ((self.peers, ["--internal"]), (self.clients, [])):
            try:
                _docker("network", "create", *internal, *labels, net)
            except DockerUnavailable as exc:
                if "address pool" not in str(exc):
                    raise
                raise DockerUnavailable(
                    f"{exc} - each docker cluster uses 2 networks and the engine's default "
                    "pools hold about 30: stop other clusters (`docker network prune`) or "
                    "widen default-address-pools in the engine's daemon.json") from exc
            self._created_networks.append(net)
        cluster_spec = replace(spec, nodes=tuple(self.container_node(n) for n in spec.nodes),
                               controllers=tuple(self.container_node(n)
                                                 for n in spec.controllers))
        for node in cluster_spec.all_nodes:
            self._create(cluster_spec, node, labels)

    def _create(self, spec: ClusterSpec, node: NodePorts, labels: list[str]) -> None:
        name = self.container(node.node_id)
        ndir = self.node_dir(node.node_id)
        ndir.mkdir(parents=True, exist_ok=True)
        props = render(server_properties(spec, node, DATA_DIR))
        (ndir / "server.properties").write_text(props)
        roles = spec.roles(node.node_id)
        # Published on the host's 127.0.0.1: the client ports (brokers), and the
        # CONTROLLER port of voters, which Cluster.quorum() asks who leads.
        ports = [p for p, on in ((node.client, "broker" in roles), (node.direct, "broker" in roles),
                                 (node.controller, "controller" in roles)) if on and p]
        opts = self.broker_opts if "broker" in roles else self.controller_opts
        # No --hostname kafka-N: the engine would resolve it on *every* network, and a
        # partitioned node could still reach its peers through the clients network.
        _docker("create", "--name", name, *labels, "--network", self.clients,
                *[a for p in ports for a in ("--publish", f"127.0.0.1:{p}:{p}")],
                "--env", f"DELIVERYLAB_BROKER_OPTS={opts}",
                "--env", f"DELIVERYLAB_TOOL_OPTS={self.tool_opts}",
                "--entrypoint", "sh", self.image, f"{CONF_DIR}/broker-entry.sh")
        self.containers[node.node_id] = name
        _docker("network", "connect", "--alias", self.alias(node.node_id), self.peers, name)
        # Copied in, not bind-mounted: works with remote engines and Docker Desktop alike.
        files = {"server.properties": props.encode(),
                 "cluster.id": spec.cluster_id.encode(),
                 "log4j2.properties": jars.log4j_config().read_bytes(),
                 "broker-entry.sh": ENTRY_SCRIPT.encode()}
        _docker("cp", "-", f"{name}:/etc", stdin=_tar("deliverylab", files))

    # -------------------------------------------------------------- processes
    def launch(self, node_id: int) -> None:
        name = self.containers[node_id]
        self.signal_stopped.discard(node_id)
        proc = _docker("start", name, check=False)
        self._states_at = 0.0
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()
            if "address already in use" in err or "port is already allocated" in err:
                raise PortTaken(f"node {node_id} could not publish its client port (taken "
                                "by another process); start again to pick other ports")
            raise BrokerExited(f"node {node_id}: `docker start {name}` failed: "
                               f"{err.splitlines()[-1] if err else proc.returncode}")

    def _inspect(self, max_age: float = 0.2) -> dict[int, dict]:
        """State of every container in one ``docker inspect`` (cached briefly).

        Readiness polls the cluster's liveness every 250 ms; one CLI call for all nodes
        keeps that cheap.
        """
        if time.monotonic() - self._states_at < max_age:
            return self._states
        names = list(self.containers.values())
        if not names:
            return {}
        proc = _docker("inspect", "-f", "{{json .State}}", *names, check=False)
        lines = proc.stdout.decode().splitlines()
        by_name = dict(zip(names, lines, strict=False)) if proc.returncode == 0 else {}
        if proc.returncode != 0:  # some container is gone: ask one by one
            for name in names:
                one = _docker("inspect", "-f", "{{json .State}}", name, check=False)
                if one.returncode == 0:
                    by_name[name] = one.stdout.decode().strip()
        self._states = {node: json.loads(by_name[name]) if name in by_name else {}
                        for node, name in self.containers.items()}
        self._states_at = time.monotonic()
        return self._states

    def pid(self, node_id: int) -> int | None:
        """Host pid of the broker (the container's first process); None if not running."""
        state = self._inspect().get(node_id, {})
        return state.get("Pid") or None

    def signal(self, node_id: int, action: str) -> None:
        name = self.containers.get(node_id)
        state = self._inspect(0).get(node_id, {})
        if name is None or not state.get("Running"):
            return
        if action == "kill":
            _docker("kill", name, check=False)
        elif action == "term":
            _docker("kill", "--signal", "TERM", name, check=False)
        elif action == "dump":  # java is the container's first process (exec): it prints
            _docker("kill", "--signal", "QUIT", name, check=False)  # its threads' stacks
        elif action == "pause" and not state.get("Paused") and node_id not in self.signal_stopped:
            self._pause(node_id, name)
        elif action == "resume" and node_id in self.signal_stopped:
            _docker("kill", "--signal", "CONT", name)
            self.signal_stopped.discard(node_id)
        elif action == "resume" and state.get("Paused"):
            _docker("unpause", name)
        if action == "kill":
            self.signal_stopped.discard(node_id)
        self._states_at = 0.0

    def _pause(self, node_id: int, name: str) -> None:
        """``docker pause``: the cgroup freezer stops the whole container. On cgroup v1,
        runc's freezer retries a thousand times and then gives up ("unable to freeze")
        when a task does not freeze in time -- a loaded cold run's chapter 01 met it, and
        a pause that did not happen would teach a loss that did not happen. After
        :data:`PAUSE_TRIES` such failures the broker is stopped by SIGSTOP instead: java
        is the container's first process, and a SIGSTOP sent from outside its PID
        namespace reaches it (pid_namespaces(7)). Any other failure raises."""
        for _ in range(PAUSE_TRIES):
            proc = _docker("pause", name, check=False)
            if proc.returncode == 0:
                return
            err = proc.stderr.decode(errors="replace").strip()
            if "unable to freeze" not in err:
                raise DockerUnavailable(f"`docker pause {name}` failed: "
                                        f"{err.splitlines()[-1] if err else proc.returncode}")
        _log.warning("node %s: docker pause could not freeze it %d times; stopped by "
                     "SIGSTOP instead", node_id, PAUSE_TRIES)
        _docker("kill", "--signal", "STOP", name)
        self.signal_stopped.add(node_id)

    def _stopped_by_signal(self, name: str) -> bool:
        """Every process of the container stopped (``T``), as ``docker top`` lists them."""
        lines = _docker("top", name, "-o", "pid,stat", check=False).stdout.decode().splitlines()
        return len(lines) > 1 and all(ln.split()[1].startswith("T") for ln in lines[1:]
                                      if len(ln.split()) > 1)

    def wait_stopped(self, node_id: int, stopped: bool, timeout: float = 5.0) -> bool:
        """Wait until the container is frozen (``docker pause``, or its broker stopped by
        SIGSTOP: :meth:`_pause`) or thawed; False if it is not running or did not get
        there in time (the caller names the fault)."""
        name = self.containers.get(node_id, "")
        def settled() -> tuple[bool] | None:
            state = self._inspect(0).get(node_id, {})
            if not state.get("Running"):
                return (False,)
            if node_id in self.signal_stopped:  # not frozen: ask its processes
                return (True,) if self._stopped_by_signal(name) == stopped else None
            return (True,) if bool(state.get("Paused")) == stopped else None

        return verdict_within(f"container of node {node_id} "
                              f"{'paused' if stopped else 'resumed'}",
                              settled, timeout, interval=0.05)

    def exit_code(self, node_id: int) -> int | None:
        """None while the container runs (paused included) or was never started.

        Readiness asks this every 250 ms: a state up to 1 s old keeps the docker CLI
        from eating the CPU the starting brokers need; a crash is seen within a second."""
        state = self._inspect(1.0).get(node_id)
        if state is None or state.get("Running") or state.get("Status") == "created":
            return None
        if not state:  # removed behind our back
            return -1
        return int(state.get("ExitCode", -1))

    def wait_exit(self, node_id: int, timeout: float) -> bool:
        def exited() -> bool:
            return not self._inspect(0).get(node_id, {}).get("Running")

        # the bool is the answer: the caller kills it or goes on
        return verdict_within(f"container of node {node_id} to exit", exited, timeout,
                              interval=0.1)

    # ---------------------------------------------------------------- network
    def partition(self, node_id: int) -> None:
        """Cut a node off from the other nodes (replication and quorum); clients still
        reach it. A real partition: packets are dropped by the engine's network."""
        if node_id not in self.partitioned:
            _docker("network", "disconnect", self.peers, self.containers[node_id])
            self.partitioned.add(node_id)

    def heal_partition(self, node_id: int) -> None:
        if node_id in self.partitioned:
            _docker("network", "connect", "--alias", self.alias(node_id), self.peers,
                    self.containers[node_id])
            self.partitioned.discard(node_id)

    # ------------------------------------------------------------------- logs
    def log_path(self, node_id: int) -> Path:
        """The node's log, refreshed from ``docker logs`` (the broker logs to stdout)."""
        path = self.node_dir(node_id) / "broker.log"
        name = self.containers.get(node_id)
        if name is not None:
            proc = _docker("logs", name, check=False)
            if proc.returncode == 0:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(proc.stdout + proc.stderr)
        return path

    def partition_dir(self, node_id: int, name: str) -> Path:
        """A copy of a partition's folder (``topic-N``) taken out of the container now
        (``docker cp``): the segment files as the broker has written them so far."""
        dest = self.node_dir(node_id) / "copies"
        shutil.rmtree(dest / name, ignore_errors=True)
        dest.mkdir(parents=True, exist_ok=True)
        _docker("cp", f"{self.containers[node_id]}:{DATA_DIR}/{name}", str(dest), check=False)
        return dest / name

    def stats(self) -> dict[int, int]:
        """Memory each broker container uses now, in bytes (``docker stats``)."""
        proc = _docker("stats", "--no-stream", "--format", "{{.Name}} {{.MemUsage}}",
                       *self.containers.values())
        by_name = {v: k for k, v in self.containers.items()}
        out = {}
        for line in proc.stdout.decode().splitlines():
            name, usage = line.split(" ", 1)
            out[by_name[name]] = _bytes(usage.split("/")[0].strip())
        return out

    def close(self) -> None:
        """Keep the logs, then remove the containers and networks (nothing left behind)."""
        for node_id in list(self.containers):
            try:
                self.log_path(node_id)
            except (OSError, LabError):
                pass
        if self.containers:
            _docker("rm", "-f", "-v", *self.containers.values(), check=False)
        for net in reversed(self._created_networks):
            _docker("network", "rm", net, check=False)
        self.containers.clear()
        self._created_networks.clear()
        self.partitioned.clear()


def _tar(top: str, files: dict[str, bytes]) -> bytes:
    """A tar holding ``top/`` with ``files``, root-owned, world-readable (for docker cp)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(top)
        info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, int(time.time())
        tar.addfile(info)
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size, info.mode, info.mtime = len(data), 0o755, int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _bytes(text: str) -> int:
    """``"312.4MiB"`` -> bytes (the units ``docker stats`` prints)."""
    units = {"B": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "kB": 1000, "MB": 1000**2,
             "GB": 1000**3}
    for unit in sorted(units, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * units[unit])
    return int(float(text or 0))
