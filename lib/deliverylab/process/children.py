"""The one way the lab starts a child process: in its own process group, its output in
a log, watched by a reaper, its log's tail in the error when it dies.

Who uses it: chapter 06's service instances, HTTP service and PostgreSQL; chapter 05's
Spark driver and the Spark standalone cluster; chapter 07's Connect workers. (The
brokers' backends launch their JVMs themselves and tell the Cluster's reaper, which is
started here too.)

Why a reaper per owner: a child must die by a real ``SIGKILL`` while its siblings go on,
and a kernel restart (itself a SIGKILL of the owner) must still take every one of them
down. So each :class:`Children` starts one :mod:`~deliverylab.process.reaper`, tells it
``watch <pid>`` for every child and ``cleanup <dir>`` for private directories; when the
owner dies, however it dies, the reaper SIGKILLs the process groups and removes the
directories. :meth:`Children.close` releases it once the owner stopped them itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from ..errors import LabError


def tail(path: Path, lines: int = 20) -> str:
    """Last ``lines`` lines of a log, or an empty string if it does not exist yet."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 64 * 1024))
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def start_reaper() -> subprocess.Popen:
    """Start the watchdog that outlives us (see :mod:`.reaper`)."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("reaper.py"))],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        text=True, start_new_session=True, close_fds=True,
    )


class ChildExited(LabError):
    """A child process the lab started is not running; the message names its log."""


class Children:
    """The processes one owner started, and the reaper that outlives the owner."""

    def __init__(self) -> None:
        self._reaper: subprocess.Popen | None = start_reaper()
        self._lock = threading.Lock()
        self.procs: dict[int, tuple[subprocess.Popen, Path, str]] = {}

    def _tell(self, line: str) -> None:
        with self._lock:
            if self._reaper is not None and self._reaper.poll() is None:
                self._reaper.stdin.write(line + "\n")
                self._reaper.stdin.flush()

    def start(self, name: str, argv: Sequence[str], log: Path, *,
              env: dict[str, str] | None = None, stdin: bool = False,
              stdout_pipe: bool = False, cwd: Path | None = None) -> subprocess.Popen:
        """Start ``argv`` in a new session (its own process group), output to ``log``.

        The reaper learns the pid before this returns. ``stdin=True`` keeps a pipe to
        the child (service instances read commands from it, and see EOF if we die).
        """
        log.parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "ab")  # noqa: SIM115 -- the child keeps it open
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE if stdout_pipe else out, stderr=out,
                env=env, start_new_session=True, text=True, cwd=cwd)
        finally:
            out.close()
        self._tell(f"watch {proc.pid}")
        self.procs[proc.pid] = (proc, log, name)
        return proc

    def run_at_death(self, argv: Sequence[str]) -> None:
        """Run ``argv`` if the owner dies without :meth:`close` (the hub: sweep what
        JupyterHub started in other sessions)."""
        import json

        self._tell(f"exec {json.dumps(list(argv))}")

    def cleanup(self, path: Path) -> None:
        """Remove ``path`` when the owner dies (or at :meth:`close`)."""
        self._tell(f"cleanup {path}")

    def check(self, proc: subprocess.Popen) -> None:
        """Raise :class:`ChildExited` with the log's tail if ``proc`` has exited."""
        if proc.poll() is not None:
            _, log, name = self.procs.get(proc.pid, (proc, Path("?"), "process"))
            raise ChildExited(f"{name} (pid {proc.pid}) exited with code {proc.returncode}"
                              f"; log: {log}", log, tail(log) if log.exists() else "")

    def kill(self, proc: subprocess.Popen) -> None:
        """SIGKILL the child's whole process group: no clean-up runs, as in a crash."""
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait(10)

    def stop(self, proc: subprocess.Popen, timeout: float = 10.0,
             sig: int = signal.SIGTERM) -> None:
        """Ask the child to stop (``sig`` to its group), SIGKILL it after ``timeout``."""
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill(proc)
        if proc.stdin is not None:
            try:
                proc.stdin.close()
            except OSError:
                pass
        self._tell(f"forget {proc.pid}")

    @property
    def alive(self) -> list[int]:
        return [pid for pid, (p, _, _) in self.procs.items() if p.poll() is None]

    def close(self) -> None:
        """Stop every child still running, then let the reaper go (nothing left for it)."""
        for proc, _, _ in list(self.procs.values()):
            self.stop(proc, timeout=5)
        if self._reaper is not None:
            reaper, self._reaper = self._reaper, None
            try:
                reaper.stdin.write("release\n")
                reaper.stdin.close()
                reaper.wait(10)
            except (OSError, subprocess.TimeoutExpired):
                reaper.kill()


def python_module(module: str, *args: str) -> list[str]:
    """``python -m deliverylab.<module> args``, with this interpreter."""
    return [sys.executable, "-m", f"deliverylab.{module}", *args]


def child_env() -> dict[str, str]:
    """This process's environment, with the lab's library first on ``PYTHONPATH`` (a
    worktree or a source checkout runs its own library in the children too)."""
    lib = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": lib + (os.pathsep + path if path else "")}
