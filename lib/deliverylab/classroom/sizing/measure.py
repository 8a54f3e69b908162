"""Measuring student stacks: memory as PSS over each student's process tree, CPU.

The machinery behind ``make classroom-plan`` (:mod:`deliverylab.classroom.sizing.plan` holds
the arithmetic and the report): read ``/proc/PID/smaps_rollup`` for every process of a
stack, sum it per stack at one instant (:class:`Sampler`), and start the stacks
themselves as children (:class:`Child`, :func:`measure_stack`, :func:`measure_class`)
so that each student is one process tree; their CPU comes from ``wait4``.

Why PSS (proportional set size): a page mapped by k processes counts 1/k in each. So
the jars' page cache, the class-data archives (the brokers' and Spark's ``.jsa``) and
the shared libraries, mapped by every student's JVMs, count once across the class --
which RSS, counting them in every process, does not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ...errors import LabError, TimedOut, bad_value
from ...runtime.profile import PROFILE_ENV
from ...waiting import wait_until
from . import stacks

KB = 1024
GB = 1024**3

# --- reading memory ----------------------------------------------------------------------


@dataclass(frozen=True)
class Memory:
    """One process's (or a sum of processes') memory, in bytes."""

    pss: int = 0
    rss: int = 0
    pss_anon: int = 0
    pss_file: int = 0
    swap_pss: int = 0

    def __add__(self, other: Memory) -> Memory:
        return Memory(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))


def astuple(m: Memory) -> tuple[int, ...]:
    return (m.pss, m.rss, m.pss_anon, m.pss_file, m.swap_pss)


_FIELDS = {"Pss:": "pss", "Rss:": "rss", "Pss_Anon:": "pss_anon", "Pss_File:": "pss_file",
           "SwapPss:": "swap_pss"}


def parse_smaps_rollup(text: str) -> Memory:
    """``/proc/PID/smaps_rollup`` as a :class:`Memory` (the kernel writes kB).

    Raises ``ValueError`` naming the line when the text has no ``Pss:`` line or a field
    is not ``<number> kB`` -- a wrong figure must not pass for a small one.
    """
    got: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in _FIELDS:
            continue
        if len(parts) != 3 or parts[2] != "kB" or not parts[1].isdigit():
            raise ValueError(f"smaps_rollup line not '<field> <number> kB': {line!r}")
        got[_FIELDS[parts[0]]] = int(parts[1]) * KB
    if "pss" not in got:
        raise ValueError("smaps_rollup has no 'Pss:' line (kernel older than 4.14?)")
    return Memory(**got)


def read_memory(pid: int, proc: Path = Path("/proc")) -> Memory | None:
    """One process's memory, or None if it is gone (or not ours to read)."""
    try:
        text = (proc / str(pid) / "smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    except OSError:  # ESRCH mid-read: the process exited
        return None
    return parse_smaps_rollup(text) if text.strip() else None


def tree(root: int) -> list[int]:
    """``root`` and every process below it (parents first); [] if it is gone."""
    import psutil

    try:
        top = psutil.Process(root)
        return [root, *(p.pid for p in top.children(recursive=True))]
    except psutil.NoSuchProcess:
        return []


def total_memory(pids: Iterable[int], read: Callable[[int], Memory | None] = read_memory
                 ) -> tuple[Memory, int]:
    """The summed memory of ``pids`` and how many of them could be read (a process
    that ended meanwhile is not counted)."""
    total, count = Memory(), 0
    for pid in pids:
        m = read(pid)
        if m is not None:
            total, count = total + m, count + 1
    return total, count


def tree_memory(root: int, read: Callable[[int], Memory | None] = read_memory
                ) -> tuple[Memory, int]:
    """The summed memory of ``root``'s tree and how many processes it counted."""
    return total_memory(tree(root), read)


def tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of the processes of ``root``'s tree alive now, with
    the children each already waited for."""
    import psutil

    total = 0.0
    for pid in tree(root):
        try:
            t = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


#: What a process of a student's stack is, from its command line (first match wins).
ROLES = (("kafka.Kafka", "broker JVM"), ("ConnectDistributed", "Connect worker JVM"),
         ("org.apache.spark", "Spark driver JVM"), ("org.apache.kafka", "Kafka tool JVM"),
         ("reaper.py", "reapers"), ("proxy.engine", "fault proxy"),
         ("spark.driver", "child driver (Python)"), ("grade.child", "grader children"),
         ("services.", "services"),
         ("chapters.at_least_once.autocommit", "auto-commit consumer"),
         ("ipykernel", "kernel (Python)"),
         ("classroom.sizing.stacks stack", "kernel (Python)"),
         ("classroom.sizing.stacks student", "papermill (the server's part)"))


def role(cmdline: Sequence[str], name: str = "") -> str:
    """A process's part in a student's stack, for the breakdown (its name if unknown)."""
    line = " ".join(cmdline)
    return next((r for key, r in ROLES if key in line), name or "?")


def _tree_by_role(root: int, cpu: dict[int, float] | None = None
                  ) -> tuple[Memory, int, dict[str, int]]:
    """:func:`tree_memory`, plus the PSS of each part of the tree by :func:`role`; and
    each process's own CPU seconds so far into ``cpu`` (by pid)."""
    import psutil

    total, count, parts = Memory(), 0, {}
    for pid in tree(root):
        m = read_memory(pid)
        if m is None:
            continue
        try:
            p = psutil.Process(pid)
            part = role(p.cmdline(), p.name())
            if cpu is not None:
                t = p.cpu_times()
                cpu[pid] = max(cpu.get(pid, 0.0), t.user + t.system)
        except psutil.Error:
            part = "?"
        total, count = total + m, count + 1
        parts[part] = parts.get(part, 0) + m.pss
    return total, count, parts


# --- sampling stacks ---------------------------------------------------------------------


@dataclass
class Sample:
    """One instant: each stack's memory (by label) and how many processes it has."""

    t: float
    stacks: dict[str, Memory]
    procs: dict[str, int]

    @property
    def total(self) -> Memory:
        out = Memory()
        for m in self.stacks.values():
            out = out + m
        return out


class Sampler:
    """Samples every stack's process tree every ``interval`` s in a thread.

    ``roots`` maps a label (a student) to the pid of the stack's top process; a root
    added later (``add``) is sampled from then on.
    """

    def __init__(self, roots: Mapping[str, int] | None = None, interval: float = 0.5,
                 measure: Callable[[int], tuple[Memory, int]] = tree_memory) -> None:
        self.roots = dict(roots or {})
        #: every pid seen in a stack's tree (what must be gone once the stack stopped)
        self.seen: set[int] = set()
        self.interval = interval
        self.measure = measure
        self.samples: list[Sample] = []
        #: at the peak so far: each stack's PSS by part (:func:`role`), bytes
        self.breakdown: dict[str, dict[str, int]] = {}
        #: each stack's processes' own CPU seconds, as last seen alive (by pid): what a
        #: stack used, whoever reaps its JVMs (``wait4`` counts only the reaped ones)
        self.cpu: dict[str, dict[int, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="plan-sampler", daemon=True)
        self.t0 = time.monotonic()

    def add(self, label: str, pid: int) -> None:
        self.roots[label] = pid

    def cpu_seconds(self, label: str) -> float:
        """CPU seconds of ``label``'s processes (a process living under one sampling
        interval is missed: the figure is a lower bound)."""
        return sum(self.cpu.get(label, {}).values())

    def sample(self) -> Sample:
        stacks, procs, parts = {}, {}, {}
        for label, pid in list(self.roots.items()):
            if self.measure is tree_memory:  # the real thing: also what each part holds
                stacks[label], procs[label], parts[label] = _tree_by_role(
                    pid, self.cpu.setdefault(label, {}))
                self.seen.update(tree(pid))
            else:
                stacks[label], procs[label] = self.measure(pid)
        s = Sample(time.monotonic() - self.t0, stacks, procs)
        if not self.samples or s.total.pss > max(x.total.pss for x in self.samples):
            self.breakdown = parts
        self.samples.append(s)
        return s

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@dataclass
class Peaks:
    """What a run of samples says: the peak of the stacks' PSS summed at one instant,
    each stack's own peak PSS and RSS, and the sample count."""

    total_pss: int
    total_rss: int
    stack_pss: dict[str, int]
    stack_rss: dict[str, int]
    samples: int


def peaks(samples: Sequence[Sample]) -> Peaks:
    """The peaks of a run. Raises ``ValueError`` on a run without samples."""
    if not samples:
        raise ValueError("no samples were taken: nothing ran long enough to measure")
    best = max(samples, key=lambda s: s.total.pss)
    labels = {label for s in samples for label in s.stacks}
    return Peaks(
        best.total.pss, max(s.total.rss for s in samples),
        {lb: max(s.stacks[lb].pss for s in samples if lb in s.stacks) for lb in labels},
        {lb: max(s.stacks[lb].rss for s in samples if lb in s.stacks) for lb in labels},
        len(samples))


def outlived(pids: Iterable[int], grace: float = 5.0) -> list[str]:
    """Processes of ``pids`` still running after ``grace`` seconds (zombies aside), as
    ``pid name`` -- what a stopped stack must not leave."""
    import psutil

    pids = list(pids)
    left: list[str] = []

    def gone() -> bool:
        left.clear()
        for pid in pids:
            try:
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{pid} {p.name()}")
            except psutil.NoSuchProcess:
                continue
        return not left

    try:
        wait_until("the processes to end", gone, grace, interval=0.2)
    except TimedOut:  # the survivors are the answer: the caller names them
        pass
    return left


# --- the parent: start children, sample them ---------------------------------------------


class Child:
    """One child run, its marked lines collected by a thread."""

    #: what a child runs (its arguments follow): the stacks' entry point
    COMMAND = (sys.executable, "-m", "deliverylab.classroom.sizing.stacks")

    def __init__(self, args: list[str], profile: str, log: Path,
                 command: Sequence[str] = COMMAND) -> None:
        env = {**os.environ, PROFILE_ENV: profile}
        lib = str(Path(__file__).resolve().parents[3])
        env["PYTHONPATH"] = lib + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH")
                                   else "")
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "w")  # noqa: SIM115  (closed in wait())
        self.name = " ".join(args)
        self.proc = subprocess.Popen([*command, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self._log, env=env,
                                     text=True)
        self.events: dict[str, dict[str, Any]] = {}
        self.cpu_at: dict[str, float] = {}
        self.t0 = time.monotonic()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._log.write(line)
            if line.startswith(stacks.MARK):
                event = json.loads(line[len(stacks.MARK):])
                self.cpu_at[event["event"]] = tree_cpu(self.proc.pid)
                self.events[event["event"]] = event

    def wait_for(self, event: str, timeout: float) -> dict[str, Any]:
        def alive() -> None:
            if event not in self.events and (done := _exited(self.proc.pid)) is not None:
                raise LabError(f"the child {self.name!r} exited ({done.si_status}) "
                               f"before '{event}'; its log: {self.log}")

        wait_until(f"the child {self.name!r} to reach '{event}'", lambda: event in self.events,
                   timeout, check=alive, interval=0.1, explain=lambda: f"; its log: {self.log}")
        return self.events[event]

    def wait(self, timeout: float) -> tuple[int, float, float]:
        """Close stdin, wait; (exit code, CPU seconds of the whole tree, wall seconds).

        Reaped with ``wait4`` for its resource usage: the CPU of the child and of every
        descendant it waited for (the JVMs a cluster stops, the kernel papermill stops).
        """
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            wait_until(f"the child {self.name!r} to end",
                       lambda: _exited(self.proc.pid) is not None, timeout, interval=0.1)
        except TimedOut:  # killed and reaped first, then named with its log
            self.proc.kill()
            self.proc.wait()
            self._log.close()
            raise LabError(f"the child {self.name!r} did not end within {timeout:.0f} s "
                           f"(killed); its log: {self.log}") from None
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not reap
        self._reader.join(timeout=10)
        self._log.close()
        return (self.proc.returncode, usage.ru_utime + usage.ru_stime,
                time.monotonic() - self.t0)


def _exited(pid: int) -> Any:
    """How our child ``pid`` ended (``waitid``'s result), None while it runs. Asked
    without reaping it, so its resource usage is still there for ``wait4``."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)


def measure_stack(chapter: str, profile: str, logs: Path, hold: float = 3.0,
                  timeout: float = 240.0) -> dict[str, Any]:
    """One chapter's stack alone: peak PSS/RSS, start CPU and wall, total CPU."""
    chapter = stacks.chapter_name(chapter)
    child = Child(["stack", chapter], profile, logs / f"stack-{profile}-{chapter}.log")
    with Sampler({chapter: child.proc.pid}) as sampler:
        try:
            begin = child.wait_for("begin", 60)
            ready = child.wait_for("ready", timeout)
            child.wait_for("worked", timeout)
            time.sleep(hold)
        except BaseException:
            child.proc.kill()
            raise
    code, cpu, wall = child.wait(60)
    if code != 0 or "stopped" not in child.events:
        raise LabError(f"the {chapter} stack did not stop cleanly (exit {code}); "
                       f"its log: {child.log}")
    left = outlived(sampler.seen)
    if left:  # a JVM left running would be counted in the next stack's host, and leak
        raise LabError(f"the {chapter} stack stopped but left {left} running; its log: "
                       f"{child.log}")
    p = peaks(sampler.samples)
    return {"chapter": chapter, "profile": profile, **asdict(stacks.STACKS[chapter]),
            "peak_pss": p.total_pss, "peak_rss": p.total_rss,
            "procs": max(s.procs.get(chapter, 0) for s in sampler.samples),
            "start_wall_s": round(ready["t"] - begin["t"], 2),
            "start_cpu_s": round(child.cpu_at["ready"] - child.cpu_at["begin"], 2),
            "cpu_s": round(max(cpu, sampler.cpu_seconds(chapter)), 2),
            "wall_s": round(wall, 2), "samples": p.samples,
            "parts": sampler.breakdown.get(chapter, {})}


def measure_class(chapter: str, students: int, profile: str, out: Path,
                  kind: str = "stack", timeout: float = 420.0) -> dict[str, Any]:
    """``students`` running ``chapter`` at once: the peak of their summed PSS, each one's
    peak, CPU and wall, and whether each held.

    ``kind="stack"``: each student's stack alone (:func:`stacks.run_stack`), all started
    together and measured while all hold their plateau; ``kind="chapter"``: each
    student's whole chapter through papermill (:func:`stacks.run_student`), its claim
    decided as in CI."""
    if kind not in ("stack", "chapter"):
        raise bad_value("kind", kind, "'stack' or 'chapter'")
    chapter = stacks.chapter_name(chapter)
    tag = f"{kind}-{profile}-{students}"
    kids = {f"s{i + 1}": Child(["stack", chapter] if kind == "stack" else
                               ["student", chapter, str(out / f"{tag}-s{i + 1}")],
                               profile, out / f"{tag}-s{i + 1}.log")
            for i in range(students)}
    with Sampler({k: c.proc.pid for k, c in kids.items()}) as sampler:
        try:
            if kind == "stack":
                for c in kids.values():
                    c.wait_for("worked", timeout)
                time.sleep(3.0)  # every stack on its plateau at once
            results = {k: c.wait(timeout) for k, c in kids.items()}
        except BaseException:
            for c in kids.values():
                c.proc.kill()
            raise
    left = outlived(sampler.seen)
    if left:
        raise LabError(f"{tag}: the students' processes {left} outlived them; logs in {out}")
    p = peaks(sampler.samples)

    def held(k: str, code: int) -> bool:
        if kind == "stack":
            return code == 0 and "stopped" in kids[k].events
        return bool(kids[k].events.get("verdict", {}).get("passed"))

    per = {k: {"exit": code, "cpu_s": round(max(cpu, sampler.cpu_seconds(k)), 1),
               "wall_s": round(wall, 1),
               "passed": held(k, code), "error": kids[k].events.get("verdict", {}).get("error"),
               "peak_pss": p.stack_pss[k], "peak_rss": p.stack_rss[k]}
           for k, (code, cpu, wall) in results.items()}
    return {"chapter": chapter, "profile": profile, "kind": kind, "students": students,
            "peak_pss": p.total_pss, "peak_rss": p.total_rss, "per_student": per,
            "samples": p.samples, "parts": sampler.breakdown}
