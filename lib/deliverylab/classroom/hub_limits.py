"""A memory and CPU cap per student without Docker: one cgroup (v1) per student.

JupyterHub's ``LocalProcessSpawner`` ignores ``mem_limit`` and ``cpu_limit``
(jupyterhub#1584: limits need cgroups, which SystemdSpawner gets from systemd; there is
no systemd here). The classroom's spawner makes ``<root>/memory/deliverylab/<user>`` and
``<root>/cpu/deliverylab/<user>``, writes the limits, and puts the server into them from
its ``preexec_fn`` (as root, before the switch to the student's uid), so the kernel,
the brokers and the Spark driver the server starts are all inside: past the memory
limit the kernel's OOM killer picks a process *of that student*. The files are
root's, so a student cannot move out. ``memory.max_usage_in_bytes`` is the student's
peak (page cache included).

A host with only the unified (v2) hierarchy gets no limits from this module
(:meth:`Limits.available` is false): the spawner logs a warning and runs without.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import LabError

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "deliverylab"
CFS_PERIOD_US = 100_000


class Limits:
    """The cgroups of one student: ``mem_bytes`` and ``cpus`` (cores, e.g. 1.5)."""

    def __init__(self, name: str, mem_bytes: int | None, cpus: float | None,
                 root: Path = CGROUP_ROOT) -> None:
        if mem_bytes is not None and mem_bytes < 64 * 2**20:
            raise LabError(f"mem_limit={mem_bytes} bytes is below 64 MiB: give gigabytes")
        if cpus is not None and cpus <= 0:
            raise LabError(f"cpu_limit={cpus} is not accepted; expected cores > 0")
        self.name, self.mem_bytes, self.cpus, self.root = name, mem_bytes, cpus, root

    @staticmethod
    def available(root: Path = CGROUP_ROOT) -> bool:
        return all(os.access(root / c, os.W_OK) and (root / c / "cgroup.procs").exists()
                   for c in ("memory", "cpu"))

    @property
    def dirs(self) -> list[Path]:
        out = []
        if self.mem_bytes is not None:
            out.append(self.root / "memory" / GROUP / self.name)
        if self.cpus is not None:
            out.append(self.root / "cpu" / GROUP / self.name)
        return out

    def create(self) -> None:
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
        if self.mem_bytes is not None:
            mem = self.root / "memory" / GROUP / self.name
            (mem / "memory.limit_in_bytes").write_text(str(self.mem_bytes))
            swap = mem / "memory.memsw.limit_in_bytes"  # only with swap accounting
            if swap.exists():
                swap.write_text(str(self.mem_bytes))
            (mem / "memory.max_usage_in_bytes").write_text("0")  # a fresh peak
        if self.cpus is not None:
            cpu = self.root / "cpu" / GROUP / self.name
            (cpu / "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(int(self.cpus * CFS_PERIOD_US)))

    def join_fn(self) -> Callable[[], None]:
        """For a ``preexec_fn``: move the calling (forked) process into the cgroups."""
        procs = [str(d / "cgroup.procs") for d in self.dirs]

        def join() -> None:
            pid = str(os.getpid())
            for path in procs:
                with open(path, "w") as fh:
                    fh.write(pid)
        return join

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self.dirs:
            try:
                out |= {int(p) for p in (d / "cgroup.procs").read_text().split()}
            except OSError:
                continue
        return out

    def peak_bytes(self) -> int | None:
        path = self.root / "memory" / GROUP / self.name / "memory.max_usage_in_bytes"
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            return None

    def usage_bytes(self) -> int | None:
        """What the student's cgroup holds now (page cache included)."""
        path = self.root / "memory" / GROUP / self.name / "memory.usage_in_bytes"
        try:
            return int(path.read_text())
        except (OSError, ValueError):
            return None

    def reset_peak(self) -> None:
        """Start a new peak from the current usage (cgroup v1: writing 0 resets
        ``max_usage_in_bytes``): a peak per chapter rather than per server."""
        path = self.root / "memory" / GROUP / self.name / "memory.max_usage_in_bytes"
        try:
            path.write_text("0")
        except OSError as exc:
            raise LabError(f"could not reset {path}: {exc}") from exc

    def remove(self, timeout: float = 10.0) -> None:
        """Remove the cgroups (empty once the student's processes are swept)."""
        deadline = time.monotonic() + timeout
        for d in self.dirs:
            while d.exists():
                try:
                    d.rmdir()
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if time.monotonic() > deadline:
                        raise LabError(f"cgroup {d} could not be removed: {exc} "
                                       f"(pids still in it: {self.pids()})") from exc
                    time.sleep(0.1)


def remove_all(name: str, root: Path = CGROUP_ROOT) -> None:
    """Remove a student's cgroups, whichever exist (after a crashed hub's sweep)."""
    for d in (root / "memory" / GROUP / name, root / "cpu" / GROUP / name):
        try:
            d.rmdir()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise LabError(f"cgroup {d} could not be removed: {exc}") from exc
