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
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from ..cluster.local import start_reaper
from ..errors import LabError, bad_value
from ..process.ports import free_ports
from ..runtime.java import java_home


class SparkStandalone:
    """``SparkStandalone.start(workers=2)``; ``.master_url``; ``.stop()`` (or ``with``)."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        if not isinstance(workers, int) or not 1 <= workers <= 8:
            raise bad_value("workers", workers, "a whole number from 1 to 8")
        self.workers, self.cores, self.memory = workers, cores, memory
        self.workdir = Path(tempfile.mkdtemp(prefix="deliverylab-spark-standalone-"))
        self.procs: list[subprocess.Popen] = []
        self.master_url = ""
        self._reaper: subprocess.Popen | None = None

    @classmethod
    def start(cls, workers: int = 2, cores: int = 1, memory: str = "1g",
              timeout: float = 90.0) -> SparkStandalone:
        return cls(workers, cores, memory)._start(timeout)

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        import pyspark

        home = Path(pyspark.__file__).parent
        log = (self.workdir / f"{name}.log").open("w")
        proc = subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**env, "SPARK_HOME": str(home)},
                                start_new_session=True)
        self.procs.append(proc)
        self._reaper.stdin.write(f"watch {proc.pid}\n")
        self._reaper.stdin.flush()
        return proc

    def _start(self, timeout: float) -> SparkStandalone:
        self._reaper = start_reaper()
        self._reaper.stdin.write(f"cleanup {self.workdir}\n")
        self._reaper.stdin.flush()
        env = {**os.environ, "JAVA_HOME": java_home(), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_NO_DAEMONIZE": "1"}
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
        end = time.monotonic() + timeout
        while True:
            for proc in self.procs:
                if proc.poll() is not None:
                    raise LabError(f"a Spark standalone process exited ({proc.returncode}); "
                                   f"logs in {self.workdir}")
            registered = sum(
                "Successfully registered with master" in p.read_text(errors="replace")
                for p in self.workdir.glob("worker-*.log"))
            if registered == self.workers:
                return
            if time.monotonic() > end:
                raise LabError(f"{registered} of {self.workers} Spark workers registered "
                               f"within {timeout:.0f} s; logs in {self.workdir}")
            time.sleep(0.5)

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(15)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    proc.wait(15)
        self.procs.clear()
        if self._reaper is not None:
            self._reaper.stdin.close()  # EOF: the reaper removes the work dir and exits
            self._reaper.wait(30)
            self._reaper = None

    def __enter__(self) -> SparkStandalone:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
