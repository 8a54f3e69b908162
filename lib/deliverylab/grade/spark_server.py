"""Exercise 05's driver server: one Spark driver that serves the drivers no fault kills.

Why: a Spark driver's start costs ~10-15 s and ~15-25 CPU-seconds (2 cores), and a
grade of 05 started one per driver (a quick grade: 9). Only ``kill_driver``'s
``driver-0`` has to be a process of its own -- its SIGKILL, JVM and all, is the fault.
Every other driver (``crash_query``'s only one, ``kill_driver``'s restart) runs here, one
after the other, in one long-lived process over one SparkContext:

- each spec imports the student's module afresh (:func:`~.spark_child.run`: a new module
  object), so what one driver held in memory never reaches the next -- the point of a
  ``kill_driver`` restart -- and gets a SparkSession of its own (its SQL settings, views
  and queries), with its own events file, process name, database and checkpoint;
- the protocol: the parent writes a spec file's path, one line, to the server's stdin;
  the server appends ``{"spec": path, "code": n}`` to its results file
  (:class:`~deliverylab.history.JsonLines`) when the driver is done, ``n`` the exit code
  the fresh child (:mod:`.spark_child`) would have had: 0, :data:`~.child.RAISED`, 1 (a
  traceback on its log). A student's ``sys.exit``/``os._exit``/kill ends the server with
  that code, read as the child's would be (:func:`~.runner.exit_ending`);
- a spec not answered within its limit kills the server (its process group: its JVM
  too) and is ``timeout``; a server that died, or a spec that failed (``error``), is
  replaced for the next spec by a fresh one.

:class:`DriverServer` is the parent's side, owned by one ``grade()`` (started on its
first spec, closed in its ``finally``); its :class:`~deliverylab.process.children.
Children` reaper SIGKILLs the server if the grading process dies.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from ..errors import TimedOut
from ..history import JsonLines, read_json_lines
from ..waiting import wait_until
from .runner import exit_ending

#: The endings after which the server goes on serving: anything else replaces it.
SERVED = ("done", "raised")


class DriverServer:
    """The parent's side of the driver server: :meth:`serve` runs one driver spec in it
    and names its end as :func:`~deliverylab.grade.runner.child_ending` names a fresh
    driver's. Nothing runs until the first spec; :meth:`close` leaves nothing running."""

    def __init__(self, argv: list[str] | None = None) -> None:
        #: The server's command line, its results file appended (tests: a stand-in).
        self.argv = argv
        self.home: Path | None = None  # log, results, the drivers' TMPDIR
        self._children: Any = None
        self._proc: subprocess.Popen | None = None
        #: Server processes started so far (a replaced one counts again).
        self.starts = 0

    @property
    def log(self) -> Path:
        assert self.home is not None
        return self.home / "server.log"

    @property
    def results(self) -> Path:
        assert self.home is not None
        return self.home / "results.jsonl"

    def _running(self) -> subprocess.Popen:
        """The server process, started now if there is none (or it died)."""
        from ..process.children import Children, python_module  # lazy: the reaper
        from ..spark.session import driver_env

        if self._proc is not None and self._proc.poll() is not None:
            self._discard()
        if self._proc is None:
            if self._children is None:
                self._children = Children()
                self.home = Path(tempfile.mkdtemp(prefix="deliverylab-drivers-"))
                self._children.cleanup(self.home)  # if we die before close()
            argv = self.argv or python_module("grade.spark_server")
            self._proc = self._children.start(
                "driver server", [*argv, str(self.results)], self.log, stdin=True,
                env=driver_env(self.home / "tmp"))
            self.starts += 1
        return self._proc

    def serve(self, spec: dict[str, Any], workdir: Path, limit: float) -> tuple[str, str]:
        """Run ``spec`` (its file written to ``workdir``) within ``limit`` seconds;
        returns (how it ended, error tail): ``done``, ``raised``, ``error`` with the
        log's last lines of this spec, ``killed`` (the student killed the server),
        ``timeout``."""
        process = spec["process"]
        path = workdir / f"{process}.json"
        path.write_text(json.dumps(spec))
        proc = self._running()
        since = self.log.stat().st_size
        try:
            proc.stdin.write(f"{path}\n")
            proc.stdin.flush()
        except OSError:  # it died just now: the wait below reads its exit code
            pass
        try:
            answer = wait_until(f"the driver server to serve {process}",
                                lambda: self._answer(proc, str(path)), limit, interval=0.1)
        except TimedOut:
            self._discard()
            return "timeout", f"{process} still ran after {limit:.0f} s: killed"
        ended = exit_ending(int(answer["code"]), self.log, since)
        if ended[0] not in SERVED:  # it died, or its Spark may be in a bad state
            self._discard()
        return ended

    def _answer(self, proc: subprocess.Popen, path: str) -> dict[str, Any] | None:
        """The server's answer to the spec at ``path`` (its exit code as ``code``), or
        the server's own exit code if it died first; None before either."""
        died = proc.poll() is not None  # looked at first: an answer before death counts
        answer = next((r for r in read_json_lines(self.results).records
                       if r.get("spec") == path), None)
        if answer is None and died:
            answer = {"spec": path, "code": proc.returncode}
        return answer

    def _discard(self) -> None:
        """SIGKILL the server's process group (its JVM too) and forget it."""
        if self._proc is not None:
            self._children.kill(self._proc)
            self._children.stop(self._proc)
            self._proc = None

    def close(self) -> None:
        """Stop the server, release the reaper, remove the server's folder."""
        if self._children is not None:
            self._children.close()
            self._children, self._proc = None, None
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self) -> DriverServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve_one(path: str) -> int:
    """Run the driver spec at ``path`` here; the exit code a fresh child would have."""
    from .spark_child import run

    try:
        return run(json.loads(Path(path).read_text()), shared=True)
    except Exception:  # the fresh child's uncaught error: its traceback, exit code 1
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    """``python -m deliverylab.grade.spark_server RESULTS``: serve the spec paths read
    from stdin, one a line, until EOF."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m deliverylab.grade.spark_server RESULTS.jsonl",
              file=sys.stderr)
        return 2
    results = JsonLines(args[0])
    for line in sys.stdin:
        if path := line.strip():
            results.append({"spec": path, "code": serve_one(path)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
