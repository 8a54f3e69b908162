"""Exercise 05's driver server: Spark drivers started before they are needed.

Why: a Spark driver's start costs ~10-15 s and ~15-25 CPU-seconds (2 cores), and a
grade of 05 started one per driver (a quick grade: 9). Two kinds of process serve a
grade's drivers instead, both started *warm* (their SparkContext created at once, before
any spec reaches them) while the grade does something else -- the cluster's start, a
run that mostly waits on the broker:

- the **main server** serves every driver no fault kills (``crash_query``'s only one,
  ``kill_driver``'s restart), one after the other, in one long-lived process over one
  SparkContext. Each spec imports the student's module afresh (:func:`~.spark_child.run`:
  a new module object), so what one driver held in memory never reaches the next -- the
  point of a ``kill_driver`` restart -- and gets a SparkSession of its own (its SQL
  settings, views and queries), with its own events file, process name, database and
  checkpoint;
- a **spare** serves exactly one driver, the one a ``kill_driver`` kills: that driver
  must be a process of its own, because its SIGKILL of its process group (the spare's
  Python and its JVM, :meth:`.spark_child.Crash.kill`) is the fault. The student's module
  is imported in it only when the spec arrives, as in a fresh driver process. The owner
  says how many specs will want one (:meth:`DriverServer.spares`); they are started one
  after another, each as soon as no other server is starting its Spark, so that the
  Spark starts run one at a time on one core while the grade's runs use the other.

The protocol: the parent writes a spec file's path, one line, to the server's stdin; the
server appends ``{"took": path}`` to its results file
(:class:`~deliverylab.history.JsonLines`) before the student's code runs and
``{"spec": path, "code": n}`` when the driver is done, ``n`` the exit code the fresh
child (:mod:`.spark_child`) would have had: 0, :data:`~.child.RAISED`, 1 (a traceback on
its log). A student's ``sys.exit``/``os._exit``/kill ends the server with that code,
read as the child's would be (:func:`~.runner.exit_ending`). A server that died before
it *took* a spec (it was idle too long, or something else killed it) did not run the
student's code: the spec goes to a fresh server, once, and the lab's log says so; a
second such death is an ``error``, never a verdict.

A spec not answered within its limit kills the server (its process group: its JVM too)
and is ``timeout``; a server that died, or a spec that failed (``error``), is replaced
for the next spec by a fresh one. A server nobody sends a spec for :data:`IDLE_S`
seconds exits by itself, and so does one whose stdin closes (its owner died).

:class:`DriverServer` is the parent's side, owned by one ``grade()`` (or its caller, to
grade several solutions over one Spark start) and closed in its ``finally``; its
:class:`~deliverylab.process.children.Children` reaper SIGKILLs every server process if
the grading process dies.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..errors import TimedOut
from ..history import JsonLines, read_json_lines
from ..process import lablog
from ..waiting import wait_until

#: The endings after which the main server goes on serving: anything else replaces it.
SERVED = ("done", "raised")

#: Seconds a server waits for a spec before it exits by itself: a spare warmed for a run
#: that never came (its grade stopped early), a server its owner forgot to close.
IDLE_S = 900.0

#: Spares alive at once, warm or warming (each an idle Spark driver, a few hundred MB).
SPARES_MAX = 2

#: Server processes starting their Spark at once. One: a Spark start takes most of a
#: core for ~10-15 s, the grade's runs the other; two starts at once slow each other and
#: the run on the critical path (the main server's first driver, a spare being used).
WARMING_MAX = 1

_log = lablog.logger(__name__)


class _Server:
    """One server process of a :class:`DriverServer` (its main server, or one spare):
    started warm, replaced when it died (the main one), answering specs by their path."""

    def __init__(self, owner: DriverServer, name: str, once: bool) -> None:
        self.owner, self.name, self.once = owner, name, once
        self.slug = name.replace(" ", "-")
        self.proc: subprocess.Popen | None = None
        #: Processes started so far (a replaced one counts again).
        self.starts = 0
        self._started_at = 0.0
        self._warm_after: float | None = None  # of the current process, once known

    @property
    def log(self) -> Path:
        return self.owner.folder() / f"{self.slug}.log"

    @property
    def results(self) -> Path:
        return self.owner.folder() / f"{self.slug}.jsonl"

    def up(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def warming(self) -> bool:
        """Is its Spark still starting (it is up, and has not said it is warm)?"""
        return self.up() and self.warm_after() is None

    def warm_after(self) -> float | None:
        """Seconds the current process took to warm up (its warm-up failed: -1), None
        while it warms."""
        if self._warm_after is None and self.proc is not None:
            pid = self.proc.pid
            self._warm_after = next(
                (r["warm"] for r in read_json_lines(self.results).records
                 if r.get("pid") == pid and "warm" in r), None)
        return self._warm_after

    def start(self) -> subprocess.Popen:
        """The server process, started now (warm: it creates its SparkContext at once)
        if there is none or it died."""
        from ..process.children import python_module  # lazy: the reaper
        from ..spark.session import driver_env

        if self.proc is not None and self.proc.poll() is not None:
            _log.warning("the %s (pid %d) had exited with code %s; a fresh one starts",
                         self.name, self.proc.pid, self.proc.returncode)
            self.discard()
        if self.proc is None:
            home = self.owner.folder()
            argv = self.owner.argv or python_module("grade.spark_server")
            flags = ["--warm", "--idle", str(self.owner.idle)] + (["--once"] * self.once)
            self.proc = self.owner.children().start(
                self.name, [*argv, *flags, str(self.results)], self.log, stdin=True,
                env=driver_env(home / "tmp"))
            self.starts += 1
            self.owner.spare_starts += self.once
            self._started_at = time.monotonic()
            self._warm_after = None
        return self.proc

    def serve(self, path: Path, process: str, limit: float,
              tick: Callable[[], None]) -> tuple[str, str]:
        """Send the spec at ``path`` and wait up to ``limit`` seconds for its end (see
        :meth:`DriverServer.serve`), calling ``tick`` as it waits; a server that died
        before it took the spec is replaced once."""
        from .runner import exit_ending  # lazy: the grader's side, not the server process's

        deadline = time.monotonic() + limit
        for attempt in (1, 2):
            proc = self.start()
            since = self.log.stat().st_size if self.log.exists() else 0
            warm = self.warm_after()
            _log.info("%s goes to the %s (pid %d, started %.1f s ago, %s)", process,
                      self.name, proc.pid, time.monotonic() - self._started_at,
                      "still warming" if warm is None else "its warm-up failed"
                      if warm < 0 else f"warm after {warm:.1f} s")
            try:
                proc.stdin.write(f"{path}\n")
                proc.stdin.flush()
            except OSError:  # it died just now: the wait below reads how
                pass
            try:
                answer = wait_until(f"the {self.name} to serve {process}",
                                    lambda p=proc: self._answer(p, str(path)),
                                    max(0.1, deadline - time.monotonic()), check=tick,
                                    interval=0.1)
            except TimedOut:
                self.discard()
                return "timeout", f"{process} still ran after {limit:.0f} s: killed"
            if answer.get("code") is not None:
                ended = exit_ending(int(answer["code"]), self.log, since)
                if self.once or ended[0] not in SERVED:  # used, or its Spark may be bad
                    self.discard()
                return ended
            code = answer["exit"]
            self.discard()
            if attempt == 1:
                _log.warning("the %s (pid %d) exited with code %s before it took %s's "
                             "spec; a fresh one serves it", self.name, proc.pid, code,
                             process)
        from ..process.children import tail

        return "error", (f"the grader's {self.name} exited (code {code}) twice before "
                         f"it took {process}'s spec; its log:\n{tail(self.log, 12)}")

    def _answer(self, proc: subprocess.Popen, path: str) -> dict[str, Any] | None:
        """The server's answer to the spec at ``path`` (its exit code as ``code``), or,
        if it died first, the code it died with: as ``code`` if it had taken the spec
        (the student's code ran: a kill, an exit), else as ``exit`` only; None before
        either."""
        died = proc.poll() is not None  # looked at first: an answer before death counts
        records = read_json_lines(self.results).records
        answer = next((r for r in records if r.get("spec") == path), None)
        if answer is None and died:
            took = any(r.get("took") == path and r.get("pid") == proc.pid for r in records)
            answer = {"spec": path, "code": proc.returncode if took else None,
                      "exit": proc.returncode}
        return answer

    def discard(self) -> None:
        """SIGKILL the server's process group (its JVM too) and forget it."""
        if self.proc is not None:
            children = self.owner.children()
            children.kill(self.proc)
            children.stop(self.proc)
            self.proc = None


class DriverServer:
    """The parent's side of the driver servers: :meth:`serve` runs a driver spec in the
    main server, :meth:`serve_alone` in a spare of its own, and each names the end as
    :func:`~deliverylab.grade.runner.child_ending` names a fresh driver's. Nothing runs
    until :meth:`start`, :meth:`spares` or the first spec; :meth:`close` leaves nothing
    running.

    The spares the owner asked for (:meth:`spares`) are started one Spark start at a time
    (:data:`WARMING_MAX`, the main server's start included), up to :data:`SPARES_MAX`
    alive; the driver server has no thread of its own: it looks whether the next one may
    start (:meth:`tend`) whenever it is called and while it waits for a driver."""

    def __init__(self, argv: list[str] | None = None, idle: float = IDLE_S) -> None:
        #: The server's command line, its flags and results file appended (tests: a
        #: stand-in).
        self.argv = argv
        #: Seconds each server process waits for a spec before it exits by itself.
        self.idle = idle
        self.home: Path | None = None  # logs, results, the drivers' TMPDIR
        self._children: Any = None
        self._main = _Server(self, "driver server", once=False)
        self._spares: list[_Server] = []  # up, or being started: the oldest first
        self._busy: _Server | None = None  # the spare serving its one spec now
        self._due = 0  # specs the owner said will be served alone
        self._named = 0  # spares named so far: each its own log
        #: Spare processes started so far (one replaced before its spec counts again).
        self.spare_starts = 0

    @property
    def starts(self) -> int:
        """Main server processes started so far (a replaced one counts again)."""
        return self._main.starts

    @property
    def log(self) -> Path:
        """The main server's log."""
        return self._main.log

    def folder(self) -> Path:
        """The servers' folder (created with the reaper that removes it)."""
        self.children()
        assert self.home is not None
        return self.home

    def children(self) -> Any:
        """The reaper of every server process, started on first use."""
        from ..process.children import Children  # lazy: the reaper

        if self._children is None:
            self._children = Children()
            self.home = Path(tempfile.mkdtemp(prefix="deliverylab-drivers-"))
            self._children.cleanup(self.home)  # if we die before close()
        return self._children

    def start(self) -> None:
        """Start the main server now, if it is not running: its Spark warms up while
        the caller goes on (a grade: while its cluster starts)."""
        self._main.start()

    def spares(self, due: int) -> None:
        """The next ``due`` specs the owner knows will be served alone: warm spares for
        them from now on (:meth:`tend`), and none once they were served (``0``: stop the
        spares nobody will use)."""
        self._due = max(0, due)
        if not self._due:
            for spare in self._spares:
                spare.discard()
            self._spares = []
        self.tend()

    def tend(self) -> None:
        """Start the next spare if one is due, fewer than :data:`SPARES_MAX` are up, and
        no other server is starting its Spark (:data:`WARMING_MAX`); forget a spare that
        died while it waited (the lab's log says so)."""
        for spare in [s for s in self._spares if not s.up()]:
            _log.warning("the %s (pid %d) exited with code %s before it was used",
                         spare.name, spare.proc.pid, spare.proc.returncode)
            spare.discard()
            self._spares.remove(spare)
        busy = [self._main, *self._spares, *([self._busy] if self._busy else [])]
        while (len(self._spares) < min(self._due, SPARES_MAX)
               and sum(s.warming() for s in busy) < WARMING_MAX):
            spare = self._new_spare()
            spare.start()
            self._spares.append(spare)
            busy.append(spare)

    def _new_spare(self) -> _Server:
        self._named += 1
        return _Server(self, f"spare driver {self._named}", once=True)

    @staticmethod
    def _write(spec: dict[str, Any], workdir: Path) -> Path:
        path = workdir / f"{spec['process']}.json"
        path.write_text(json.dumps(spec))
        return path

    def serve(self, spec: dict[str, Any], workdir: Path, limit: float) -> tuple[str, str]:
        """Run ``spec`` (its file written to ``workdir``) in the main server within
        ``limit`` seconds; returns (how it ended, error tail): ``done``, ``raised``,
        ``error`` with the log's last lines of this spec, ``killed`` (the student killed
        the server), ``timeout``."""
        return self._main.serve(self._write(spec, workdir), spec["process"], limit,
                                self.tend)

    def serve_alone(self, spec: dict[str, Any], workdir: Path,
                    limit: float) -> tuple[str, str]:
        """Run ``spec`` in a spare, a process of its own that serves only it (its kill
        is the fault): the warm one that waited longest, else the one closest to warm,
        else one started now; ends named as by :meth:`serve`."""
        self.tend()
        ready = [s for s in self._spares if s.warm_after() is not None] or self._spares
        spare = ready[0] if ready else self._new_spare()
        if spare in self._spares:
            self._spares.remove(spare)
        self._due = max(0, self._due - 1)
        self._busy = spare
        try:
            return spare.serve(self._write(spec, workdir), spec["process"], limit,
                               self.tend)
        finally:
            self._busy = None
            spare.discard()  # served its one spec (its own exit, or its kill, ended it)
            self.tend()

    def close(self) -> None:
        """Stop every server, release the reaper, remove the servers' folder."""
        if self._children is not None:
            self._children.close()
            self._children = None
        self._main.proc = None
        self._spares, self._busy, self._due = [], None, 0
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
            self.home = None

    def __enter__(self) -> DriverServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- the server process -----------------------------------------------------------


def warm_up() -> None:
    """Start this process's SparkContext (the driver's session, :func:`~deliverylab.
    spark.session.session`, reuses it) and run one tiny job, so the first spec finds
    Spark's classes loaded."""
    from ..spark.session import session

    spark = session()
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(8).selectExpr("sum(id)").collect()


def serve_one(path: str, shared: bool = True) -> int:
    """Run the driver spec at ``path`` here; the exit code a fresh child would have.
    ``shared``: other specs follow in this process (the main server)."""
    from .spark_child import run

    try:
        return run(json.loads(Path(path).read_text()), shared=shared)
    except Exception:  # the fresh child's uncaught error: its traceback, exit code 1
        traceback.print_exc()
        return 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


def spec_paths(fd: int, idle: float) -> Iterator[str]:
    """The spec paths written to ``fd``, one a line, until EOF (the owner closed it, or
    died) or ``idle`` seconds without a line."""
    pending = b""
    while True:
        while b"\n" not in pending:
            ready, _, _ = select.select([fd], [], [], idle)
            chunk = os.read(fd, 4096) if ready else b""
            if not chunk:
                return
            pending += chunk
        line, _, pending = pending.partition(b"\n")
        if path := line.decode().strip():
            yield path


def main(argv: list[str] | None = None) -> int:
    """``python -m deliverylab.grade.spark_server [--warm] [--once] [--idle S] RESULTS``:
    serve the spec paths read from stdin (``--once``: one, then exit)."""
    p = argparse.ArgumentParser(prog="python -m deliverylab.grade.spark_server")
    p.add_argument("results", help="the JSON Lines file the answers are appended to")
    p.add_argument("--warm", action="store_true", help="start Spark before any spec")
    p.add_argument("--once", action="store_true", help="serve one spec, then exit")
    p.add_argument("--idle", type=float, default=IDLE_S,
                   help="exit after this many seconds without a spec")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    results = JsonLines(args.results)
    if args.warm:
        t0 = time.monotonic()
        try:
            warm_up()
            took = round(time.monotonic() - t0, 2)
        except Exception:  # the spec's driver starts Spark itself, and fails as a fresh one
            traceback.print_exc()
            took = -1.0
        results.append({"pid": os.getpid(), "warm": took})
        sys.stdout.flush()
        sys.stderr.flush()
    for path in spec_paths(sys.stdin.fileno(), args.idle):
        results.append({"took": path, "pid": os.getpid()})
        results.append({"spec": path, "code": serve_one(path, shared=not args.once)})
        if args.once:
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
