"""The instructor's view: every student's progress, read from the files the chapters write.

``python -m deliverylab.classroom.instructor /home/*`` (or ``class_view(homes)`` in a
notebook) takes **student home folders** and writes one page: which chapters each
student ran, which claims held, the graded exercises' pass counts; a class roll-up of
the checks and the grader's fault cells that catch the most students; and a picture of
the class; per chapter and prediction, what the students predicted and how many were
right; and, per exercise, fault cell and crash point, how many students' runs failed
there -- the questions the class should discuss. Spark does the counting (a DataFrame
over the results); the predictions and crash points, a few rows per student, are
counted in Python (:func:`prediction_counts`,
:func:`~deliverylab.classroom.instructor.grades.point_counts`).

Where each student's results are, relative to the student's home folder ``HOME``:

- **chapter results**: ``HOME/labs/results/*.json`` and ``HOME/results/*.json``. A
  chapter writes ``results_path`` (default ``results/NN_<name>.json``, e.g.
  ``results/02_at_least_once.json``) relative to the kernel's working folder, which is
  the notebook's folder: ``HOME/labs`` when the course sits in ``labs/`` of the home
  folder (as ``make classroom`` lays it out), ``HOME`` when the notebooks sit at its
  top. Shape (:meth:`deliverylab.notebook.chapter.Chapter.to_dict`): ``{"chapter",
  "claim", "observed", "checks": [{"what", "pass"}], "predictions", "pass",
  "seconds"}``; a graded chapter also observes ``grade_passed`` / ``grade_failed``
  (cells of its grade). ``predictions`` (optional) lists each revealed prediction
  (:meth:`deliverylab.notebook.predict.Reveal.to_dict`): ``{"name", "question",
  "kind", "predicted", "actual", "right", ...}``.
- **grade results**: any ``*.json`` below those ``results`` folders (e.g.
  ``results/grades/02.json``, written by ``python -m deliverylab.grade 02 --json
  results/grades/02.json`` or ``dl.grade("02", out=...)``). Shape
  (:meth:`deliverylab.grade.report.Report.to_dict`): ``{"exercise", "cells": [{"fault",
  "property", "passed", "runs", "failing_seeds", "points"}], "passed", "failed", ...}``;
  ``points`` (each run's crash point and whether it failed) is read by
  :mod:`~deliverylab.classroom.instructor.grades`; a file without it shows its cells only.

A file is told apart by its content, not its name. A file that is not JSON, or claims
to be a chapter or grade result without that shape, is named in one line of the page's
"could not read" list; other JSON (``09_matrix.json``) is named as skipped. A student
whose folder holds no results is listed as "nothing run yet".
"""

from __future__ import annotations

import argparse
import base64
import html
import io
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import bad_value
from .grades import grade_rows, point_counts

#: Where the results folders are, relative to a student's home folder (see above).
RESULT_DIRS = ("labs/results", "results")


@dataclass
class Collected:
    """Every student's results, flattened into rows, and what could not be read."""

    students: list[str] = field(default_factory=list)
    #: one row per (student, chapter): ran, held, checks held / checks, grade counts.
    chapters: list[dict[str, Any]] = field(default_factory=list)
    #: one row per (student, chapter, check).
    checks: list[dict[str, Any]] = field(default_factory=list)
    #: one row per (student, exercise, fault, property).
    cells: list[dict[str, Any]] = field(default_factory=list)
    #: one row per (student, exercise, fault, property, run): its crash point, if it failed.
    points: list[dict[str, Any]] = field(default_factory=list)
    #: one row per (student, chapter, prediction): what was predicted, and if it was right.
    predictions: list[dict[str, Any]] = field(default_factory=list)
    #: one line per file that could not be read, naming it and why.
    problems: list[str] = field(default_factory=list)
    #: JSON files that are neither chapter nor grade results.
    skipped: list[str] = field(default_factory=list)


def student_name(home: Path, prefix: str = "") -> str:
    """The student's name: the home folder's name without the hub's user prefix
    (``make classroom`` names student ana's home ``/home/dlab-ana``)."""
    return home.name.removeprefix(prefix) if prefix else home.name


def result_files(home: Path) -> list[Path]:
    """Every ``*.json`` below the student's results folders (:data:`RESULT_DIRS`)."""
    files: list[Path] = []
    for rel in RESULT_DIRS:
        folder = home / rel
        if folder.is_dir():
            files += sorted(p for p in folder.rglob("*.json") if p.is_file())
    return files


def predicted_text(value: Any) -> str:
    """A prediction as one table cell: a set's items joined, ``(none)`` for an empty one."""
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "(none)"
    return str(value)


def _prediction_rows(student: str, chapter: str, data: dict[str, Any]) -> list[dict]:
    found = data.get("predictions", [])
    if not isinstance(found, list) or not all(
            isinstance(p, dict) and isinstance(p.get("name"), str)
            and isinstance(p.get("right"), bool) and "predicted" in p for p in found):
        raise ValueError("'predictions' that are not a list of {'name', 'predicted', "
                         "'right'}")
    return [{"student": student, "chapter": chapter, "prediction": p["name"],
             "question": str(p.get("question", "")), "predicted": predicted_text(p["predicted"]),
             "right": p["right"]} for p in found]


def _chapter_rows(student: str, data: dict[str, Any], where: str) -> tuple[dict, list[dict]]:
    checks = data.get("checks")
    if not isinstance(data.get("chapter"), str) or not isinstance(checks, list) or not all(
            isinstance(c, dict) and isinstance(c.get("what"), str)
            and isinstance(c.get("pass"), bool) for c in checks):
        raise ValueError("a chapter result without a 'chapter' name and 'checks' of "
                         "{'what', 'pass'}")
    observed = data.get("observed") if isinstance(data.get("observed"), dict) else {}
    grade_passed, grade_failed = observed.get("grade_passed"), observed.get("grade_failed")
    row = {"student": student, "chapter": data["chapter"],
           "held": bool(data.get("pass")) and bool(checks) and all(c["pass"] for c in checks),
           "checks_held": sum(c["pass"] for c in checks), "checks": len(checks),
           "grade_passed": grade_passed if isinstance(grade_passed, int) else None,
           "grade_failed": grade_failed if isinstance(grade_failed, int) else None,
           "seconds": float(data["seconds"]) if isinstance(data.get("seconds"), (int, float))
           else None, "file": where}
    rows = [{"student": student, "chapter": data["chapter"], "check": c["what"],
             "held": c["pass"]} for c in checks]
    row["predictions"] = _prediction_rows(student, data["chapter"], data)
    return row, rows


@dataclass
class ResultFile:
    """One results file's text, wherever it was read from: a student's folder on this
    host (:func:`collect`) or their server's contents API (the hub's dashboard,
    :mod:`deliverylab.classroom.hub.dashboard`, which cannot read the folders)."""

    where: str  # named in the page's "could not read" and "skipped" lists
    text: str
    mtime: float  # the same chapter twice: the newest counts


def collect(homes: Iterable[str | Path], prefix: str = "") -> Collected:
    """Read every student's results (see the module doc for where and what shape);
    ``prefix`` is taken off the home folders' names to name the students."""
    out = Collected()
    seen: set[str] = set()
    for home in map(Path, homes):
        if not home.is_dir():
            out.problems.append(f"{home}: not a folder (expected a student's home folder)")
            continue
        student = student_name(home, prefix)
        if student in seen:
            out.problems.append(f"{home}: a second folder for student {student!r}, skipped")
            continue
        seen.add(student)
        files = []
        for path in result_files(home):
            try:
                files.append(ResultFile(str(path), path.read_text(), path.stat().st_mtime))
            except (OSError, UnicodeDecodeError) as exc:
                out.problems.append(f"{path}: not readable JSON ({str(exc)[:80]})")
        add_student(out, student, files)
    return out


def add_student(out: Collected, student: str, files: Iterable[ResultFile]) -> None:
    """Add one student's results files (read by the caller) to ``out``: the one reading
    of a file's shape that the page, the notebook view and the dashboard share."""
    out.students.append(student)
    latest: dict[str, tuple[float, dict, list[dict]]] = {}
    for f in files:
        try:
            data = json.loads(f.text)
        except ValueError as exc:
            out.problems.append(f"{f.where}: not readable JSON ({str(exc)[:80]})")
            continue
        try:
            if isinstance(data, dict) and ("chapter" in data or "checks" in data):
                row, rows = _chapter_rows(student, data, f.where)
                row["mtime"] = f.mtime
                # the same chapter in both folders: the newest run counts
                if row["chapter"] not in latest or latest[row["chapter"]][0] < f.mtime:
                    latest[row["chapter"]] = (f.mtime, row, rows)
            elif isinstance(data, dict) and ("exercise" in data or "cells" in data):
                cells, points = grade_rows(student, data)
                out.cells += cells
                out.points += points
            else:
                out.skipped.append(f.where)
        except ValueError as exc:
            out.problems.append(f"{f.where}: {exc}")
    for _, row, rows in sorted(latest.values(), key=lambda t: t[1]["chapter"]):
        out.predictions += row.pop("predictions")
        out.chapters.append(row)
        out.checks += rows


def prediction_counts(collected: Collected) -> Any:
    """Per chapter, prediction and predicted outcome: how many students predicted it and
    how many of them were right (pandas; a few rows per student, counted here).

    Rows of one prediction are together, its most common prediction first."""
    import pandas as pd

    columns = ["chapter", "prediction", "question", "predicted", "students", "right"]
    counts: dict[tuple[str, str, str, str], list[int]] = {}
    for r in collected.predictions:
        key = (r["chapter"], r["prediction"], r["question"], r["predicted"])
        tally = counts.setdefault(key, [0, 0])
        tally[0] += 1
        tally[1] += r["right"]
    rows = [[*key, n, right] for key, (n, right) in counts.items()]
    rows.sort(key=lambda r: (r[0], r[1], -r[4], r[3]))
    return pd.DataFrame(rows, columns=columns)


# --- counting with Spark -------------------------------------------------------------------


@dataclass
class ClassView:
    """The tables (pandas, counted by Spark) and what could not be read."""

    progress: Any  # student x chapter: "held" / "FAILED k/n" / "" (pandas)
    grades: Any  # student x exercise: passed / cells
    hardest_checks: Any  # check -> students for whom it did not hold
    catching_cells: Any  # (exercise, fault, property) -> students it caught
    collected: Collected
    #: (chapter, prediction, predicted) -> students, right (:func:`prediction_counts`)
    predictions: Any = None
    #: (exercise, fault, property, crash point) -> students whose runs failed there
    #: (:func:`~deliverylab.classroom.instructor.grades.point_counts`)
    crash_points: Any = None


def _frame(spark: Any, rows: list[dict[str, Any]], schema: str) -> Any:
    return spark.createDataFrame(rows, schema=schema)


def tables(collected: Collected, spark: Any = None) -> ClassView:
    """Count the class with Spark (the lab's session unless ``spark`` is given)."""
    import pandas as pd

    if spark is None:
        from ...spark.session import session

        spark = session()
    from pyspark.sql import functions as F

    chapters = _frame(spark, collected.chapters,
                      "student string, chapter string, held boolean, checks_held int, "
                      "checks int, grade_passed int, grade_failed int, seconds double, "
                      "file string, mtime double")
    checks = _frame(spark, collected.checks,
                    "student string, chapter string, check string, held boolean")
    cells = _frame(spark, collected.cells,
                   "student string, exercise string, fault string, property string, "
                   "passed int, runs int, caught boolean")
    mark = (F.when(F.col("held"), F.lit("held"))
            .otherwise(F.concat(F.lit("FAILED "), F.col("checks_held").cast("string"),
                                F.lit("/"), F.col("checks").cast("string"))))
    progress = chapters.select("student", "chapter", mark.alias("mark")).toPandas()
    table = (progress.pivot(index="student", columns="chapter", values="mark")
             if len(progress) else pd.DataFrame())
    table = table.reindex(index=collected.students).fillna("")
    grades = (cells.groupBy("student", "exercise")
              .agg(F.sum(F.when(F.col("caught"), 0).otherwise(1)).alias("cells_passed"),
                   F.count("*").alias("cells"))
              .orderBy("student", "exercise").toPandas())
    from_chapters = (chapters.where(F.col("grade_passed").isNotNull())
                     .select("student", "chapter", "grade_passed", "grade_failed")
                     .orderBy("student", "chapter").toPandas())
    if len(from_chapters):
        grades = pd.concat([grades, from_chapters.rename(columns={"chapter": "exercise"})
                            .assign(cells_passed=lambda d: d.grade_passed,
                                    cells=lambda d: d.grade_passed + d.grade_failed)
                            [["student", "exercise", "cells_passed", "cells"]]],
                           ignore_index=True).drop_duplicates(["student", "exercise"])
    hardest = (checks.where(~F.col("held")).groupBy("chapter", "check")
               .agg(F.countDistinct("student").alias("students"),
                    F.sort_array(F.collect_set("student")).alias("who"))
               .orderBy(F.desc("students"), "chapter", "check").toPandas())
    catching = (cells.where(F.col("caught")).groupBy("exercise", "fault", "property")
                .agg(F.countDistinct("student").alias("students"),
                     F.sort_array(F.collect_set("student")).alias("who"))
                .orderBy(F.desc("students"), "exercise", "fault", "property").toPandas())
    return ClassView(table, grades, hardest, catching, collected,
                     prediction_counts(collected), point_counts(collected.points))


def plot(view: ClassView, save: str | Path | None = None) -> Any:
    """The class at a glance: a student x chapter grid (green held, red failed, grey not
    run) beside the grader's fault cells that catch the most students."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    table = view.progress
    students, chapters = list(table.index), list(table.columns)
    code = [[0 if not table.at[s, c] else (2 if table.at[s, c] == "held" else 1)
             for c in chapters] for s in students]
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(12, max(3.0, 0.35 * len(students) + 1.5)),
        gridspec_kw={"width_ratios": [max(len(chapters), 1), 6]})
    if students and chapters:
        left.imshow(code, cmap=ListedColormap(["#dddddd", "#d62728", "#2ca02c"]),
                    vmin=0, vmax=2, aspect="auto")
        left.set_xticks(range(len(chapters)), [c.split("_", 1)[0] for c in chapters])
        left.set_yticks(range(len(students)), students)
    left.set_title("chapters: green held, red failed, grey not run")
    top = view.catching_cells.head(10)
    if len(top):
        labels = [f"{r.exercise} {r.fault} x {r.property}" for r in top.itertuples()]
        right.barh(labels[::-1], list(top["students"])[::-1], color="#d62728")
        right.set_xlabel("students caught")
    else:
        right.text(0.5, 0.5, "no grade results yet", ha="center", va="center")
        right.set_axis_off()
    right.set_title("fault cells that catch the most students")
    fig.tight_layout()
    if save is not None:
        fig.savefig(save, dpi=90)
        plt.close(fig)
    return fig


def _html_table(frame: Any, empty: str) -> str:
    if frame is None or len(frame) == 0:
        return f"<p><i>{html.escape(empty)}</i></p>"
    return frame.to_html(escape=True, border=0, index=frame.index.name is not None)


def page(view: ClassView) -> str:
    """The view as one HTML page (the plot inline), for a browser or the hub."""
    buf = io.BytesIO()
    plot(view, save=buf)
    png = base64.b64encode(buf.getvalue()).decode()
    c = view.collected
    idle = [s for s in c.students if s not in {r["student"] for r in c.chapters}]
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in c.problems)
    skipped = ", ".join(html.escape(s) for s in c.skipped)
    return "\n".join([
        "<!doctype html><meta charset='utf-8'><title>The class</title>",
        "<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse}"
        " td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style>",
        f"<h1>The class: {len(c.students)} students</h1>",
        f"<img alt='the class at a glance' src='data:image/png;base64,{png}'>",
        "<h2>Which chapters each student ran, and whether the claims held</h2>",
        _html_table(view.progress, "no student has run a chapter yet"),
        f"<p>Nothing run yet: {html.escape(', '.join(idle)) or 'nobody'}</p>",
        "<h2>Graded exercises: cells passed</h2>",
        _html_table(view.grades, "no graded exercise yet"),
        "<h2>Predictions: what the class predicted, and how many were right</h2>",
        _html_table(view.predictions, "no prediction revealed yet"),
        "<h2>Fault cells that catch the most students</h2>",
        _html_table(view.catching_cells, "no grade result has a failing cell"),
        "<h2>Graded code: where the crash landed, and how many students' runs failed "
        "there</h2>",
        _html_table(view.crash_points, "no grade result yet"),
        "<h2>Checks that did not hold, by students</h2>",
        _html_table(view.hardest_checks, "every check held for every student who ran it"),
        f"<h2>Could not read ({len(c.problems)})</h2><ul>{problems}</ul>" if problems
        else "", f"<p>Other JSON skipped: {skipped}</p>" if skipped else ""])


def class_view(homes: Iterable[str | Path], prefix: str = "", spark: Any = None
               ) -> ClassView:
    """In a notebook: collect, count, say what could not be read, draw the plot.

    ``class_view(glob.glob("/home/dlab-*"), prefix="dlab-")`` for ``make classroom``."""
    collected = collect(homes, prefix)
    for line in collected.problems:
        print(f"could not read: {line}")
    view = tables(collected, spark)
    plot(view)
    return view


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m deliverylab.classroom.instructor",
                                description="The class's progress as one HTML page.")
    p.add_argument("homes", nargs="+", type=Path, help="the students' home folders")
    p.add_argument("--prefix", default="", help="taken off the home folders' names "
                   "(make classroom: dlab-)")
    p.add_argument("--out", type=Path, default=Path("results/instructor/index.html"))
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.out.suffix != ".html":
        raise bad_value("--out", str(args.out), "a path ending in .html")
    collected = collect(args.homes, args.prefix)
    for line in collected.problems:
        print(f"could not read: {line}", file=sys.stderr)
    view = tables(collected)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(page(view))
    print(f"{len(collected.students)} students, {len(collected.chapters)} chapter results, "
          f"{len(collected.problems)} unreadable: {args.out}")
    return 0

