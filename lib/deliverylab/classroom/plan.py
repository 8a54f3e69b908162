"""Sizing a classroom: what one student's stack costs, measured, and how many fit a host.

``make classroom-plan`` (``python -m deliverylab.classroom.plan``) starts what each
chapter's kernel starts (:mod:`deliverylab.classroom.stacks`), one stack at a time and
then 1, 2, 3 students' chapter 02 at once, samples every process of each stack, and
prints how many students fit a host of given cores and memory, with the hub settings.

Memory is counted as **PSS** (proportional set size, ``/proc/PID/smaps_rollup``): a page
mapped by k processes counts 1/k in each. So the jars' page cache, the class-data
archives (the brokers' and Spark's ``.jsa``) and the shared libraries, mapped by every
student's JVMs, count once across the class -- which RSS, counting them in every
process, does not. Summed over every process of every stack at one instant, PSS is the
memory those stacks hold together; the **marginal** figure is how much that sum grows
per additional student (the slope over 1, 2, 3 students), which is what a host's memory
must provide per seat. A server's *memory limit* is another matter: a cgroup charges a
page to the group that first touched it, so one student may be charged for the shared
pages of all: the limit is set from the peak **RSS** of one stack, with headroom.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import LabError, bad_value
from ..runtime.profile import PROFILE_ENV, PROFILES
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


def tree_memory(root: int, read: Callable[[int], Memory | None] = read_memory
                ) -> tuple[Memory, int]:
    """The summed memory of ``root``'s tree and how many processes it counted."""
    total, count = Memory(), 0
    for pid in tree(root):
        m = read(pid)
        if m is not None:
            total, count = total + m, count + 1
    return total, count


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
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="plan-sampler", daemon=True)
        self.t0 = time.monotonic()

    def add(self, label: str, pid: int) -> None:
        self.roots[label] = pid

    def sample(self) -> Sample:
        stacks, procs = {}, {}
        for label, pid in list(self.roots.items()):
            stacks[label], procs[label] = self.measure(pid)
            if self.measure is tree_memory:
                self.seen.update(tree(pid))
        s = Sample(time.monotonic() - self.t0, stacks, procs)
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


def marginal(totals: Mapping[int, float]) -> float:
    """Memory per additional student: the least-squares slope of the total over the
    number of students (``{1: P1, 2: P2, 3: P3}``). With two points it is their
    difference; one point has no slope (``ValueError``)."""
    points = sorted(totals.items())
    if len(points) < 2:
        raise bad_value("totals", dict(totals), "peaks for at least two class sizes")
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        raise bad_value("totals", dict(totals), "peaks for at least two different sizes")
    return sum((x - mx) * (y - my) for x, y in points) / sxx


# --- how many fit ------------------------------------------------------------------------

#: Memory kept for the host itself (kernel, page cache for the jars, the hub, the
#: proxy, sshd): not measured here -- a conservative allowance, said in the output.
HOST_RESERVE_GB = 2.0
#: A server's memory limit over its measured peak RSS: the peak of a chapter run
#: with a student's own extra cells is not the bench's.
LIMIT_HEADROOM = 1.25
#: jupyterhub-idle-culler's own default ``--timeout`` (seconds), also Zero to
#: JupyterHub's ``cull.timeout``; used when every student has a seat.
CULL_DEFAULT_S = 3600
#: When a class has more students than seats, idle stacks must give their seat back
#: sooner: a restarted chapter costs its start time again (printed beside it).
CULL_SHORT_S = 900


@dataclass
class Figures:
    """One profile's measured figures for the fit (bytes, CPU seconds, seconds)."""

    profile: str
    marginal_pss: float
    peak_rss: float
    #: CPU seconds one student's chapter run takes, and its wall time alone.
    run_cpu_s: float
    run_wall_s: float
    #: CPU seconds and wall time of one stack's start (cluster ready, Spark up).
    start_cpu_s: float
    start_wall_s: float


@dataclass
class Fit:
    """How many students fit, why, and the hub settings."""

    cores: int
    memory_gb: float
    by_memory: int
    by_cpu: int
    students: int
    mem_limit_gb: float
    cpu_limit: float
    concurrent_spawn_limit: int
    cull_timeout_s: int
    notes: list[str] = field(default_factory=list)


def _round_up(value: float, step: float) -> float:
    return math.ceil(value / step - 1e-9) * step


def fit(fig: Figures, cores: int, memory_gb: float, class_size: int | None = None,
        reserve_gb: float = HOST_RESERVE_GB) -> Fit:
    """Students a host fits, and the JupyterHub settings that go with it.

    - memory: ``(memory - reserve) / marginal PSS`` seats;
    - CPU: a student whose chapter runs takes ``run_cpu_s`` CPU seconds in
      ``run_wall_s``, so ``cores / (run_cpu_s / run_wall_s)`` run at once without
      waiting on each other (a chapter's timeouts assume it is not starved);
    - memory limit per server: peak RSS x :data:`LIMIT_HEADROOM`, to 0.25 GB;
    - concurrent spawn limit: starts that together keep the cores busy, no more
      (``cores / (start_cpu_s / start_wall_s)``), at least 1;
    - cull timeout: the culler's default when every student has a seat, else shorter.
    """
    if cores < 1 or not isinstance(cores, int):
        raise bad_value("cores", cores, "a whole number of cores, at least 1")
    if memory_gb <= reserve_gb:
        raise bad_value("memory_gb", memory_gb, f"more than the host reserve ({reserve_gb} GB)")
    if fig.marginal_pss <= 0 or fig.run_wall_s <= 0 or fig.start_wall_s <= 0:
        raise bad_value("figures", asdict(fig), "positive marginal memory and wall times")
    by_memory = int((memory_gb - reserve_gb) * GB // fig.marginal_pss)
    run_cores = max(fig.run_cpu_s / fig.run_wall_s, 1e-6)
    by_cpu = int(cores / run_cores + 1e-9)
    start_cores = max(fig.start_cpu_s / fig.start_wall_s, 1e-6)
    spawn = max(1, int(cores / start_cores + 1e-9))
    students = min(by_memory, by_cpu)
    notes = [f"host reserve {reserve_gb:g} GB (not measured: OS, hub, page cache)",
             f"one chapter run uses {run_cores:.2f} cores on average; a start "
             f"{start_cores:.2f} cores for {fig.start_wall_s:.0f} s"]
    short = class_size is not None and class_size > students
    if short:
        notes.append(f"{class_size} students, {students} seats: the rest wait for a "
                     f"culled server; a restarted stack costs {fig.start_wall_s:.0f} s")
    return Fit(cores, memory_gb, by_memory, by_cpu, students,
               mem_limit_gb=_round_up(fig.peak_rss * LIMIT_HEADROOM / GB, 0.25),
               cpu_limit=float(min(cores, max(1.0, _round_up(run_cores, 0.5)))),
               concurrent_spawn_limit=min(spawn, max(students, 1)),
               cull_timeout_s=CULL_SHORT_S if short else CULL_DEFAULT_S, notes=notes)


def hub_settings(f: Fit) -> str:
    """The fit as lines of a ``jupyterhub_config.py``."""
    return "\n".join([
        f"c.Spawner.mem_limit = '{f.mem_limit_gb:g}G'",
        f"c.Spawner.cpu_limit = {f.cpu_limit:g}",
        f"c.JupyterHub.concurrent_spawn_limit = {f.concurrent_spawn_limit}",
        f"c.JupyterHub.active_server_limit = {f.students}",
        f"# jupyterhub-idle-culler --timeout={f.cull_timeout_s}",
    ])


def gb(value: float) -> str:
    return f"{value / GB:.2f} GB"


def outlived(pids: Iterable[int], grace: float = 5.0) -> list[str]:
    """Processes of ``pids`` still running after ``grace`` seconds (zombies aside), as
    ``pid name`` -- what a stopped stack must not leave."""
    import psutil

    end = time.monotonic() + grace
    while True:
        left = []
        for pid in pids:
            try:
                p = psutil.Process(pid)
                if p.status() != psutil.STATUS_ZOMBIE:
                    left.append(f"{pid} {p.name()}")
            except psutil.NoSuchProcess:
                continue
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.2)


# --- the parent: start children, sample them ---------------------------------------------


class Child:
    """One child run, its marked lines collected by a thread."""

    #: what a child runs (its arguments follow): the stacks' entry point
    COMMAND = (sys.executable, "-m", "deliverylab.classroom.stacks")

    def __init__(self, args: list[str], profile: str, log: Path,
                 command: Sequence[str] = COMMAND) -> None:
        env = {**os.environ, PROFILE_ENV: profile}
        lib = str(Path(__file__).resolve().parents[2])
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
        end = time.monotonic() + timeout
        while event not in self.events:
            if (done := _exited(self.proc.pid)) is not None:
                raise LabError(f"the child {self.name!r} exited ({done.si_status}) "
                               f"before '{event}'; its log: {self.log}")
            if time.monotonic() > end:
                raise LabError(f"the child {self.name!r} did not reach '{event}' within "
                               f"{timeout:.0f} s; its log: {self.log}")
            time.sleep(0.1)
        return self.events[event]

    def wait(self, timeout: float) -> tuple[int, float, float]:
        """Close stdin, wait; (exit code, CPU seconds of the whole tree, wall seconds).

        Reaped with ``wait4`` for its resource usage: the CPU of the child and of every
        descendant it waited for (the JVMs a cluster stops, the kernel papermill stops).
        """
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        end = time.monotonic() + timeout
        while _exited(self.proc.pid) is None and time.monotonic() < end:
            time.sleep(0.1)
        if _exited(self.proc.pid) is None:
            self.proc.kill()
            self.proc.wait()
            self._log.close()
            raise LabError(f"the child {self.name!r} did not end within {timeout:.0f} s "
                           f"(killed); its log: {self.log}")
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
            "cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "samples": p.samples}


def measure_class(chapter: str, students: int, profile: str, out: Path,
                  timeout: float = 420.0) -> dict[str, Any]:
    """``students`` kernels running ``chapter`` at once (papermill): the peak of their
    summed PSS, each one's peak, CPU and wall, and whether each claim held."""
    chapter = stacks.chapter_name(chapter)
    kids = {f"s{i + 1}": Child(["student", chapter, str(out / f"{profile}-{students}-s{i + 1}")],
                               profile, out / f"{profile}-{students}-s{i + 1}.log")
            for i in range(students)}
    with Sampler({k: c.proc.pid for k, c in kids.items()}) as sampler:
        results = {k: c.wait(timeout) for k, c in kids.items()}
    p = peaks(sampler.samples)
    per = {k: {"exit": code, "cpu_s": round(cpu, 1), "wall_s": round(wall, 1),
               "passed": kids[k].events.get("verdict", {}).get("passed", False),
               "error": kids[k].events.get("verdict", {}).get("error"),
               "peak_pss": p.stack_pss[k], "peak_rss": p.stack_rss[k]}
           for k, (code, cpu, wall) in results.items()}
    return {"chapter": chapter, "profile": profile, "students": students,
            "peak_pss": p.total_pss, "peak_rss": p.total_rss, "per_student": per,
            "samples": p.samples}


# --- the report --------------------------------------------------------------------------


def load(folder: Path) -> dict[str, Any]:
    """Every measurement saved in ``folder``: ``stacks-<profile>.json`` (a list of
    :func:`measure_stack` rows) and ``class-<profile>-<n>.json``. A file that cannot be
    read is named in one line (``LabError``), never skipped."""
    got: dict[str, Any] = {"stacks": {}, "class": {}}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except ValueError as exc:
            raise LabError(f"{path}: not JSON ({exc}); delete it or measure again") from exc
        if path.name.startswith("stacks-"):
            got["stacks"][path.stem.removeprefix("stacks-")] = data
        elif path.name.startswith("class-"):
            got["class"].setdefault(data["profile"], {})[data["students"]] = data
    return got


def figures(data: dict[str, Any], profile: str, chapter: str = "02_at_least_once"
            ) -> Figures:
    """The fit's inputs for ``profile``: the class runs of ``chapter`` (marginal PSS over
    1, 2, 3 students; one student's peak RSS and CPU) and its stack's start."""
    runs = data["class"].get(profile, {})
    stack = next((r for r in data["stacks"].get(profile, []) if r["chapter"] == chapter), None)
    if 1 not in runs or len(runs) < 2 or stack is None:
        raise LabError(f"profile {profile}: the fit needs chapter {chapter}'s class runs with "
                       f"1 and more students and its stack (have students "
                       f"{sorted(runs)}, stack {'yes' if stack else 'no'}): run "
                       f"`make classroom-plan` first")
    one = runs[1]["per_student"]["s1"]
    return Figures(profile, marginal({int(n): r["peak_pss"] for n, r in runs.items()}),
                   one["peak_rss"], one["cpu_s"], one["wall_s"], stack["start_cpu_s"],
                   stack["start_wall_s"])


def stack_table(data: dict[str, Any]) -> str:
    """Each chapter's stack alone, every profile side by side."""
    profiles = [p for p in PROFILES if p in data["stacks"]]
    rows = {r["chapter"]: {} for p in profiles for r in data["stacks"][p]}
    for p in profiles:
        for r in data["stacks"][p]:
            rows[r["chapter"]][p] = r
    head = "| chapter | brokers | Spark |" + "".join(
        f" {p}: peak PSS | {p}: start (s, CPU s) |" for p in profiles)
    lines = [head, "|" + "---|" * (3 + 2 * len(profiles))]
    for ch, by in rows.items():
        any_row = next(iter(by.values()))
        spark = "2 drivers" if any_row["child_driver"] else ("yes" if any_row["spark"] else "no")
        extra = f" + {any_row['connect_workers']} Connect" if any_row["connect_workers"] else ""
        cells = "".join(f" {gb(by[p]['peak_pss'])} | {by[p]['start_wall_s']:.0f}, "
                        f"{by[p]['start_cpu_s']:.0f} |" if p in by else " - | - |"
                        for p in profiles)
        lines.append(f"| {ch} | {any_row['brokers']}{extra} | {spark} |{cells}")
    return "\n".join(lines)


def class_table(data: dict[str, Any]) -> str:
    """Chapter 02 run by 1, 2, 3 students at once, per profile, with the marginal PSS."""
    lines = ["| profile | students | peak PSS, all | per student: peak PSS / RSS | "
             "CPU s, wall s | claims held |", "|---|---|---|---|---|---|"]
    for p in [p for p in PROFILES if p in data["class"]]:
        for n, r in sorted(data["class"][p].items()):
            per = r["per_student"].values()
            lines.append(
                f"| {p} | {n} | {gb(r['peak_pss'])} | "
                + ", ".join(f"{gb(s['peak_pss'])} / {gb(s['peak_rss'])}" for s in per)
                + " | " + ", ".join(f"{s['cpu_s']:.0f}, {s['wall_s']:.0f}" for s in per)
                + f" | {sum(bool(s['passed']) for s in per)}/{n} |")
        if len(data["class"][p]) >= 2:
            m = marginal({int(n): r["peak_pss"] for n, r in data["class"][p].items()})
            lines.append(f"| {p} | **marginal** | **{gb(m)} per additional student** "
                         "| | | |")
    return "\n".join(lines)


def report(data: dict[str, Any], cores: int, memory_gb: float,
           class_size: int | None = None) -> str:
    parts = ["### Each chapter's stack alone", "", stack_table(data), "",
             "### Chapter 02 by 1, 2, 3 students at once", "", class_table(data), ""]
    for p in [p for p in PROFILES if p in data["class"]]:
        f = fit(figures(data, p), cores, memory_gb, class_size)
        parts += [f"### Profile {p} on {cores} cores, {memory_gb:g} GB",
                  f"{f.students} students (memory allows {f.by_memory}, CPU {f.by_cpu})",
                  *(f"- {n}" for n in f.notes), "", "```python", hub_settings(f), "```", ""]
    return "\n".join(parts)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m deliverylab.classroom.plan",
                                description="Measure student stacks; size a classroom.")
    p.add_argument("--out", type=Path, default=Path("results/classroom-plan"),
                   help="where measurements are saved and read")
    p.add_argument("--profile", action="append", choices=list(PROFILES),
                   help="profiles to measure (default: all)")
    p.add_argument("--stacks", nargs="*", default=None,
                   help="measure these chapters' stacks alone ('all': every chapter)")
    p.add_argument("--students", type=int, nargs="*", default=None,
                   help="measure chapter 02 run by this many students at once (e.g. 1 2 3)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    p.add_argument("--memory", type=float, default=None,
                   help="host memory in GB (default: this machine's)")
    p.add_argument("--class-size", type=int, default=None)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profiles = args.profile or list(PROFILES)
    args.out.mkdir(parents=True, exist_ok=True)
    logs = args.out / "logs"
    for profile in profiles:
        if args.stacks is not None:
            chosen = list(stacks.STACKS) if args.stacks in ([], ["all"]) else args.stacks
            path = args.out / f"stacks-{profile}.json"
            rows = {r["chapter"]: r for r in (json.loads(path.read_text())
                                               if path.exists() else [])}
            for ch in chosen:
                row = measure_stack(ch, profile, logs)
                print(f"{profile} {row['chapter']}: peak PSS {gb(row['peak_pss'])}, RSS "
                      f"{gb(row['peak_rss'])}, start {row['start_wall_s']} s "
                      f"({row['start_cpu_s']} CPU s)", flush=True)
                rows[row["chapter"]] = row
                path.write_text(json.dumps(sorted(rows.values(), key=lambda r: r["chapter"]),
                                           indent=1))
        for n in args.students or []:
            r = measure_class("02", n, profile, logs)
            (args.out / f"class-{profile}-{n}.json").write_text(json.dumps(r, indent=1))
            print(f"{profile} x{n}: peak PSS {gb(r['peak_pss'])}; "
                  + ", ".join(f"{k} {'held' if s['passed'] else 'FAILED ' + str(s['error'])}"
                              for k, s in r["per_student"].items()), flush=True)
    memory = args.memory or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GB
    data = load(args.out)
    if not data["class"]:
        print(f"no class runs measured in {args.out} yet: the fit needs chapter 02 by 1 and "
              "more students (`make classroom-plan`, or --stacks 02 --students 1 2 3)",
              file=sys.stderr)
        return 0 if args.stacks is not None else 1
    print(report(data, args.cores, round(memory, 1), args.class_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
