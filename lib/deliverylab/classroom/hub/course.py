"""A course through a real JupyterHub, chapter after chapter for each student: the
parts of ``bench/hub_course.py`` that judge, measure and tabulate, kept apart from the
hub so that they are tested on hand-written inputs.

The benchmark runs chapters in a kernel of each student's server, as the three-student
test does (:mod:`.client`), with the parameters the chapter test passes
(:func:`chapter_parameters`). Per student per chapter it keeps: the verdict read from
the results file the chapter wrote (:func:`chapter_run`, the same rule as ``make
course``), the wall time, the student's cgroup peak (``memory.max_usage_in_bytes``,
reset before each chapter: page cache included, and a shared page charged to the
student who touched it first) and the peak PSS and RSS summed over every process of the
student's uid, sampled (``measure.total_memory`` of ``users.processes_of``;
:func:`window_peak`): PSS counts a page
shared by k processes 1/k in each, which is what ``make classroom-plan``'s figures are.
``--save`` keeps each chapter's largest per-student peaks (:func:`chapter_peaks`) in a
file ``make classroom-plan`` reads (:func:`save_peaks`, :func:`parse_peaks`), so that
its memory limit and seats cover the heaviest chapter, not chapter 02 alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import LabError, bad_value
from ..course import run as course
from ..sizing import stacks
from ..sizing.measure import Memory, Sample

MIB = 2**20

#: A chapter whose claim is a throughput ratio (CI runs it alone, ``solo``): beside
#: other students' load its ratios measure the host, not the guarantee.
RATIO_CHAPTERS = ("08_cost_of_guarantees",)


def chapter_parameters(chapter: str) -> dict[str, Any]:
    """What the chapter test passes (the course's headless schedule and small sizes,
    local JVMs, a graded chapter's reference solution), results where the chapter
    writes them by default: ``results/<chapter>.json`` beside the notebook, which is
    where the instructor's view reads them."""
    params = course.parameters(chapter, small=True,
                               results_path=Path("results") / f"{chapter}.json")
    return {**params, **stacks.reference_extra(chapter)}


def select_chapters(wanted: Sequence[str], labs: Path | None = None) -> list[str]:
    """The chapters asked for (``00 02``, or names), in the order given: a student runs
    them in that order. Raises one line for a chapter that is not one, or twice."""
    available = course.discover(labs or course.default_labs())
    chosen = [course.select(available, [w])[0] for w in wanted]
    for chapter in chosen:
        if chosen.count(chapter) > 1:
            raise bad_value("--chapters", " ".join(wanted), f"each chapter once "
                            f"({chapter} is asked for {chosen.count(chapter)} times)")
    if not chosen:
        raise bad_value("--chapters", "", "one chapter number or more, e.g. 00 02")
    return chosen


def results_file(chapter: str) -> str:
    """The results file's path in the student's server (the course sits in ``labs/``)."""
    return f"labs/results/{chapter}.json"


def chapter_run(chapter: str, wall: float, text: str | None, error: str | None
                ) -> course.ChapterRun:
    """The verdict of one chapter run in a student's kernel: ``text`` is its results
    file (None if it wrote none), ``error`` the first line of what a cell raised. The
    rule is ``make course``'s: the notebook ran to the end *and* the file says the claim
    held, for this chapter."""
    results = None
    if text is not None:
        try:
            results = json.loads(text)
        except ValueError as exc:
            error = error or f"unreadable results file: {exc}"
        else:
            if not isinstance(results, dict) or results.get("chapter") != chapter:
                error = error or (f"the results file is not {chapter}'s: "
                                  f"{str(results)[:80]}")
                results = None
    elif error is None:
        error = f"the notebook wrote no results file ({results_file(chapter)})"
    return course.ChapterRun(chapter, error is None, wall, results, error)


def read_results(read: Callable[[str], str | None], path: str
                 ) -> tuple[str | None, str | None]:
    """The results file at ``path`` through ``read`` (``Student.file_text``: None if
    there is none) and, if reading it failed, why in one line: a student whose file
    cannot be read is reported with that reason, not dropped from the class's table."""
    try:
        return read(path), None
    except Exception as exc:  # the hub, the network, a bad model: reported in the row
        return None, f"could not read {path}: {first_line(exc)}"


def never_ran(student: str, chapters: Sequence[str], error: str) -> list[StudentChapter]:
    """Rows for a student whose chapters never ran (their login, server or kernel
    failed first): each chapter FAILED with ``error``, so the table still lists them."""
    return [StudentChapter(student, course.ChapterRun(c, False, 0.0, None, error))
            for c in chapters]


def first_line(exc: BaseException, width: int = 200) -> str:
    """An exception in one line: a cell's ``name: ename: evalue``, clipped."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0] if lines else ''}"
    return text if len(text) <= width else text[: width - 3] + "..."


# --- memory ------------------------------------------------------------------------------


def window_peak(samples: Sequence[Sample], label: str, start: float, end: float
                ) -> Memory | None:
    """``label``'s peak PSS and peak RSS over the samples taken in ``[start, end]``
    (seconds on the sampler's clock); None if none was taken then."""
    seen = [s.stacks[label] for s in samples if start <= s.t <= end and label in s.stacks]
    if not seen:
        return None
    return Memory(pss=max(m.pss for m in seen), rss=max(m.rss for m in seen))


def overlap(windows: Sequence[tuple[float, float]]) -> tuple[float, float] | None:
    """When every window was open at once (the students all in the same chapter), or
    None if they never were."""
    if not windows:
        return None
    start, end = max(w[0] for w in windows), min(w[1] for w in windows)
    return (start, end) if start <= end else None


def class_peak(samples: Sequence[Sample], start: float, end: float) -> Memory | None:
    """The class's peak PSS summed over every student at one instant in ``[start,
    end]`` (and the RSS sum of that instant); None if no sample was taken then."""
    seen = [s.total for s in samples if start <= s.t <= end]
    return max(seen, key=lambda m: m.pss) if seen else None


# --- the tables ----------------------------------------------------------------------------


@dataclass
class StudentChapter:
    """One chapter in one student's server: its verdict and what it cost."""

    student: str
    run: course.ChapterRun
    cgroup_peak: int | None = None  # bytes, page cache included
    memory: Memory | None = None  # sampled peak PSS and RSS of the student's processes
    #: processes of the student (besides the server) left after the kernel's shutdown
    left: list[str] = field(default_factory=list)
    #: what the cgroup held when the chapter began (the last chapter's page cache)
    cgroup_start: int | None = None

    @property
    def held(self) -> bool:
        return self.run.passed

    @property
    def note(self) -> str:
        why = []
        if not self.run.passed:
            res = self.run.results or {}
            failed = [c["what"] for c in res.get("checks", []) if not c.get("pass")]
            why.append(self.run.error or "; ".join(failed) or "claim did not hold")
        if self.left:
            why.append(f"left {len(self.left)} processes: {', '.join(self.left[:4])}")
        return " | ".join(why)


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / MIB:.0f}"


def summary_table(rows: Sequence[StudentChapter]) -> str:
    """One line per student per chapter: verdict, wall and chapter seconds, peaks."""
    heads = ("student", "chapter", "claim", "wall s", "own s", "cgroup start MiB",
             "cgroup peak MiB", "PSS peak MiB", "RSS peak MiB")
    body = []
    for r in rows:
        own = (r.run.results or {}).get("seconds")
        body.append((r.student, r.run.chapter, "held" if r.held else "FAILED",
                     f"{r.run.wall_seconds:.0f}",
                     f"{own:.0f}" if isinstance(own, (int, float)) else "-",
                     mib(r.cgroup_start), mib(r.cgroup_peak),
                     mib(r.memory.pss if r.memory else None),
                     mib(r.memory.rss if r.memory else None), r.note))
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h)
              for i, h in enumerate(heads)]
    line = "  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))
    out = [line, "-" * len(line)]
    for *cells, note in body:
        text = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
        out.append((text + (f"  << {note}" if note else "")).rstrip())
    return "\n".join(out)


def _span(values: Sequence[float], fmt: str = "{:.0f}") -> str:
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}-{fmt.format(hi)}"


def chapter_summary(rows: Sequence[StudentChapter]) -> str:
    """Per chapter over the class: how many claims held, and the spread of the wall
    times and of each peak (MiB)."""
    out = []
    for chapter in dict.fromkeys(r.run.chapter for r in rows):
        mine = [r for r in rows if r.run.chapter == chapter]
        held = sum(r.held for r in mine)
        out.append(
            f"{chapter}: held for {held}/{len(mine)} students; wall "
            f"{_span([r.run.wall_seconds for r in mine])} s; cgroup peak "
            f"{_span([r.cgroup_peak / MIB for r in mine if r.cgroup_peak is not None])} "
            f"MiB; PSS peak {_span([r.memory.pss / MIB for r in mine if r.memory])} MiB; "
            f"RSS peak {_span([r.memory.rss / MIB for r in mine if r.memory])} MiB")
    return "\n".join(out)


# --- what make classroom-plan reads ----------------------------------------------------------

#: The fields of a saved chapter row (bytes, seconds; a peak not sampled is null).
PEAK_FIELDS = ("chapter", "students", "peak_pss", "peak_rss", "cgroup_peak", "wall_s", "held")


def peaks_path(folder: Path, profile: str) -> Path:
    """Where ``--save`` writes a profile's chapter rows, and where ``plan.load`` reads them."""
    return Path(folder) / f"chapters-{profile}.json"


def chapter_peaks(rows: Sequence[StudentChapter], students: int) -> list[dict[str, Any]]:
    """One row per chapter for ``make classroom-plan``: the largest per-student peaks and
    wall time over the class (a seat and a memory limit must hold the heaviest student),
    held only if the claim held for every student. ``students``: how many ran at once
    (a page shared between students counts 1/k in each one's PSS)."""
    out = []
    for chapter in dict.fromkeys(r.run.chapter for r in rows):
        mine = [r for r in rows if r.run.chapter == chapter]

        def largest(values: list[int | None]) -> int | None:
            seen = [v for v in values if v is not None]
            return max(seen) if seen else None

        out.append({
            "chapter": chapter, "students": students,
            "peak_pss": largest([r.memory.pss if r.memory else None for r in mine]),
            "peak_rss": largest([r.memory.rss if r.memory else None for r in mine]),
            "cgroup_peak": largest([r.cgroup_peak for r in mine]),
            "wall_s": round(max(r.run.wall_seconds for r in mine), 1),
            "held": all(r.held for r in mine)})
    return out


def merge_peaks(old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]
                ) -> list[dict[str, Any]]:
    """``old`` rows with ``new`` ones: a chapter measured again replaces its earlier row
    (the latest run is the one that matches the chapters as they are); by chapter."""
    rows = {r["chapter"]: r for r in old} | {r["chapter"]: r for r in new}
    return [rows[c] for c in sorted(rows)]


def parse_peaks(text: str, source: str) -> list[dict[str, Any]]:
    """Saved chapter rows, checked: anything else is one ``LabError`` naming ``source``
    (a sizing from a half-written file would be wrong without a word)."""
    def bad(why: str) -> LabError:
        return LabError(f"{source}: {why}; expected a JSON list of rows with "
                        f"{', '.join(PEAK_FIELDS)} (bench/hub_course.py --save)")
    try:
        rows = json.loads(text)
    except ValueError as exc:
        raise bad(f"not JSON ({exc})") from exc
    if not isinstance(rows, list):
        raise bad(f"not a list but {type(rows).__name__}")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise bad(f"row {i} is not an object")
        if missing := [f for f in PEAK_FIELDS if f not in row]:
            raise bad(f"row {i} lacks {', '.join(missing)}")
        if not isinstance(row["chapter"], str) or not isinstance(row["held"], bool):
            raise bad(f"row {i}: chapter={row['chapter']!r}, held={row['held']!r}")
        for key in ("peak_pss", "peak_rss", "cgroup_peak", "wall_s"):
            value = row[key]
            if value is not None and (isinstance(value, bool)
                                      or not isinstance(value, (int, float)) or value < 0):
                raise bad(f"row {i} ({row['chapter']}): {key}={value!r}")
        if not isinstance(row["students"], int) or row["students"] < 1:
            raise bad(f"row {i} ({row['chapter']}): students={row['students']!r}")
    return rows


def save_peaks(folder: Path, profile: str, rows: Sequence[dict[str, Any]]) -> Path:
    """Merge ``rows`` into the profile's file in ``folder`` (created if need be)."""
    path = peaks_path(folder, profile)
    old = parse_peaks(path.read_text(), str(path)) if path.exists() else []
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merge_peaks(old, rows), indent=1) + "\n")
    return path
