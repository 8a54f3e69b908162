"""A Spark standalone cluster on 127.0.0.1: one master, N workers, from pip's pyspark.

The pip wheel ships no ``start-master.sh``, but it ships everything those scripts
wrap: ``bin/spark-class`` and the ``Master``/``Worker`` classes in its jars. So a
class whose pipeline outgrows ``local[2]`` runs the very same chapter code against
``spark://127.0.0.1:<port>`` -- executors in their own JVMs, the driver in the
notebook. Each process is started in its own process group and watched by the lab's
reaper, so the cluster dies with its owner like brokers do.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..errors import LabError, bad_value
from ..process.children import Children
from ..process.ports import free_ports
from ..runtime.java import java_home, temp_opts
from ..waiting import wait_until


class SparkStandalone:
    """``SparkStandalone.start(workers=2)``; ``.master_url``; ``.stop()`` (or ``with``)."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        if not isinstance(workers, int) or not 1 <= workers <= 8:
            raise bad_value("workers", workers, "a whole number from 1 to 8")
        self.workers, self.cores, self.memory = workers, cores, memory
        self.workdir = Path(tempfile.mkdtemp(prefix="deliverylab-spark-standalone-"))
        self.procs: list[subprocess.Popen] = []
        self.master_url = ""
        self._children: Children | None = None

    @classmethod
    def start(cls, workers: int = 2, cores: int = 1, memory: str = "1g",
              timeout: float = 90.0) -> SparkStandalone:
        return cls(workers, cores, memory)._start(timeout)

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        import pyspark

        home = Path(pyspark.__file__).parent
        proc = self._children.start(f"Spark standalone {name}",
                                    [str(home / "bin" / "spark-class"), *args],
                                    self.workdir / f"{name}.log",
                                    env={**env, "SPARK_HOME": str(home)})
        self.procs.append(proc)
        return proc

    def _start(self, timeout: float) -> SparkStandalone:
        self._children = Children()
        self._children.cleanup(self.workdir)
        # Temporary files (the daemons', the workers' local dirs) in the workdir, removed
        # with it; no perf data in /tmp for the daemons or spark-class's launcher JVM.
        tmp = self.workdir / "tmp"
        env = {**os.environ, "JAVA_HOME": java_home(), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_NO_DAEMONIZE": "1", "SPARK_LOCAL_DIRS": str(tmp),
               "SPARK_DAEMON_JAVA_OPTS": " ".join(temp_opts(tmp)),
               "SPARK_LAUNCHER_OPTS": "-XX:-UsePerfData"}
        port, ui, *worker_ui = free_ports(2 + self.workers)
        self.master_url = f"spark://127.0.0.1:{port}"
        try:
            self._spawn("master", ["org.apache.spark.deploy.master.Master", "--host",
                                   "127.0.0.1", "--port", str(port), "--webui-port",
                                   str(ui)], env)
            for i in range(self.workers):
                work = self.workdir / f"worker-{i}"
                work.mkdir()
                self._spawn(f"worker-{i}", [
                    "org.apache.spark.deploy.worker.Worker", self.master_url,
                    "--host", "127.0.0.1", "--cores", str(self.cores), "--memory",
                    self.memory, "--work-dir", str(work), "--webui-port",
                    str(worker_ui[i])], env)
            self._wait(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, timeout: float) -> None:
        """Ready when every worker's log says it registered with the master."""
        def alive() -> None:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise LabError(f"a Spark standalone process exited ({proc.returncode}); "
                                   f"logs in {self.workdir}")

        def registered() -> int:
            return sum("Successfully registered with master" in p.read_text(errors="replace")
                       for p in self.workdir.glob("worker-*.log"))

        wait_until(f"{self.workers} Spark workers registered with the master",
                   lambda: registered() == self.workers, timeout, check=alive, interval=0.5,
                   explain=lambda: f"; {registered()} registered; logs in {self.workdir}")

    def stop(self) -> None:
        """SIGTERM every process group (workers first), SIGKILL what outlives 15 s, then
        remove the work directory."""
        if self._children is not None:
            for proc in reversed(self.procs):
                self._children.stop(proc, timeout=15)
            self._children.close()
            self._children = None
        self.procs.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> SparkStandalone:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
