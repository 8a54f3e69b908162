"""``Connect``: a real Kafka Connect cluster (distributed mode) beside the brokers.

Chapter 07's source system is a plain file the notebook appends lines to; Kafka's own
``FileStreamSource`` connector (it declares exactly-once support, KIP-618) copies each
line into a topic. The workers are JVM processes from the pinned ``connect`` jars, on
127.0.0.1, each in a private directory, started by :mod:`deliverylab.process.children`
(their own reaper): they stop with the cluster, and with the Python process however it
dies.

Why this module wraps the REST API only "just enough": the lesson is in *when* records
and source offsets reach Kafka, so the calls a chapter needs are here (create, status,
offsets, restart, stop/resume, delete) with the two behaviours every caller would
otherwise trip on: a worker answers 409 during a rebalance (retried), and a paused
worker never answers (it is never asked).

Start it on a running cluster (it stops with the cluster)::

    connect = Connect(cluster, workers=2, exactly_once=True).start()
    connect.create("filesrc", file_source("/tmp/lines.txt", "lines"))
"""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psutil
import requests

from ..cluster import ready
from ..cluster.local import SIGNALS
from ..cluster.properties import ClusterSpec
from ..errors import LabError, TimedOut, bad_value
from ..process.children import Children, tail
from ..process.ports import free_ports
from ..runtime import classpaths, jars
from ..runtime.java import find_java, temp_opts
from ..waiting import wait_until


class Cluster(Protocol):
    """What Connect needs of the Kafka cluster it runs on (``cluster.Cluster``): named
    here so the cluster, below, never learns of Connect, above it. ``connects`` is the
    cluster's list of what it stops with itself; ``Connect.start`` adds itself there."""

    @property
    def workdir(self) -> Path: ...
    @property
    def direct_bootstrap_servers(self) -> str: ...
    @property
    def spec(self) -> ClusterSpec | None: ...
    @property
    def connects(self) -> list[Any]: ...

# Workers are small: one file connector, one task, a few thousand short records.
# SerialGC and a capped heap keep two workers beside three brokers and Spark; C1 only
# (as the brokers): measured with alternating runs on 2 cores, starting and stopping two
# workers took 6.3-9.2 CPU-s (median 8.0) against 10.1-13.0 (10.6) with C2, and they
# answered sooner (median 5.5 s against 6.2 s).
WORKER_JVM_OPTS = [
    "-Xms64m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
    "-XX:MaxDirectMemorySize=64m",
    "-XX:ReservedCodeCacheSize=64m", "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true", "-Dlog4j2.disable.jmx=true",
]
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
#: The broker's group.min.session.timeout.ms: a dead worker is noticed this late.
SESSION_TIMEOUT_MS = 6000
#: Texts a fenced Connect task writes to its worker's log. Connect rewraps an
#: InvalidProducerEpochException as "...before its producer transaction expired", so
#: that misleading text counts too (AbstractWorkerSourceTask.maybeWrapProducerSendException).
FENCED_TEXTS = ("ProducerFencedException", "InvalidProducerEpochException",
                "producer transaction expired", "has been fenced")
_GROUPS = itertools.count(1)


class ConnectError(LabError):
    """A Connect worker or REST call failed; the message names the worker's log."""

    def __init__(self, message: str, log: Path | None = None, log_tail: str = "") -> None:
        text = message + (f" (worker log: {log})" if log is not None else "")
        if log_tail:
            text += "\n--- last lines of the worker log ---\n" + log_tail
        RuntimeError.__init__(self, text)
        self.log, self.log_tail = log, log_tail


def worker_properties(bootstrap: str, group: str, port: int, exactly_once: bool,
                      offset_flush_ms: int, replication: int) -> dict[str, str]:
    """One worker's configuration (distributed mode), as a dict of properties.

    Why each non-default: ``service_load`` plugin discovery starts a worker in seconds
    instead of scanning every jar (~25 s); ``scheduled.rebalance.max.delay.ms=0`` hands
    a dead worker's task to the other at once instead of after 5 minutes; the session
    timeout is the broker's minimum, so a killed worker is noticed in 6 s; the REST
    listener and advertised address are 127.0.0.1 and distinct per worker (the worker
    id is that address); ``offset.flush.interval.ms`` is how often a task without
    exactly-once commits its source offsets -- large, so the window between "records
    in Kafka" and "offsets in Kafka" stays open until a chapter closes it.
    """
    props = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets",
        "status.storage.topic": f"{group}-status",
        "config.storage.replication.factor": replication,
        "offset.storage.replication.factor": replication,
        "status.storage.replication.factor": replication,
        "offset.storage.partitions": 1,
        "status.storage.partitions": 1,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "listeners": f"http://127.0.0.1:{port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": port,
        "plugin.discovery": "service_load",
        "scheduled.rebalance.max.delay.ms": 0,
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 2000,
        "offset.flush.interval.ms": offset_flush_ms,
        "exactly.once.source.support": "enabled" if exactly_once else "disabled",
    }
    return {k: str(v) for k, v in props.items()}


def file_source(path: str | Path, topic: str, exactly_once: str | None = None,
                boundary: str = "poll", interval_ms: int | None = None,
                batch_size: int = 100) -> dict[str, str]:
    """The configuration of Kafka's FileStreamSource connector reading ``path``.

    ``exactly_once``: None, ``"requested"`` or ``"required"`` (``required`` makes a
    worker without exactly-once support refuse the connector). ``boundary``: when a
    task with exactly-once support commits its transaction: ``"poll"`` (after every
    batch) or ``"interval"`` (every ``interval_ms``: records wait in an open
    transaction meanwhile). The producer's transaction timeout is set above the
    interval, or the broker would abort the transaction itself.
    """
    if exactly_once not in (None, "requested", "required"):
        raise bad_value("exactly_once", exactly_once, "None, 'requested' or 'required'")
    if boundary not in ("poll", "interval"):
        raise bad_value("boundary", boundary, "'poll' or 'interval'")
    if boundary == "interval" and (not isinstance(interval_ms, int) or interval_ms < 1000):
        raise bad_value("interval_ms", interval_ms,
                        "a whole number of milliseconds >= 1000 with boundary='interval'")
    conf = {"connector.class": FILE_SOURCE, "tasks.max": "1",
            "file": str(Path(path).resolve()), "topic": topic, "batch.size": str(batch_size)}
    if exactly_once is not None:
        conf["exactly.once.support"] = exactly_once
    if boundary != "poll":
        conf["transaction.boundary"] = boundary
        conf["transaction.boundary.interval.ms"] = str(interval_ms)
        conf["producer.override.transaction.timeout.ms"] = str(max(60_000, 3 * interval_ms))
    return conf


def render(props: dict[str, str]) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())


@dataclass
class Worker:
    """One Connect worker process: its number, REST port, folder and state."""

    index: int
    port: int
    dir: Path
    proc: subprocess.Popen | None = field(default=None, repr=False)
    state: str = "stopped"  # up / paused / dead / stopped
    start_seconds: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def worker_id(self) -> str:
        """What Connect calls this worker (``/status``'s ``worker_id``)."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.dir / "worker.log"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None


class Connect:
    """A Kafka Connect cluster of ``workers`` JVMs on one Kafka :class:`Cluster`.

    ``Connect(cluster, ...).start()`` starts it and hands it to the cluster, which
    stops it with itself. Each Connect cluster has its own ``group`` (and so its
    own config/offsets/status topics and transactional ids ``<group>-<connector>-<task>``),
    so a chapter can start a second one, with exactly-once on, beside the first.
    """

    def __init__(self, cluster: Cluster, workers: int = 2, exactly_once: bool = False,
                 offset_flush_ms: int = 600_000, group: str | None = None,
                 jvm_opts: list[str] | None = None, ready_timeout: float = 120.0) -> None:
        if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= 3:
            raise bad_value("workers", workers, "a whole number from 1 to 3")
        if not isinstance(exactly_once, bool):
            raise bad_value("exactly_once", exactly_once, "True or False")
        if not isinstance(offset_flush_ms, int) or offset_flush_ms < 100:
            raise bad_value("offset_flush_ms", offset_flush_ms, "a whole number >= 100")
        self.cluster = cluster
        self.exactly_once = exactly_once
        self.offset_flush_ms = offset_flush_ms
        self.group = group or f"connect-{'eos' if exactly_once else 'plain'}-{next(_GROUPS)}"
        self.jvm_opts = [*WORKER_JVM_OPTS, *(jvm_opts or [])]
        self.ready_timeout = ready_timeout
        self.dir = Path(cluster.workdir) / self.group
        self.workers = [Worker(i, port, self.dir / f"worker-{i}")
                        for i, port in enumerate(free_ports(workers), start=1)]
        self.start_seconds: float | None = None
        self.session = requests.Session()
        self.connectors: list[str] = []  # created here, in order
        self.children: Children | None = None  # the workers' processes and their reaper

    def __repr__(self) -> str:
        states = ", ".join(f"{w.index}:{w.state}" for w in self.workers)
        eos = "exactly-once" if self.exactly_once else "no exactly-once"
        return f"<Connect {self.group} ({eos}) [{states}]>"

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> Connect:
        """Launch every worker at once and wait until each answers ``GET /health``;
        the cluster stops them with itself (a failed start too: what it launched)."""
        t0 = time.monotonic()
        bootstrap = self.cluster.direct_bootstrap_servers  # raises unless it runs
        if self not in self.cluster.connects:
            self.cluster.connects.append(self)
        self._classpath = ":".join(str(p) for p in classpaths.classpath("connect"))
        if self.children is None:
            self.children = Children()
        for w in self.workers:
            w.dir.mkdir(parents=True, exist_ok=True)
            props = worker_properties(bootstrap, self.group,
                                      w.port, self.exactly_once, self.offset_flush_ms,
                                      self.cluster.spec.replication)
            (w.dir / "worker.properties").write_text(render(props))
        try:
            for w in self.workers:
                self._launch(w)
            deadline = ready.Deadline(self.ready_timeout)
            for w in self.workers:
                self._wait_healthy(w, deadline, t0)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _launch(self, w: Worker) -> None:
        with open(w.log_path, "a") as log:
            log.write(f"\n===== deliverylab: starting worker {w.index} at {time.ctime()} =====\n")
        w.proc = self.children.start(
            f"Connect worker {w.index}",
            [find_java(), *temp_opts(w.dir / "tmp"), *self.jvm_opts,
             f"-Dlog4j2.configurationFile={jars.log4j_config()}",
             f"-Dkafka.logs.dir={w.dir}", "-cp", self._classpath, MAIN_CLASS,
             str(w.dir / "worker.properties")], w.log_path, cwd=w.dir)
        w.state = "up"

    def _check(self, w: Worker) -> None:
        """Raise with the log tail if the worker's process has exited."""
        if w.proc is not None and w.proc.poll() is not None and w.state in ("up", "paused"):
            w.state = "dead"
            raise ConnectError(f"Connect worker {w.index} exited with code "
                               f"{w.proc.returncode}", log=w.log_path,
                               log_tail=tail(w.log_path, 25))

    def _wait_healthy(self, w: Worker, deadline: ready.Deadline | float,
                      t0: float | None = None) -> None:
        t0 = time.monotonic() if t0 is None else t0

        def healthy() -> bool:
            try:
                return self.session.get(f"{w.url}/health", timeout=2).status_code == 200
            except requests.RequestException:
                return False

        try:
            ready.wait_until(f"Connect worker {w.index} to answer GET /health "
                             f"(its log: {w.log_path})", healthy, deadline,
                             lambda: self._check(w), interval=0.3)
        except ready.ClusterNotReady as exc:
            raise ConnectError(str(exc), log=w.log_path, log_tail=tail(w.log_path, 15)
                               ) from None
        w.start_seconds = time.monotonic() - t0

    def stop(self) -> None:
        """Kill every worker (the cluster's data goes with the cluster anyway)."""
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                self._signal(w, "resume")
                self._signal(w, "kill")
                try:
                    w.proc.wait(10)
                except subprocess.TimeoutExpired:
                    pass
            w.state = "stopped"
        if self.children is not None:
            self.children.close()  # stops what is left, then lets the reaper go
            self.children = None
        self.session.close()

    # ------------------------------------------------------------------ workers
    def worker(self, index: int | str) -> Worker:
        """Worker by number (1..N) or by its Connect id ``127.0.0.1:<port>``."""
        for w in self.workers:
            if index in (w.index, w.worker_id):
                return w
        raise bad_value("worker", index, "a worker number from 1 to "
                        f"{len(self.workers)} or an id like {self.workers[0].worker_id!r}")

    def status_of(self, index: int) -> str:
        """``up``/``paused``/``dead``/``stopped`` (a worker that crashed shows ``dead``)."""
        w = self.worker(index)
        if w.state in ("up", "paused") and w.proc is not None and w.proc.poll() is not None:
            w.state = "dead"
        return w.state

    def _signal(self, w: Worker, action: str) -> None:
        if w.proc is None or w.proc.poll() is not None:
            return
        try:
            os.killpg(w.proc.pid, SIGNALS[action])
        except ProcessLookupError:
            pass

    def kill(self, index: int) -> str:
        """SIGKILL a worker: its task dies between writing records and committing offsets."""
        w = self.worker(index)
        self._signal(w, "resume")
        self._signal(w, "kill")
        if w.proc is not None:
            w.proc.wait(10)
        w.state = "dead"
        return f"killed worker {w.index} ({w.worker_id}, SIGKILL)"

    def terminate(self, index: int, timeout: float = 60.0) -> str:
        """SIGTERM a worker and wait for it to exit: a graceful stop, offsets committed."""
        w = self.worker(index)
        self._signal(w, "resume")
        self._signal(w, "term")
        if w.proc is not None:
            try:
                w.proc.wait(timeout)
            except subprocess.TimeoutExpired as exc:
                raise ConnectError(f"worker {w.index} did not stop within {timeout:g} s of "
                                   "SIGTERM", log=w.log_path) from exc
        w.state = "dead"
        return f"stopped worker {w.index} ({w.worker_id}, SIGTERM: graceful)"

    def pause(self, index: int) -> str:
        """SIGSTOP a worker: alive but silent; the group gives its task to another."""
        w = self.worker(index)
        if self.status_of(index) == "up":
            self._signal(w, "pause")
            _wait_process_state(w, stopped=True)
            w.state = "paused"
        return f"paused worker {w.index} ({w.worker_id}, SIGSTOP)"

    def resume(self, index: int) -> str:
        """SIGCONT a paused worker: it carries on as if no time had passed."""
        w = self.worker(index)
        if self.status_of(index) == "paused":
            self._signal(w, "resume")
            _wait_process_state(w, stopped=False)
            w.state = "up"
        return f"resumed worker {w.index} ({w.worker_id}, SIGCONT)"

    def restart(self, index: int, timeout: float = 90.0) -> str:
        """Start a dead or stopped worker again (a running one is stopped gracefully
        first) and wait until it answers ``/health``."""
        w = self.worker(index)
        if self.status_of(index) in ("up", "paused"):
            self.terminate(index)
        self._launch(w)
        self._wait_healthy(w, timeout)
        return f"restarted worker {w.index} in {w.start_seconds:.1f} s"

    def heal(self) -> list[str]:
        """Resume paused workers and restart dead ones; what was done, one line each."""
        did = [self.resume(w.index) for w in self.workers if self.status_of(w.index) == "paused"]
        did += [self.restart(w.index) for w in self.workers if self.status_of(w.index) == "dead"]
        return did

    def rss_mb(self) -> dict[int, float]:
        """Resident memory of each running worker JVM, in MB."""
        out = {}
        for w in self.workers:
            if w.proc is not None and w.proc.poll() is None:
                try:
                    out[w.index] = round(psutil.Process(w.proc.pid).memory_info().rss / 2**20, 1)
                except psutil.NoSuchProcess:
                    continue
        return out

    def log_path(self, index: int) -> Path:
        return self.worker(index).log_path

    def logs(self, index: int, lines: int = 40) -> str:
        """The last ``lines`` lines of a worker's log."""
        return tail(self.worker(index).log_path, lines)

    def log_text(self, index: int) -> str:
        try:
            return self.worker(index).log_path.read_text(errors="replace")
        except OSError:
            return ""

    def fenced_lines(self, index: int) -> list[str]:
        """The lines of a worker's log saying one of its tasks was fenced."""
        return [line for line in self.log_text(index).splitlines()
                if any(t in line for t in FENCED_TEXTS)]

    # --------------------------------------------------------------------- REST
    def rest(self, method: str, path: str, body: Any = None, worker: int | None = None,
             timeout: float = 60.0) -> Any:
        """One REST call, retried while the cluster rebalances (409) or a worker is
        unreachable; returns the decoded JSON (None for an empty answer).

        Asks ``worker`` if given, else any running worker (a paused one never answers).
        A 4xx other than 409 (and 404 "No status found", which a worker says until it
        has read the status topic) raises at once with Connect's own message.
        """
        last = ""
        asked: list[Worker] = []

        def answer() -> tuple[Any] | None:
            """The decoded answer in a 1-tuple (it may be None), or None to ask again."""
            nonlocal last
            targets = ([self.worker(worker)] if worker is not None else
                       [w for w in self.workers if self.status_of(w.index) == "up"])
            if not targets:
                raise ConnectError(f"{method} {path}: no Connect worker is running "
                                   "(restart one: connect.restart(1))")
            asked[:] = targets
            for w in targets:
                try:
                    resp = self.session.request(method, w.url + path, json=body,
                                                timeout=min(15.0, timeout))
                except requests.RequestException as exc:
                    last = f"worker {w.index}: {type(exc).__name__}"
                    continue
                if resp.status_code < 300:
                    return (resp.json() if resp.content else None,)
                try:
                    message = resp.json().get("message", resp.text)
                except ValueError:
                    message = resp.text
                last = f"worker {w.index}: HTTP {resp.status_code} {message}"
                # 409: a rebalance is under way. "No status found": this worker has not
                # yet read the status topic up to the connector (a worker just restarted).
                if resp.status_code not in (409, 500, 503) and not (
                        resp.status_code == 404 and "No status found" in message):
                    raise ConnectError(f"{method} {path} refused: HTTP {resp.status_code} "
                                       f"{message}")
            return None

        try:
            return wait_until(f"an answer to {method} {path}", answer, timeout,
                              interval=0.5)[0]
        except TimedOut:
            raise ConnectError(f"{method} {path} got no answer within {timeout:g} s "
                               f"(last: {last})", log=asked[0].log_path) from None

    def create(self, name: str, config: dict[str, str]) -> dict:
        """Create (or reconfigure) connector ``name``."""
        answer = self.rest("PUT", f"/connectors/{name}/config", config)
        if name not in self.connectors:
            self.connectors.append(name)
        return answer

    def last_connector(self) -> str:
        """The connector created last (what worker faults aim at by default)."""
        if not self.connectors:
            raise ConnectError("no connector created yet: connect.create(name, config)")
        return self.connectors[-1]

    def status(self, name: str) -> dict:
        """Connector and task states, with the worker running each."""
        return self.rest("GET", f"/connectors/{name}/status")

    def offsets(self, name: str) -> list[dict]:
        """The source offsets Connect has committed for ``name`` (KIP-875)."""
        return self.rest("GET", f"/connectors/{name}/offsets")["offsets"]

    def committed_position(self, name: str) -> int | None:
        """The file position the file connector committed (None: nothing yet)."""
        return committed_position(self.offsets(name))

    def restart_task(self, name: str, task: int = 0) -> str:
        self.rest("POST", f"/connectors/{name}/tasks/{task}/restart")
        return f"restarted task {name}/{task} (graceful: it commits, then starts again)"

    def stop_connector(self, name: str) -> None:
        self.rest("PUT", f"/connectors/{name}/stop")

    def delete(self, name: str) -> None:
        self.rest("DELETE", f"/connectors/{name}")

    def task_worker(self, name: str, task: int = 0) -> int | None:
        """The number of the worker that runs ``name``'s task now (None: unassigned)."""
        return task_worker(self.status(name), self.workers, task)

    def task_worker_of(self, status: dict, task: int = 0) -> int | None:
        """Which worker a ``/status`` answer says runs ``task``."""
        return task_worker(status, self.workers, task)

    def wait_task(self, name: str, task: int = 0, state: str = "RUNNING",
                  exclude: tuple[int, ...] = (), timeout: float = 60.0) -> int:
        """Wait until the task is in ``state`` on a worker not in ``exclude``; returns
        that worker's number. Raises naming the last status seen."""
        seen: list[Any] = [None]

        def probe() -> int | None:
            try:
                st = self.status(name)
            except ConnectError as exc:
                seen[0] = str(exc)
                return None
            seen[0] = st.get("tasks")
            tasks = [t for t in st.get("tasks", []) if t["id"] == task]
            if not tasks or tasks[0]["state"] != state:
                return None
            index = task_worker(st, self.workers, task)
            return index if index is not None and index not in exclude else None

        try:
            return ready.wait_until(f"task {name}/{task} {state} on a worker"
                                    + (f" other than {exclude}" if exclude else ""),
                                    probe, timeout, interval=0.3)
        except ready.ClusterNotReady as exc:
            raise ConnectError(f"{exc}; last status: {seen[0]}") from None


def committed_position(offsets: list[dict]) -> int | None:
    """The ``position`` in a ``GET /offsets`` answer of the file connector."""
    for item in offsets:
        pos = (item.get("offset") or {}).get("position")
        if pos is not None:
            return int(pos)
    return None


def task_worker(status: dict, workers: list[Worker], task: int = 0) -> int | None:
    """Which of ``workers`` a ``/status`` answer says runs ``task``."""
    for t in status.get("tasks", []):
        if t.get("id") == task:
            for w in workers:
                if w.worker_id == t.get("worker_id"):
                    return w.index
    return None


def _wait_process_state(w: Worker, stopped: bool, timeout: float = 5.0) -> None:
    """SIGSTOP/SIGCONT reach a JVM's threads asynchronously: wait until they have.

    Raises if the worker never gets there (or died meanwhile): the caller would
    otherwise mark a dead worker "paused" and the panel would show a state it is not in.
    """
    want = "stopped (SIGSTOP)" if stopped else "running again (SIGCONT)"
    if w.proc is None:
        raise ConnectError(f"worker {w.index} has no process to be {want}")
    pid = w.proc.pid

    def there() -> bool:
        try:
            state = psutil.Process(pid).status()
        except psutil.NoSuchProcess:
            state = None
        if state is None or state == psutil.STATUS_ZOMBIE:
            raise ConnectError(f"worker {w.index} exited before it was {want}",
                               log=w.log_path, log_tail=tail(w.log_path, 15))
        return (state == psutil.STATUS_STOPPED) == stopped

    try:
        wait_until(f"worker {w.index} {want}", there, timeout, interval=0.02)
    except TimedOut:
        raise ConnectError(f"worker {w.index} was not {want} within {timeout:g} s",
                           log=w.log_path, log_tail=tail(w.log_path, 15)) from None

