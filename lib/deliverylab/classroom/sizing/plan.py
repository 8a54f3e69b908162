"""Sizing a classroom: what one student's stack costs, measured, and how many fit a host.

``make classroom-plan`` (``python -m deliverylab.classroom.sizing.plan``) starts what each
chapter's kernel starts (:mod:`deliverylab.classroom.sizing.stacks`), one stack at a time and
then 1, 2, 3 students' chapter 02 at once, samples every process of each stack, and
prints how many students fit a host of given cores and memory, with the hub settings.

Memory is counted as **PSS** (proportional set size, read by
:mod:`deliverylab.classroom.sizing.measure`): shared pages (jars, class archives, libraries)
count once across the class. Summed over every process of every stack at one instant,
PSS is the memory those stacks hold together; the **marginal** figure is how much that sum grows
per additional student (the slope over 1, 2, 3 students), which is what a host's memory
must provide per seat. A server's *memory limit* is another matter: a cgroup charges a
page to the group that first touched it, so one student may be charged for the shared
pages of all: the limit is set from the peak **RSS** of one stack, with headroom.

Chapter 02 is measured here from its stacks up; the other chapters are measured whole,
through a real JupyterHub, by ``bench/hub_course.py --save`` (``chapters-<profile>.json``,
:mod:`.hub.course`). The memory limit covers the heaviest chapter measured and a seat
holds the heaviest chapter's run, whichever chapter a student is in (issue 31).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ...errors import LabError, bad_value
from ...runtime.profile import PROFILES
from ..hub.course import parse_peaks, peaks_path
from . import stacks
from .measure import GB, measure_class, measure_stack


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
#: The fit's inputs of the last full measurement, per profile, checked in beside this
#: module (``--record`` writes it): what ``make doctor``, ``make classroom``'s default
#: cap, the Kubernetes values (:mod:`.kubernetes`) and the guides' tables read, so they
#: give one figure. Measurements of this host (``--out``) win where they are complete.
RECORD = Path(__file__).with_name("sizing.json")
#: Where ``make classroom-plan`` and ``bench/hub_course.py --save`` keep measurements.
PLAN_FOLDER = Path(__file__).resolve().parents[4] / "results" / "classroom-plan"
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
    #: The chapter whose peak RSS sets the memory limit, and the one whose run a seat
    #: must hold above chapter 02's (:func:`figures`); what the fit says about them.
    limit_chapter: str = "02_at_least_once"
    seat_chapter: str = "02_at_least_once"
    notes: list[str] = field(default_factory=list)


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
    - memory limit per server: peak RSS (the heaviest chapter's) x
      :data:`LIMIT_HEADROOM`, to 0.25 GB;
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
    notes = [*fig.notes,
             f"host reserve {reserve_gb:g} GB (not measured: OS, hub, page cache)",
             f"one chapter run uses {run_cores:.2f} cores on average; a start "
             f"{start_cores:.2f} cores for {fig.start_wall_s:.0f} s"]
    short = class_size is not None and class_size > students
    if short:
        notes.append(f"{class_size} students, {students} seats: the rest wait for a "
                     f"culled server; a restarted stack costs {fig.start_wall_s:.0f} s")
    return Fit(cores, memory_gb, by_memory, by_cpu, students,
               mem_limit_gb=limit_gb(fig.peak_rss),
               cpu_limit=float(min(cores, max(1.0, _round_up(run_cores, 0.5)))),
               concurrent_spawn_limit=min(spawn, max(students, 1)),
               cull_timeout_s=CULL_SHORT_S if short else CULL_DEFAULT_S, notes=notes)


def default_mem_limit_gb(folder: Path = PLAN_FOLDER, profile: str = "light",
                         record: Path = RECORD) -> float:
    """Each student's memory cap when the instructor gives none (``make classroom``'s
    default): the heaviest chapter's peak RSS -- the recorded one (:data:`RECORD`), or
    a larger one saved for ``profile`` in ``folder``'s ``chapters-<profile>.json`` --
    times :data:`LIMIT_HEADROOM`, to 0.25 GB, as :func:`fit` sizes it."""
    peak = recorded(profile, record).peak_rss
    path = peaks_path(folder, profile)
    if path.exists():
        rows = parse_peaks(path.read_text(), str(path))
        peak = max([peak, *(r["peak_rss"] for r in rows if r["peak_rss"])])
    return limit_gb(peak)


def limit_gb(peak_rss: float) -> float:
    """A server's memory limit for a peak RSS (bytes): x :data:`LIMIT_HEADROOM`, up to
    0.25 GB."""
    return _round_up(peak_rss * LIMIT_HEADROOM / GB, 0.25)


# --- the record: one sizing for every reader ----------------------------------------------

#: Figures fields a record holds per profile (``notes`` are the report's, not kept).
RECORD_FIELDS = ("marginal_pss", "peak_rss", "run_cpu_s", "run_wall_s", "start_cpu_s",
                 "start_wall_s", "limit_chapter", "seat_chapter")


def read_record(path: Path = RECORD) -> dict[str, Any]:
    """The record, checked: a profile lacking a field is one ``LabError`` naming it."""
    try:
        data = json.loads(Path(path).read_text())
        profiles = data["profiles"]
        for name, fig in profiles.items():
            if missing := [k for k in RECORD_FIELDS if k not in fig]:
                raise LabError(f"{path}: profile {name} lacks {', '.join(missing)}; "
                               "write it again with --record")
        data["one_student"]["peak_rss"]  # noqa: B018 -- present, or the KeyError below
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LabError(f"{path}: not a sizing record ({exc!r}); write it with "
                       "`python -m deliverylab.classroom.sizing.plan --record`") from exc
    return data


def recorded(profile: str = "light", path: Path = RECORD) -> Figures:
    """``profile``'s recorded figures (:data:`RECORD`)."""
    got = read_record(path)["profiles"]
    if profile not in got:
        raise bad_value("profile", profile, f"one recorded in {path}: {', '.join(got)}")
    fig = Figures(profile, **{k: got[profile][k] for k in RECORD_FIELDS},
                  notes=[f"figures recorded in {Path(path).name}, not measured on this host"])
    fig.notes.append(f"memory limit from {fig.limit_chapter}, memory per seat from "
                     f"{fig.seat_chapter}" + ("" if fig.limit_chapter != "02_at_least_once"
                                              else ": chapter 02 alone, heavier chapters "
                                              "need more"))
    return fig


def record_text(figs: list[Figures], one_student: Mapping[str, Any], source: str) -> str:
    """The record's JSON for ``figs`` (bytes, CPU and wall seconds as measured) and the
    one-student figure ``make doctor`` checks a laptop against."""
    return json.dumps({
        "source": source, "one_student": dict(one_student),
        "profiles": {f.profile: {k: getattr(f, k) for k in RECORD_FIELDS} for f in figs},
    }, indent=1) + "\n"


def host_memory_gb(students: int, fig: Figures, reserve_gb: float = HOST_RESERVE_GB
                   ) -> tuple[float, float]:
    """What a host running ``students`` servers needs (the host reserve plus a seat
    each) and what is comfortable (the reserve plus every student at their cap at
    once), in GB: the same figures :func:`fit` sizes a host with."""
    need = reserve_gb + students * fig.marginal_pss / GB
    return need, reserve_gb + students * limit_gb(fig.peak_rss)


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


# --- the report --------------------------------------------------------------------------


def load(folder: Path) -> dict[str, Any]:
    """Every measurement saved in ``folder``: ``stacks-<profile>.json`` (a list of
    :func:`measure_stack` rows), ``class-<profile>-<n>.json`` (n students' stacks at
    once), ``chapter-<profile>.json`` (one student's whole chapter 02) and
    ``chapters-<profile>.json`` (whole chapters through a hub, ``bench/hub_course.py
    --save``). A file that cannot be read is named in one line (``LabError``), never
    skipped: a fit without it would be wrong without a word."""
    got: dict[str, Any] = {"stacks": {}, "class": {}, "chapter": {}, "chapters": {},
                           "folder": str(folder)}
    for path in sorted(Path(folder).glob("*.json")):
        try:
            text = path.read_text()
        except OSError as exc:
            raise LabError(f"{path}: cannot be read ({exc})") from exc
        if path.name.startswith("chapters-"):
            got["chapters"][path.stem.removeprefix("chapters-")] = parse_peaks(
                text, str(path))
            continue
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise LabError(f"{path}: not JSON ({exc}); delete it or measure again") from exc
        try:
            if path.name.startswith("stacks-"):
                got["stacks"][path.stem.removeprefix("stacks-")] = list(data)
            elif path.name.startswith("class-"):
                got["class"].setdefault(data["profile"], {})[data["students"]] = data
            elif path.name.startswith("chapter-"):
                got["chapter"][data["profile"]] = data
        except (KeyError, TypeError) as exc:
            raise LabError(f"{path}: not a measurement of make classroom-plan (no "
                           f"{exc}); delete it or measure again") from exc
    return got


def figures(data: dict[str, Any], profile: str, chapter: str = "02_at_least_once"
            ) -> Figures:
    """The fit's inputs for ``profile``.

    Memory per seat: the marginal PSS of ``chapter``'s stacks over 1, 2, 3 students at
    once, plus what the whole chapter adds on top of its stack alone (the grader's
    children, Kafka's CLI tools: one student's chapter peak minus one stack's peak, if
    more), so the figure holds *with the chapter running*; plus what the heaviest
    chapter measured whole adds above ``chapter`` (:func:`seat_excess`), since a seat
    must hold whichever chapter its student runs. Memory limit: the largest peak RSS of
    ``chapter``'s run and of every chapter measured whole (:func:`limit_source`). CPU:
    ``chapter``'s run over its wall time (the chapter rows hold no CPU time). Start:
    the stack's.
    """
    runs = data["class"].get(profile, {})
    stack = next((r for r in data["stacks"].get(profile, []) if r["chapter"] == chapter), None)
    run = data["chapter"].get(profile)
    if 1 not in runs or len(runs) < 2 or stack is None or run is None:
        raise LabError(f"profile {profile}: the fit needs chapter {chapter}'s stacks with "
                       f"1 and more students at once, its stack alone and one chapter run "
                       f"(have students {sorted(runs)}, stack {'yes' if stack else 'no'}, "
                       f"chapter run {'yes' if run else 'no'}): run `make classroom-plan`")
    one = run["per_student"]["s1"]
    rows = data["chapters"].get(profile, [])
    limit_chapter, peak_rss = limit_source(rows, chapter,
                                           max(one["peak_rss"], runs[1]["peak_rss"]))
    seat_chapter, excess, why = seat_excess(rows, chapter, one["peak_pss"])
    per_seat = marginal_per_seat(runs, run)
    notes = [f"memory limit from {limit_chapter}'s peak RSS {gb(peak_rss)} x "
             f"{LIMIT_HEADROOM:g}",
             f"memory per seat {gb(per_seat + excess)}: {chapter}'s {gb(per_seat)}"
             + (f" + {gb(excess)} {why}" if excess else f" ({why})")]
    missing = [c for c in stacks.STACKS if c not in {r["chapter"] for r in rows}]
    if not rows:
        notes.append(f"no chapter measured whole for profile {profile}: the limit and "
                     f"the seats cover {chapter} only, and heavier chapters need more; "
                     "measure them (as root, alone): bench/hub_course.py --students 1 "
                     f"--profile {profile} --chapters "
                     f"{' '.join(c.split('_', 1)[0] for c in missing)} "
                     f"--save {data.get('folder', 'results/classroom-plan')}")
    elif [c for c in missing if c != chapter]:
        notes.append("not measured whole, so not covered: "
                     + ", ".join(c for c in missing if c != chapter))
    notes += [f"{r['chapter']}'s claim did not hold in its measured run: its peaks may be "
              "under a whole run's" for r in rows if not r["held"]]
    return Figures(profile, per_seat + excess, peak_rss, one["cpu_s"], one["wall_s"],
                   stack["start_cpu_s"], stack["start_wall_s"], limit_chapter,
                   seat_chapter, notes)


def _heaviest(rows: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    seen = [r for r in rows if r[key] is not None]
    return max(seen, key=lambda r: r[key]) if seen else None


def limit_source(rows: list[dict[str, Any]], chapter: str, chapter_rss: float
                 ) -> tuple[str, float]:
    """The chapter whose peak RSS the memory limit must cover, and that RSS: the largest
    of ``chapter``'s own run and of every chapter row. Rows measured through a hub
    include the student's server, which a server's limit holds too, so taking the
    largest of both methods is what a limit needs."""
    top = _heaviest(rows, "peak_rss")
    if top is None or top["peak_rss"] <= chapter_rss:
        return chapter, chapter_rss
    return top["chapter"], float(top["peak_rss"])


def seat_excess(rows: list[dict[str, Any]], chapter: str, chapter_pss: float
                ) -> tuple[str, float, str]:
    """The heaviest chapter by whole-run PSS, what it adds above ``chapter``'s whole run
    (>= 0) and a line saying against what.

    A fair difference needs both sides measured the same way: rows come through a hub
    (the student's server counted, ~75 MB), ``chapter``'s own run through papermill
    (papermill counted instead, ~90 MB). So ``chapter``'s row, when the rows have one,
    is the reference; only without it is the papermill run used, and the line says so.
    """
    own = next((r for r in rows if r["chapter"] == chapter and r["peak_pss"] is not None),
               None)
    ref = float(own["peak_pss"]) if own else chapter_pss
    top = _heaviest(rows, "peak_pss")
    if top is None:
        return chapter, 0.0, "no chapter measured whole"
    if own is None:
        how = f"{top['chapter']} through the hub, {chapter} without one: papermill in " \
              "place of the server"
    elif own["students"] == top["students"]:
        how = f"both through the hub, {own['students']} student(s) at once"
    else:  # a student's PSS shrinks as more share the pages: said, not corrected
        how = (f"both through the hub, {top['students']} and {own['students']} students "
               "at once")
    if top["peak_pss"] <= ref:
        return chapter, 0.0, f"no chapter measured whole peaks above it; {how}"
    return top["chapter"], top["peak_pss"] - ref, (
        f"for {top['chapter']}, whose run peaks at PSS {gb(top['peak_pss'])} against "
        f"{chapter}'s {gb(ref)} ({how})")


def chapters_table(data: dict[str, Any]) -> str:
    """Whole chapters measured through a hub (``bench/hub_course.py --save``), per
    profile: the largest per-student peaks, in GB."""
    lines = ["| profile | chapter | students at once | peak PSS | peak RSS | cgroup peak "
             "(page cache incl.) | wall s | held |", "|---|---|---|---|---|---|---|---|"]
    for p in PROFILES:
        for r in data["chapters"].get(p, []):
            cells = [gb(r[k]) if r[k] is not None else "-"
                     for k in ("peak_pss", "peak_rss", "cgroup_peak")]
            lines.append(f"| {p} | {r['chapter']} | {r['students']} | {' | '.join(cells)} "
                         f"| {r['wall_s']:.0f} | {'held' if r['held'] else 'FAILED'} |")
    if len(lines) == 2:
        return "(none measured: bench/hub_course.py --save)"
    return "\n".join(lines)


def chapter_excess(runs: Mapping[int, dict[str, Any]], run: dict[str, Any]) -> float:
    """What one whole chapter run peaks at above its stack alone (>= 0)."""
    return max(0.0, run["peak_pss"] - runs[1]["peak_pss"])


def marginal_per_seat(runs: Mapping[int, dict[str, Any]], run: dict[str, Any]) -> float:
    """The stacks' marginal PSS plus the chapter's excess over its stack."""
    return marginal({int(n): r["peak_pss"] for n, r in runs.items()}) + chapter_excess(runs, run)


def stack_table(data: dict[str, Any]) -> str:
    """Each chapter's stack alone, every profile side by side; a chapter not measured
    whose stack is the same as one measured says so."""
    profiles = [p for p in PROFILES if p in data["stacks"]]
    measured: dict[str, dict[str, Any]] = {}
    for p in profiles:
        for r in data["stacks"][p]:
            measured.setdefault(r["chapter"], {})[p] = r
    head = "| chapter | brokers | Spark |" + "".join(
        f" {p}: peak PSS | {p}: start s (CPU s) |" for p in profiles)
    lines = [head, "|" + "---|" * (3 + 2 * len(profiles))]
    for ch, stack in stacks.STACKS.items():
        spark = "2 drivers" if stack.child_driver else ("yes" if stack.spark else "no")
        what = (f"{stack.brokers}" + (" + proxy" if stack.proxy else "")
                + (f" + {stack.connect_workers} Connect" if stack.connect_workers else "")
                + (" + services" if stack.services else ""))
        by = measured.get(ch)
        if by is None:
            twin = next((c for c in measured if stacks.STACKS.get(c) == stack), None)
            if twin is None:
                continue
            cells = f" same stack as {twin} |" + " |" * (2 * len(profiles) - 1)
        else:
            cells = "".join(f" {gb(by[p]['peak_pss'])} | {by[p]['start_wall_s']:.0f} "
                            f"({by[p]['start_cpu_s']:.0f}) |" if p in by else " - | - |"
                            for p in profiles)
        lines.append(f"| {ch} | {what} | {spark} |{cells}")
    return "\n".join(lines)


def _run_row(label: str, n: object, r: dict[str, Any]) -> str:
    per = r["per_student"].values()
    return (f"| {label} | {n} | {gb(r['peak_pss'])} | "
            + ", ".join(f"{gb(s['peak_pss'])} / {gb(s['peak_rss'])}" for s in per)
            + " | " + ", ".join(f"{s['cpu_s']:.0f}, {s['wall_s']:.0f}" for s in per)
            + f" | {sum(bool(s['passed']) for s in per)}/{len(r['per_student'])} |")


def class_table(data: dict[str, Any]) -> str:
    """Chapter 02's stack by 1, 2, 3 students at once and one whole chapter run, per
    profile, with the marginal PSS per additional student."""
    lines = ["| profile | students at once | peak PSS, all | each: peak PSS / RSS | "
             "each: CPU s, wall s | held |", "|---|---|---|---|---|---|"]
    for p in PROFILES:
        runs = data["class"].get(p, {})
        for n, r in sorted(runs.items()):
            lines.append(_run_row(p, f"{n} ({r.get('kind', 'stack')})", r))
        run = data["chapter"].get(p)
        if run is not None:
            lines.append(_run_row(p, "1 (whole chapter, papermill)", run))
        if len(runs) >= 2:
            m = marginal({int(n): r["peak_pss"] for n, r in runs.items()})
            text = f"{gb(m)} per additional student (stacks)"
            if run is not None and 1 in runs:
                text += (f"; + {gb(chapter_excess(runs, run))} the whole chapter adds = "
                         f"**{gb(marginal_per_seat(runs, run))} with chapter 02 running**")
            lines.append(f"| {p} | marginal | {text} | | | |")
    return "\n".join(lines)


def parts_table(data: dict[str, Any], chapter: str = "02_at_least_once") -> str:
    """Where one student's memory is, at the peak: PSS by part of the stack alone and
    of the whole chapter run, per profile."""
    cols: list[tuple[str, dict[str, int]]] = []
    for p in PROFILES:
        stack = next((r for r in data["stacks"].get(p, []) if r["chapter"] == chapter), None)
        if stack is not None and stack.get("parts"):
            cols.append((f"{p}: stack", stack["parts"]))
        run = data["chapter"].get(p)
        if run is not None and run.get("parts", {}).get("s1"):
            cols.append((f"{p}: whole chapter", run["parts"]["s1"]))
    if not cols:
        return "(no breakdown measured)"
    names = sorted({n for _, c in cols for n in c}, key=lambda n: -max(c.get(n, 0)
                                                                        for _, c in cols))
    lines = ["| part |" + "".join(f" {h} |" for h, _ in cols), "|---|" + "---|" * len(cols)]
    lines += [f"| {n} |" + "".join(f" {c[n] / GB:.2f} |" if n in c else " - |"
                                    for _, c in cols) for n in names]
    lines.append("| **total** |" + "".join(f" **{sum(c.values()) / GB:.2f}** |"
                                           for _, c in cols))
    return "\n".join(lines)


def report(data: dict[str, Any], cores: int, memory_gb: float,
           class_size: int | None = None) -> str:
    parts = ["### Each chapter's stack alone", "", stack_table(data), "",
             "### Chapter 02 by 1, 2, 3 students at once", "", class_table(data), "",
             "### One student's chapter 02 at its peak, PSS in GB by part", "",
             parts_table(data), "",
             "### Whole chapters through a hub, the largest student's peaks", "",
             chapters_table(data), ""]
    for p in PROFILES:
        try:
            fig = figures(data, p)
            f = fit(fig, cores, memory_gb, class_size)
        except LabError as exc:
            parts += [f"### Profile {p}: no fit yet", str(exc), ""]
            continue
        parts += [f"### Profile {p} on {cores} cores, {memory_gb:g} GB",
                  f"{f.students} students (memory allows {f.by_memory}, CPU {f.by_cpu}); "
                  f"memory limit set by {fig.limit_chapter}, memory per seat "
                  f"{gb(fig.marginal_pss)} set by {fig.seat_chapter}",
                  *(f"- {n}" for n in f.notes), "", "```python", hub_settings(f), "```", ""]
    return "\n".join(parts)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m deliverylab.classroom.sizing.plan",
                                description="Measure student stacks; size a classroom.")
    p.add_argument("--out", type=Path, default=Path("results/classroom-plan"),
                   help="where measurements are saved and read")
    p.add_argument("--profile", action="append", choices=list(PROFILES),
                   help="profiles to measure (default: all)")
    p.add_argument("--stacks", nargs="*", default=None,
                   help="measure these chapters' stacks alone ('all': every chapter)")
    p.add_argument("--students", type=int, nargs="*", default=None,
                   help="measure chapter 02's stack run by this many students at once "
                        "(e.g. 1 2 3)")
    p.add_argument("--kind", choices=("stack", "chapter"), default="stack",
                   help="--students run the stack alone (default) or the whole chapter")
    p.add_argument("--chapter-run", action="store_true",
                   help="measure one student's whole chapter 02 (papermill)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    p.add_argument("--memory", type=float, default=None,
                   help="host memory in GB (default: this machine's)")
    p.add_argument("--class-size", type=int, default=None)
    p.add_argument("--record", type=Path, default=None, metavar="PATH",
                   help=f"write the fit's inputs of every profile measured in --out to "
                        f"PATH (the checked-in record: {RECORD.name} beside plan.py)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    profiles = args.profile or list(PROFILES)
    failed = 0
    args.out.mkdir(parents=True, exist_ok=True)
    logs = args.out / "logs"
    for profile in profiles:
        if args.stacks is not None:
            chosen = list(stacks.STACKS) if args.stacks in ([], ["all"]) else args.stacks
            path = args.out / f"stacks-{profile}.json"
            rows = {r["chapter"]: r for r in (json.loads(path.read_text())
                                               if path.exists() else [])}
            for ch in chosen:
                try:
                    row = measure_stack(ch, profile, logs)
                except LabError as exc:  # the next chapter's stack is still worth measuring
                    print(f"{profile} {ch}: FAILED {exc}", flush=True)
                    failed += 1
                    continue
                print(f"{profile} {row['chapter']}: peak PSS {gb(row['peak_pss'])}, RSS "
                      f"{gb(row['peak_rss'])}, start {row['start_wall_s']} s "
                      f"({row['start_cpu_s']} CPU s)", flush=True)
                rows[row["chapter"]] = row
                path.write_text(json.dumps(sorted(rows.values(), key=lambda r: r["chapter"]),
                                           indent=1))
        if args.chapter_run:
            r = measure_class("02", 1, profile, logs, kind="chapter")
            (args.out / f"chapter-{profile}.json").write_text(json.dumps(r, indent=1))
            s1 = r["per_student"]["s1"]
            print(f"{profile} chapter 02: peak PSS {gb(r['peak_pss'])}, RSS "
                  f"{gb(r['peak_rss'])}, {s1['cpu_s']} CPU s in {s1['wall_s']} s; "
                  f"{'held' if s1['passed'] else 'FAILED ' + str(s1['error'])}", flush=True)
        for n in args.students or []:
            r = measure_class("02", n, profile, logs, kind=args.kind)
            (args.out / f"class-{profile}-{n}.json").write_text(json.dumps(r, indent=1))
            print(f"{profile} x{n}: peak PSS {gb(r['peak_pss'])}; "
                  + ", ".join(f"{k} {'held' if s['passed'] else 'FAILED ' + str(s['error'])}"
                              for k, s in r["per_student"].items()), flush=True)
    memory = args.memory or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GB
    data = load(args.out)
    if args.record is not None:
        figs = [figures(data, p) for p in PROFILES if p in data["class"]]
        if not figs:
            print(f"--record: no profile has the fit's inputs in {args.out}", file=sys.stderr)
            return 1
        source = f"make classroom-plan, {args.out}, {os.uname().nodename}"
        args.record.write_text(record_text(figs, read_record()["one_student"], source))
        print(f"recorded {', '.join(f.profile for f in figs)} in {args.record}")
    if not data["class"] and not data["stacks"]:
        print(f"no class runs measured in {args.out}: the fit from the recorded figures "
              f"({RECORD.name}); measure this host with `make classroom-plan`",
              file=sys.stderr)
        if args.stacks is not None:
            return 0
        for p in read_record()["profiles"]:
            f = fit(recorded(p), args.cores, round(memory, 1), args.class_size)
            print(f"### Profile {p} (recorded) on {args.cores} cores, {memory:.1f} GB\n"
                  f"{f.students} students (memory allows {f.by_memory}, CPU {f.by_cpu})\n"
                  + "".join(f"- {n}\n" for n in f.notes)
                  + f"```python\n{hub_settings(f)}\n```\n")
        return 0
    print(report(data, args.cores, round(memory, 1), args.class_size))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
