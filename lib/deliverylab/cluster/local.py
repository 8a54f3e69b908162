"""Local backend: each KRaft node is a JVM process on this machine.

The default backend, because it needs nothing but a JDK: no Docker, no admin rights.
It only knows processes (launch, signal, exit codes, logs); what a *cluster* is —
readiness, leaders, topics, faults — lives in :mod:`deliverylab.cluster.cluster`, shared
with the other backends.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import IO

import psutil

from ..errors import BrokerExited, LabError
from ..process.children import tail
from ..runtime import classpaths, jars
from ..runtime.java import find_java, temp_opts
from ..runtime.profile import current as current_profile
from ..waiting import verdict_within
from .properties import ClusterSpec, NodePorts, new_kafka_id, render, server_properties

# Small heaps: three brokers must fit a laptop beside Spark and JupyterLab. SerialGC has
# the smallest footprint and is plenty for a teaching cluster's load.
BROKER_JVM_OPTS = [
    "-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:MaxDirectMemorySize=128m",
    "-XX:ReservedCodeCacheSize=64m", "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true", "-Dlog4j2.disable.jmx=true",
]
# A controller-only node holds a few kilobytes of metadata and serves a handful of
# brokers: a quarter of a broker's heap, and a smaller code cache.
CONTROLLER_JVM_OPTS = [
    "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-XX:MaxDirectMemorySize=32m",
    "-XX:ReservedCodeCacheSize=32m", "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true", "-Dlog4j2.disable.jmx=true",
]
# TieredStopAtLevel=1, the C1 compiler only, for every broker and controller (local JVMs
# and containers, DockerBackend adds it too). At start-up three JVMs on two cores spend
# much of their CPU in C2 compiling; with C1 only a local 3-broker cluster is ready ~1.4 s
# sooner and each broker holds ~30 MB less (bench/cluster_start.py); a container cluster's
# whole life (start, 3,000 writes, stop) took 11.7-12.3 CPU-s against 17.8-18.0 and was
# ready in 6.5-7.3 s against 9.1-9.9 (2 cores, alternating runs). The price is peak
# broker throughput, which a Python client loop does not reach (bench/proxy_overhead.py
# prints the direct rate); jvm_opts=["-XX:TieredStopAtLevel=4"] brings C2 back.
C1_ONLY = ["-XX:TieredStopAtLevel=1"]
# A voter that knows no leader waits a random 1-2 election timeouts before it stands: at
# every start that is a second of nobody leading. 500 ms (Kafka's default is 1000) halves
# it; noticing a dead leader is controller.quorum.fetch.timeout.ms (2 s), unchanged.
# Local JVMs only (an override wins): DockerBackend writes server_properties() without it.
QUORUM_TIMING = {"controller.quorum.election.timeout.ms": "500"}
# The storage formatter runs once and exits: optimise for start-up, not throughput.
TOOL_JVM_OPTS = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto"]

SIGNALS = {"kill": signal.SIGKILL, "term": signal.SIGTERM,
           "pause": signal.SIGSTOP, "resume": signal.SIGCONT,
           "dump": signal.SIGQUIT}  # the JVM prints its threads' stacks and runs on


def class_archive(kafka_version: str = jars.KAFKA_VERSION) -> Path:
    """Where the broker's class-data-sharing archive lives (made by ``make setup``).

    Three broker JVMs loading ~10,000 classes each on two cores is most of a cluster's
    start-up; mapping them from an archive cuts the time to ready by about a third.
    """
    return jars.cache_dir() / f"kafka-{kafka_version}" / "broker.jsa"


class LocalBackend:
    """Runs, signals and watches broker JVMs; one instance per cluster."""

    name = "local"

    def __init__(self, workdir: Path, kafka_version: str = jars.KAFKA_VERSION,
                 jvm_opts: list[str] | None = None) -> None:
        self.workdir = workdir
        self.java = find_java()
        self.libs = classpaths.kafka_libs(kafka_version)
        archive = class_archive(kafka_version)
        # -Xshare:auto (the default) falls back silently if the archive does not fit.
        shared = [f"-XX:SharedArchiveFile={archive}"] if archive.exists() else []
        # The student profile's caps next ($DELIVERYLAB_PROFILE, runtime/profile.py),
        # the caller's options last: the JVM takes the last of a repeated flag.
        profile = current_profile()
        # Temporary files in the cluster's workdir, removed with it (runtime/java.py).
        tmp = temp_opts(workdir / "tmp")
        self.broker_opts = [*BROKER_JVM_OPTS, *C1_ONLY, *tmp, *shared,
                            *profile.broker_opts, *(jvm_opts or [])]
        self.controller_opts = [*CONTROLLER_JVM_OPTS, *C1_ONLY, *tmp, *shared,
                                *profile.controller_opts, *(jvm_opts or [])]
        self.spec: ClusterSpec | None = None
        self.tool_opts = [*TOOL_JVM_OPTS, *tmp, *shared]
        self.procs: dict[int, subprocess.Popen] = {}
        self.on_launch = lambda pid: None  # set by the Cluster: tells the reaper

    def node_dir(self, node_id: int) -> Path:
        return self.workdir / f"node-{node_id}"

    def log_path(self, node_id: int) -> Path:
        return self.node_dir(node_id) / "broker.log"

    def partition_dir(self, node_id: int, name: str) -> Path:
        """A partition's folder (``topic-N``) in the node's data directory, read in place."""
        return self.node_dir(node_id) / "data" / name

    def _classpath(self) -> str:
        return f"{self.libs}/*"

    def prepare(self, spec: ClusterSpec) -> None:
        """Write each node's properties and give it formatted storage.

        Kafka's storage tool is a JVM start (about a CPU-second each, three or four of
        them per cluster on two cores), and what it writes depends only on the node's
        shape, not on this cluster: ``meta.properties`` (cluster.id, node.id,
        directory.id, version) and ``bootstrap.checkpoint`` (the feature levels). So each
        shape is formatted once, by the tool itself, into a cache (:func:`storage_cache`)
        and copied; the copy gets this cluster's id and a fresh directory id, the two
        values the tool would have chosen differently. Overrides that move the log
        directories fall back to formatting every node (all in parallel).
        """
        self.spec = spec
        formatters = []
        for node in spec.all_nodes:
            ndir = self.node_dir(node.node_id)
            ndir.mkdir(parents=True, exist_ok=True)
            props = {**QUORUM_TIMING, **server_properties(spec, node, str(ndir / "data"))}
            (ndir / "server.properties").write_text(render(props))
            if (ndir / "data" / "meta.properties").exists():
                continue  # already formatted (a kept data_dir): as --ignore-formatted
            template = self._template(spec, node)
            if template is not None and template.exists():
                copy_storage(template, ndir / "data", spec.cluster_id)
                continue
            if template is not None:  # first start of this shape: format it into the cache
                work = template.parent / f".{template.name}-{uuid.uuid4().hex[:8]}"
                work.mkdir(parents=True)
                props = server_properties(spec, node, str(work / "data"))
                (work / "server.properties").write_text(render(props))
                formatters.append((node, ndir, template, work, self._format(
                    spec, work / "server.properties", ndir / "format.log")))
            else:
                formatters.append((node, ndir, None, None, self._format(
                    spec, ndir / "server.properties", ndir / "format.log")))
        for node, ndir, template, work, (out, proc) in formatters:
            code = proc.wait(timeout=120)
            out.close()
            if code != 0:
                log = ndir / "format.log"
                if work is not None:
                    shutil.rmtree(work, ignore_errors=True)
                raise BrokerExited(f"formatting the storage of node {node.node_id} failed "
                                   f"(exit code {code})", log=log, log_tail=tail(log))
            if template is not None:
                try:
                    os.rename(work / "data", template)  # atomic: never a half template
                except OSError:  # another process cached the same shape first...
                    if not template.exists():  # ...or a real failure (disk, rights)
                        raise
                shutil.rmtree(work, ignore_errors=True)
                copy_storage(template, ndir / "data", spec.cluster_id)

    def _format(self, spec: ClusterSpec, properties: Path,
                log: Path) -> tuple[IO[str], subprocess.Popen]:
        """Start Kafka's storage tool on one properties file (the caller waits)."""
        out = open(log, "w")  # noqa: SIM115 - the caller closes it
        return out, subprocess.Popen(
            [self.java, *self.tool_opts, "-cp", self._classpath(),
             f"-Dlog4j2.configurationFile={jars.log4j_config()}",
             "kafka.tools.StorageTool", "format", "-t", spec.cluster_id,
             "-c", str(properties), "--ignore-formatted"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def _template(self, spec: ClusterSpec, node: NodePorts) -> Path | None:
        """Where this node's formatted storage is cached, or None to format in place.

        The key holds everything the tool's output depends on: the Kafka jars (names and
        times: a KAFKA_HOME unpacked anew is another build), the node's id and roles, and
        the overrides (a feature flag changes the checkpoint).
        Ports do not matter: a static voter list is not written to storage.
        """
        if MOVES_STORAGE & set(spec.overrides):
            return None
        build = sorted((j.name, j.stat().st_mtime_ns) for j in self.libs.glob("kafka*.jar"))
        key = json.dumps([str(self.libs), build, node.node_id, spec.roles(node.node_id),
                          sorted(spec.overrides.items())])
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return storage_cache() / f"node-{node.node_id}-{digest}"

    def launch(self, node_id: int) -> None:
        ndir = self.node_dir(node_id)
        log = open(self.log_path(node_id), "a")  # noqa: SIM115 - the child keeps it
        log.write(f"\n===== deliverylab: starting node {node_id} at {time.ctime()} =====\n")
        log.flush()
        controller_only = self.spec is not None and self.spec.roles(node_id) == "controller"
        opts = self.controller_opts if controller_only else self.broker_opts
        proc = subprocess.Popen(
            [self.java, *opts, f"-Dlog4j2.configurationFile={jars.log4j_config()}",
             "-cp", self._classpath(), "kafka.Kafka", str(ndir / "server.properties")],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the notebook must not reach the brokers
        )
        log.close()
        self.procs[node_id] = proc
        self.on_launch(proc.pid)

    def pid(self, node_id: int) -> int | None:
        proc = self.procs.get(node_id)
        return proc.pid if proc is not None else None

    def signal(self, node_id: int, action: str) -> None:
        proc = self.procs.get(node_id)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, SIGNALS[action])
        except ProcessLookupError:
            pass

    def wait_stopped(self, node_id: int, stopped: bool, timeout: float = 5.0) -> bool:
        """Wait until the kernel reports the process (all its threads) stopped or running.

        SIGSTOP is delivered asynchronously; a JVM with dozens of threads takes a moment,
        and a fault is only "applied" once the broker really stands still.
        """
        proc = self.procs.get(node_id)
        if proc is None:
            return False

        def settled() -> tuple[bool] | None:
            try:
                state = psutil.Process(proc.pid).status()
            except psutil.NoSuchProcess:
                return (False,)
            return (True,) if (state == psutil.STATUS_STOPPED) == stopped else None

        return verdict_within(f"node {node_id} {'stopped' if stopped else 'running'}",
                              settled, timeout, interval=0.02)

    def exit_code(self, node_id: int) -> int | None:
        """None while the process exists (running or paused)."""
        proc = self.procs.get(node_id)
        return None if proc is None else proc.poll()

    def wait_exit(self, node_id: int, timeout: float) -> bool:
        proc = self.procs.get(node_id)
        if proc is None:
            return True
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self) -> None:
        for node_id in list(self.procs):
            self.signal(node_id, "kill")
        for node_id in list(self.procs):
            self.wait_exit(node_id, 10)
        self.procs.clear()


#: Overrides that change where or how many log directories a node has: formatted in place.
MOVES_STORAGE = {"log.dirs", "log.dir", "metadata.log.dir"}


#: A cached storage shape not used for this long is removed (:func:`prune_storage`).
STORAGE_MAX_AGE_S = 7 * 86400
_pruned: set[Path] = set()  # caches this process has pruned already


def storage_cache() -> Path:
    """Formatted storage per node shape (see :meth:`LocalBackend.prepare`).

    The first call in a process prunes it (:func:`prune_storage`): entries are keyed by
    a digest of the shape, so every override, node count or Kafka build tried adds one,
    and nothing else would ever remove them."""
    root = jars.cache_dir() / "storage"
    if not os.access(root if root.exists() else root.parent, os.W_OK):
        # A classroom's shared cache is read only for students: each formats into
        # their own (the hub's students each have a home; see classroom/hub/).
        root = Path.home() / ".cache" / "deliverylab-storage"
    if root not in _pruned:
        _pruned.add(root)
        prune_storage(root)
    return root


def prune_storage(root: Path, max_age_s: float = STORAGE_MAX_AGE_S,
                  now: float | None = None) -> list[Path]:
    """Remove the cache entries not used for ``max_age_s`` (by modification time:
    :func:`copy_storage` touches the entry it copies), and leftovers of a formatter or
    a prune that died. Returns the entries removed.

    Safe beside other processes: an entry is renamed away first (atomically) and then
    deleted, so another process sees it whole or not at all (and then formats the shape
    anew); an entry in use was touched seconds ago, not a week.
    """
    if not root.is_dir():
        return []
    now = time.time() if now is None else now
    gone = []
    for entry in root.iterdir():
        try:
            stale = (entry.name.startswith(".prune-")
                     or now - entry.stat().st_mtime >= max_age_s)
        except FileNotFoundError:
            continue  # another process pruned it meanwhile
        if not stale:
            continue
        trash = root / f".prune-{entry.name.removeprefix('.prune-')}-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(entry, trash)
        except OSError:
            continue  # another process took it first
        shutil.rmtree(trash, ignore_errors=True)
        gone.append(entry)
    return gone


def copy_storage(template: Path, data: Path, cluster_id: str) -> None:
    """Copy formatted storage into ``data``, as this cluster's: ``cluster.id`` set, a
    fresh ``directory.id``, everything else (node.id, version, the bootstrap
    checkpoint) as the storage tool wrote it. The cached ``template`` is touched: it
    was used now, so :func:`prune_storage` keeps it."""
    try:
        os.utime(template)
        shutil.copytree(template, data)
    except (FileNotFoundError, shutil.Error) as exc:  # shutil.Error: files gone mid-copy
        if template.exists():
            raise
        shutil.rmtree(data, ignore_errors=True)  # half a copy is no storage
        raise LabError(f"the cached storage {template} was removed while this cluster "
                       "was copying it (another process pruned the cache): start the "
                       "cluster again") from exc
    meta = data / "meta.properties"
    lines = []
    for line in meta.read_text().splitlines():
        if line.startswith("cluster.id="):
            line = f"cluster.id={cluster_id}"
        elif line.startswith("directory.id="):
            line = f"directory.id={new_kafka_id()}"
        lines.append(line)
    meta.write_text("\n".join(lines) + "\n")
