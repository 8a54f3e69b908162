"""A memory and CPU cap per student without Docker: one cgroup per student, on a host
with the v1 hierarchies (``memory``, ``cpu``) or only the unified (v2) one.

JupyterHub's ``LocalProcessSpawner`` ignores ``mem_limit`` and ``cpu_limit``
(jupyterhub#1584: limits need cgroups, which SystemdSpawner gets from systemd; there is
no systemd here). The classroom's spawner makes the student's cgroup, writes the
limits, and puts the server into it from its ``preexec_fn`` (as root, before the switch
to the student's uid), so the kernel, the brokers and the Spark driver the server
starts are all inside: past the memory limit the kernel's OOM killer picks a process
*of that student*. The files are root's, so a student cannot move out.

- **v1** (:data:`V1`): ``<root>/memory/deliverylab/<user>`` (``memory.limit_in_bytes``,
  and ``memory.memsw.limit_in_bytes`` with swap accounting: no swap beyond the cap)
  and ``<root>/cpu/deliverylab/<user>`` (``cpu.cfs_quota_us``).
  ``memory.max_usage_in_bytes`` is the student's peak (page cache included).
- **v2** (:data:`V2`, current Ubuntu, Debian, Fedora): one folder,
  ``<root>/deliverylab/<user>``, in a subtree delegated to the classroom: ``memory``
  and ``cpu`` are enabled in ``cgroup.subtree_control`` of every folder from the root
  down to ``deliverylab`` (v2's rule: a controller reaches a child only if its parent
  hands it down), then ``memory.max``, ``memory.swap.max`` = 0 and ``cpu.max``
  (``<quota> <period>``). ``memory.peak`` is the peak since the cgroup was made (it
  cannot be reset for every reader), ``memory.current`` the usage.

A host where neither can be written (no cgroup filesystem, not root, a v2 subtree whose
controllers cannot be handed down) has :func:`why_not` say why in one line; the hub
refuses to start a class there unless told to run without caps (:mod:`.hub`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ...errors import LabError
from ...waiting import Deadline, wait_until

CGROUP_ROOT = Path("/sys/fs/cgroup")
GROUP = "deliverylab"
CFS_PERIOD_US = 100_000
V1, V2 = "v1", "v2"


def hierarchy(root: Path = CGROUP_ROOT) -> str | None:
    """Which cgroup layout ``root`` has for memory and CPU: :data:`V1` (a hybrid host's
    v1 controllers win: a controller lives in one hierarchy only), :data:`V2`, or None."""
    if all((root / c / "cgroup.procs").exists() for c in ("memory", "cpu")):
        return V1
    controllers = root / "cgroup.controllers"
    if controllers.exists():
        try:
            have = set(controllers.read_text().split())
        except OSError:
            return None
        if {"memory", "cpu"} <= have:
            return V2
    return None


def why_not(root: Path = CGROUP_ROOT) -> str | None:
    """None if this host can cap each student's memory and CPU; else why not, one line."""
    layout = hierarchy(root)
    if layout is None:
        return (f"no cgroup memory and cpu controllers under {root} (neither v1's "
                "memory/ and cpu/ nor a unified hierarchy listing both)")
    folders = [root / "memory", root / "cpu"] if layout == V1 else [root]
    if layout == V2 and (root / GROUP).exists():
        folders = [root / GROUP]
    for folder in folders:
        if not os.access(folder, os.W_OK):
            return f"cgroup {layout} folder {folder} is not writable (run the hub as root)"
    return None


class Limits:
    """The cgroup(s) of one student: ``mem_bytes`` and ``cpus`` (cores, e.g. 1.5)."""

    def __init__(self, name: str, mem_bytes: int | None, cpus: float | None,
                 root: Path = CGROUP_ROOT, layout: str | None = None) -> None:
        if mem_bytes is not None and mem_bytes < 64 * 2**20:
            raise LabError(f"mem_limit={mem_bytes} bytes is below 64 MiB: give gigabytes")
        if cpus is not None and cpus <= 0:
            raise LabError(f"cpu_limit={cpus} is not accepted; expected cores > 0")
        self.name, self.mem_bytes, self.cpus, self.root = name, mem_bytes, cpus, root
        self.layout = layout or hierarchy(root) or V1

    @staticmethod
    def available(root: Path = CGROUP_ROOT) -> bool:
        return why_not(root) is None

    @property
    def dirs(self) -> list[Path]:
        if self.layout == V2:
            wanted = self.mem_bytes is not None or self.cpus is not None
            return [self.root / GROUP / self.name] if wanted else []
        out = []
        if self.mem_bytes is not None:
            out.append(self.root / "memory" / GROUP / self.name)
        if self.cpus is not None:
            out.append(self.root / "cpu" / GROUP / self.name)
        return out

    def _memory_file(self, v1: str, v2: str) -> Path:
        if self.layout == V2:
            return self.root / GROUP / self.name / v2
        return self.root / "memory" / GROUP / self.name / v1

    def create(self) -> None:
        if self.layout == V2:
            self._create_v2()
            return
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

    def _create_v2(self) -> None:
        wanted = [c for c, on in (("memory", self.mem_bytes), ("cpu", self.cpus)) if on]
        base = self.root / GROUP
        delegate(self.root, wanted)
        base.mkdir(exist_ok=True)
        delegate(base, wanted)
        mine = base / self.name
        mine.mkdir(exist_ok=True)
        if self.mem_bytes is not None:
            (mine / "memory.max").write_text(str(self.mem_bytes))
            swap = mine / "memory.swap.max"  # absent without swap accounting
            if swap.exists():
                swap.write_text("0")  # as v1's memsw limit: no swap beyond the cap
        if self.cpus is not None:
            (mine / "cpu.max").write_text(f"{int(self.cpus * CFS_PERIOD_US)} {CFS_PERIOD_US}")

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
        """The student's peak (v1: since :meth:`reset_peak`; v2: since the cgroup was
        made, on kernels from 5.19 that have ``memory.peak``)."""
        return _read_int(self._memory_file("memory.max_usage_in_bytes", "memory.peak"))

    def usage_bytes(self) -> int | None:
        """What the student's cgroup holds now (page cache included)."""
        return _read_int(self._memory_file("memory.usage_in_bytes", "memory.current"))

    def reset_peak(self) -> bool:
        """Start a new peak from the current usage (v1: writing 0 resets
        ``max_usage_in_bytes``): a peak per chapter rather than per server. False on
        v2, whose ``memory.peak`` a writer resets only for its own open file."""
        if self.layout == V2:
            return False
        path = self._memory_file("memory.max_usage_in_bytes", "")
        try:
            path.write_text("0")
        except OSError as exc:
            raise LabError(f"could not reset {path}: {exc}") from exc
        return True

    def remove(self, timeout: float = 10.0) -> None:
        """Remove the cgroups (empty once the student's processes are swept): the kernel
        refuses (EBUSY) while a process it is still reaping sits in one."""
        deadline = Deadline(timeout)  # one timeout for every folder
        for d in self.dirs:
            def gone(d: Path = d) -> bool:
                try:
                    d.rmdir()
                except FileNotFoundError:
                    pass
                return not d.exists()

            wait_until(f"cgroup {d} to be removed", gone, deadline, interval=0.1,
                       retry=(OSError,),
                       explain=lambda: f" (pids still in it: {self.pids()})")


def delegate(folder: Path, controllers: list[str]) -> None:
    """Hand ``controllers`` down to ``folder``'s children (v2 ``cgroup.subtree_control``)
    if it does not already; one line naming the folder if the kernel refuses (EBUSY:
    processes sit in ``folder`` itself, which v2 forbids beside controlled children)."""
    control = folder / "cgroup.subtree_control"
    try:
        have = {c.lstrip("+") for c in control.read_text().split()}
    except OSError as exc:
        raise LabError(f"cgroup v2: cannot read {control}: {exc}") from exc
    missing = [c for c in controllers if c not in have]
    if not missing:
        return
    try:
        control.write_text(" ".join(f"+{c}" for c in missing))
    except OSError as exc:
        raise LabError(f"cgroup v2: cannot enable {', '.join(missing)} in {control}: "
                       f"{exc} (delegate a subtree to the classroom, e.g. a systemd unit "
                       "with Delegate=yes)") from exc


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text())
    except (OSError, ValueError):
        return None


def student_dirs(name: str, root: Path = CGROUP_ROOT) -> list[Path]:
    """Every cgroup folder a student may have, on either layout (for a sweep's check)."""
    return [root / "memory" / GROUP / name, root / "cpu" / GROUP / name,
            root / GROUP / name]


def remove_all(name: str, root: Path = CGROUP_ROOT) -> None:
    """Remove a student's cgroups, whichever exist (after a crashed hub's sweep)."""
    for d in student_dirs(name, root):
        try:
            d.rmdir()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise LabError(f"cgroup {d} could not be removed: {exc}") from exc
