"""The instructor's live dashboard page: one row per student and graded chapter, and the
class's fault cells, crash points and predictions that caught the most students.

What the hub's dashboard service (:mod:`deliverylab.classroom.hub.dashboard`) serves
while the class works, re-collected on every refresh. It renders the rows
:func:`~deliverylab.classroom.instructor.view.add_student` reads and counts the class with
the instructor view's own Python counters (:func:`~.instructor.prediction_counts`,
:func:`~.grades.point_counts`): one reading of the files and one counting path
for the page, the notebook view and the dashboard. The Spark tables of
:func:`~.instructor.tables` are not used here: a JVM per class beside the students'
(on a 2-core host) for a page that refreshes every few seconds is a price this page does
not need, as its class tables are a few rows per student.

Pure: no hub, no files; unit-tested on hand-written results.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass
from typing import Any

from .grades import point_counts
from .view import Collected, prediction_counts

#: Seconds between the page's own reloads (a meta refresh: no script needed).
REFRESH_S = 5


@dataclass
class StudentState:
    """What the hub says of one student's server and what their memory cgroup holds."""

    name: str
    server: str  # "running", "starting", "stopped", or why it is not known
    memory_bytes: int | None = None
    cap_bytes: int | None = None
    #: Why memory is not shown ("not measured: ..."), when ``memory_bytes`` is None.
    memory_note: str = ""


def _number(chapter: str) -> str:
    """``02_at_least_once`` and a grade file's exercise ``02`` name the same chapter."""
    return chapter.split("_", 1)[0]


def memory_text(state: StudentState) -> str:
    """``812 MiB of 3072 MiB (26%)``, or the note saying why it is not measured."""
    if state.memory_bytes is None:
        return state.memory_note or "not measured"
    used = f"{state.memory_bytes // 2**20} MiB"
    if not state.cap_bytes:
        return f"{used} (no cap)"
    return (f"{used} of {state.cap_bytes // 2**20} MiB "
            f"({100 * state.memory_bytes / state.cap_bytes:.0f}%)")


def student_rows(collected: Collected) -> list[dict[str, Any]]:
    """One row per student and chapter result: the claim, the predictions (right of
    made, and the wrong ones), the grade cells and crash points that caught them."""
    out = []
    chapters = list(collected.chapters)
    ran = {(c["student"], _number(c["chapter"])) for c in chapters}
    for c in collected.cells:  # graded, chapter not run (or its file unreadable): a row
        if (c["student"], _number(c["exercise"])) not in ran:
            ran.add((c["student"], _number(c["exercise"])))
            chapters.append({"student": c["student"], "chapter": c["exercise"],
                             "held": None, "checks_held": 0, "checks": 0,
                             "grade_passed": None, "grade_failed": None, "mtime": 0.0})
    for ch in chapters:
        student, number = ch["student"], _number(ch["chapter"])
        made = [p for p in collected.predictions
                if p["student"] == student and p["chapter"] == ch["chapter"]]
        cells = [c for c in collected.cells
                 if c["student"] == student and _number(c["exercise"]) == number]
        caught = [f"{c['fault']} x {c['property']}" for c in cells if c["caught"]]
        if not cells and ch["grade_failed"] is not None:  # the chapter's own grade cells
            caught = [f"{ch['grade_failed']} of "
                      f"{ch['grade_failed'] + (ch['grade_passed'] or 0)} cells"] \
                if ch["grade_failed"] else []
        points = sorted({p["point"] or "(no crash point)" for p in collected.points
                         if p["student"] == student and _number(p["exercise"]) == number
                         and p["failed"]})
        out.append({
            "student": student, "chapter": ch["chapter"],
            "claim": "held" if ch["held"] else "graded, chapter not run" if ch["held"] is None
            else f"FAILED {ch['checks_held']}/{ch['checks']}",
            "predictions": (f"{sum(p['right'] for p in made)} of {len(made)} right"
                            + "".join(f"; missed {p['prediction']} ({p['predicted']})"
                                      for p in made if not p["right"])) if made else "",
            "graded": (f"{len(cells) - len(caught)} of {len(cells)} cells passed"
                       if cells else ""),
            "caught": ", ".join(caught), "crash_points": ", ".join(points),
            "mtime": ch.get("mtime", 0.0)})
    return out


def current_chapter(rows: list[dict[str, Any]], student: str) -> str:
    """The chapter a student is in: the one whose results they wrote last."""
    mine = [r for r in rows if r["student"] == student]
    return max(mine, key=lambda r: r["mtime"])["chapter"] if mine else ""


def catching_points(collected: Collected) -> Any:
    """The fault cells and crash points that failed the most students' runs first."""
    table = point_counts(collected.points)
    table = table[table["students_failed"] > 0]
    return table.sort_values("students_failed", ascending=False, kind="stable")


def missed_predictions(collected: Collected) -> Any:
    """Per chapter and prediction: how many students predicted wrong, most first."""
    table = prediction_counts(collected)
    if not len(table):
        return table
    table = table.assign(wrong=table["students"] - table["right"])
    table = (table.groupby(["chapter", "prediction"], as_index=False)
             .agg(students=("students", "sum"), wrong=("wrong", "sum")))
    table = table[table["wrong"] > 0]
    return table.sort_values("wrong", ascending=False, kind="stable")


def _cell(value: Any, cls: str = "") -> str:
    attr = f" class='{cls}'" if cls else ""
    return f"<td{attr}>{html.escape(str(value))}</td>"


def _table(frame: Any, columns: list[str], empty: str, table_id: str) -> str:
    if frame is None or not len(frame):
        return f"<p id='{table_id}'><i>{html.escape(empty)}</i></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(r[c]) for c in columns) + "</tr>"
                   for r in frame.to_dict("records"))
    return f"<table id='{table_id}'><tr>{head}</tr>{body}</table>"


def page(collected: Collected, states: list[StudentState], refresh_s: int = REFRESH_S,
         now: float | None = None) -> str:
    """The dashboard as one HTML page that reloads itself every ``refresh_s`` seconds.

    The students' table has one ``<tr data-student data-chapter>`` per student and
    chapter (``data-chapter=''`` for a student with nothing run yet)."""
    rows = student_rows(collected)
    stamp = time.strftime("%H:%M:%S", time.localtime(now))
    body = []
    for st in states:
        mine = [r for r in rows if r["student"] == st.name] or [
            {"chapter": "", "claim": "nothing run yet", "predictions": "", "graded": "",
             "caught": "", "crash_points": ""}]
        where = current_chapter(rows, st.name)
        for r in mine:
            cls = "held" if r["claim"] == "held" else (
                "failed" if r["claim"].startswith("FAILED") else "idle")
            body.append(
                f"<tr data-student='{html.escape(st.name)}' "
                f"data-chapter='{html.escape(r['chapter'])}'>"
                + _cell(st.name) + _cell(st.server) + _cell(where) + _cell(r["chapter"])
                + _cell(r["claim"], cls) + _cell(r["predictions"]) + _cell(r["graded"])
                + _cell(r["caught"]) + _cell(r["crash_points"])
                + _cell(memory_text(st), "memory") + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in (
        "student", "server", "in chapter", "chapter", "claim", "predictions",
        "graded", "cells that caught them", "crash points that failed", "memory"))
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in collected.problems)
    return "\n".join([
        "<!doctype html><meta charset='utf-8'>",
        f"<meta http-equiv='refresh' content='{int(refresh_s)}'>",
        "<title>The class, live</title>",
        "<style>body{font-family:sans-serif;margin:2em} table{border-collapse:collapse}"
        " td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}"
        " .held{color:#2ca02c} .failed{color:#d62728;font-weight:bold}</style>",
        f"<h1>The class, live: {len(states)} students</h1>",
        f"<p id='updated'>Collected at {stamp}; this page reloads every "
        f"{int(refresh_s)} s.</p>",
        f"<table id='students'><tr>{head}</tr>{''.join(body)}</table>",
        "<h2>Fault cells and crash points that caught the most students</h2>",
        _table(catching_points(collected), ["exercise", "fault", "property", "point",
                                            "crash", "students_failed", "students", "who"],
               "no graded run has failed yet", "catching"),
        "<h2>Predictions that caught the most students</h2>",
        _table(missed_predictions(collected), ["chapter", "prediction", "wrong",
                                               "students"],
               "no prediction missed yet", "missed"),
        f"<h2>Could not read ({len(collected.problems)})</h2><ul>{problems}</ul>"
        if problems else ""])
